"""Serve a real API server (``KUBEBUILDER_ASSETS``) for the benchmark driver, until SIGTERM.

``python -m bench.realserver_env --crds FILE --kubeconfig-out PATH``: the same contract as
``python -m pyctrl.envtest`` (which always runs the embedded server): install the CRDs,
write the kubeconfig, print its path, serve until SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal

from pyctrl.envtest import Environment


async def _serve(crds: str, kubeconfig_out: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    assets = os.environ["KUBEBUILDER_ASSETS"]
    async with Environment(mode="binaries", binary_assets_directory=assets, crds=[crds]) as env:
        shutil.copyfile(env.kubeconfig_path, kubeconfig_out)
        print(f"kubeconfig: {kubeconfig_out}", flush=True)
        await stop.wait()


def main() -> None:
    """Parse the arguments and serve."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--crds", required=True)
    parser.add_argument("--kubeconfig-out", required=True)
    args = parser.parse_args()
    asyncio.run(_serve(args.crds, args.kubeconfig_out))


if __name__ == "__main__":
    main()
