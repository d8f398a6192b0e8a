"""Command line: serve the embedded API server until interrupted.

``python -m pyctrl.envtest`` starts pyctrl's embedded API server, installs the CRDs
given with ``--crds``, writes a kubeconfig and prints how to point kubectl at it::

    $ python -m pyctrl.envtest --crds config/crd/bases
    pyctrl envtest API server serving at https://127.0.0.1:41234
    kubeconfig: /tmp/pyctrl-envtest-x1y2/kubeconfig
    export KUBECONFIG=/tmp/pyctrl-envtest-x1y2/kubeconfig

It serves until SIGINT (Ctrl-C) or SIGTERM, then shuts down and removes the
kubeconfig (and the file given with ``--kubeconfig-out``, whose credentials die with
the server). `run` is the implementation, for the ``pyctrl envtest`` subcommand.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import shutil
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from pyctrl.envtest.environment import Environment, EnvtestError
from pyctrl.errors import PyctrlError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "parser", "run", "serve"]


def parser(prog: str = "python -m pyctrl.envtest") -> argparse.ArgumentParser:
    """Return the command-line parser of ``python -m pyctrl.envtest`` (``prog`` in usage)."""
    result = argparse.ArgumentParser(
        prog=prog,
        description="Serve pyctrl's embedded Kubernetes API server until interrupted.",
    )
    result.add_argument("--host", default="127.0.0.1", help="address to listen on")
    result.add_argument(
        "--port", type=int, default=0, help="port to listen on (default: a free port)"
    )
    result.add_argument(
        "--crds",
        nargs="+",
        action="extend",
        default=[],
        metavar="PATH",
        help="CRD files or directories to install (YAML or JSON)",
    )
    result.add_argument(
        "--kubeconfig-out",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the kubeconfig here (removed again at shutdown)",
    )
    return result


def _copy_private(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    target.chmod(0o600)


def _remove(path: Path) -> None:
    path.unlink(missing_ok=True)


async def serve(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    crds: Sequence[str] = (),
    kubeconfig_out: Path | None = None,
    stop: asyncio.Event | None = None,
    out: TextIO | None = None,
) -> None:
    """Serve the embedded API server until ``stop`` is set, SIGINT or SIGTERM.

    Args:
        host: Address to listen on.
        port: Port to listen on (0 picks a free one).
        crds: CRD files or directories to install before announcing the server.
        kubeconfig_out: Extra path to copy the kubeconfig to (removed at shutdown).
        stop: Set it to shut down (signals set it too).
        out: Where to print the server address and kubeconfig (default stdout).
    """
    stream = sys.stdout if out is None else out
    stop_event = asyncio.Event() if stop is None else stop
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop_event.set)
            handled.append(signum)
    try:
        async with Environment(mode="embedded", crds=crds, host=host, port=port) as env:
            assert env.server is not None
            kubeconfig = env.kubeconfig_path
            if kubeconfig_out is not None:
                _copy_private(kubeconfig, kubeconfig_out)
                kubeconfig = kubeconfig_out
            try:
                print(f"pyctrl envtest API server serving at {env.server.url}", file=stream)
                for crd in env.crds:
                    print(f"installed CRD {crd['metadata']['name']}", file=stream)
                print(f"kubeconfig: {kubeconfig}", file=stream)
                print(f"export KUBECONFIG={kubeconfig}", file=stream, flush=True)
                await stop_event.wait()
                print("shutting down", file=stream, flush=True)
            finally:
                if kubeconfig_out is not None:
                    _remove(kubeconfig_out)
    finally:
        for signum in handled:
            loop.remove_signal_handler(signum)


def run(argv: Sequence[str] | None = None, *, prog: str = "python -m pyctrl.envtest") -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``).

    ``prog`` is the command's name in usage and error lines (``pyctrl envtest``).

    Returns:
        The exit status: 0 after a clean shutdown, 1 if the server could not start.
    """
    options = parser(prog).parse_args(argv)
    try:
        asyncio.run(
            serve(
                host=options.host,
                port=options.port,
                crds=options.crds,
                kubeconfig_out=options.kubeconfig_out,
            )
        )
    except (EnvtestError, PyctrlError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


# A young collection every 20,000 net allocations instead of 700. The server keeps every
# stored object and thousands of past versions (the watch history) alive, while a request
# allocates a few containers that live until its response is written: with the default
# threshold, collections promote those in-flight containers, and the full collections they
# bring on (each walks the whole history) took about a tenth of the CPU a write costs.
_GC_THRESHOLDS = (20_000, 20, 10)


def _tune_gc() -> None:
    """Tune the collector for a process that only serves (the modules are loaded by now).

    The objects of the loaded modules live as long as the process: frozen, no collection
    walks them again.
    """
    gc.freeze()
    gc.set_threshold(*_GC_THRESHOLDS)


def main() -> None:
    """Entry point of ``python -m pyctrl.envtest``: exits with `run`'s status.

    The process only serves, so the collector is tuned for it first (`run`, which tests
    and ``pyctrl envtest`` call in their own process, leaves it alone).
    """
    _tune_gc()
    sys.exit(run())


if __name__ == "__main__":
    main()
