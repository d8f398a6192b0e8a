"""Start-up: ``import pyctrl`` and a manager's names load only what a manager uses.

The servers it may start (webhook, metrics, debug), certificates (cryptography), the CLI,
envtest and OpenTelemetry load where they are used. Each test runs a fresh interpreter:
what is imported is process state. (How long the imports take is a benchmark's business,
``python -m bench startup``; these tests check which modules load.)
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

# Modules (and their submodules) no manager needs before it starts a server.
HEAVY = (
    "cryptography",
    "opentelemetry",
    "aiohttp.web",
    "pyctrl.certs",
    "pyctrl.certwatcher",
    "pyctrl.webhook",
    "pyctrl.debug",
    "pyctrl.cli",
    "pyctrl.envtest",
    "pyctrl._apiserver",
    "pyctrl.app",
    "pyctrl.crd",
)


def _loaded_heavy(code: str) -> list[str]:
    script = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import sys
        heavy = {HEAVY!r}
        print(" ".join(sorted(m for m in sys.modules
                              if any(m == h or m.startswith(h + ".") for h in heavy))))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # The last line is the list (logs may come before it).
    return done.stdout.splitlines()[-1].split()


def test_import_pyctrl_loads_no_server_certificate_or_tool_module() -> None:
    """``import pyctrl`` alone loads none of the heavy modules, nor ssl."""
    assert _loaded_heavy("import pyctrl") == []
    done = subprocess.run(
        [sys.executable, "-c", "import sys, pyctrl; print('ssl' in sys.modules)"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)},
        check=False,
    )
    assert done.stdout.strip() == "False", done.stderr


def test_a_manager_and_its_controller_load_no_server_or_certificate_module() -> None:
    """Building a Manager with a controller leaves servers, crypto and tools unloaded."""
    loaded = _loaded_heavy(
        """
        import asyncio
        import pyctrl
        from pyctrl import Client, Cache, Manager, controller_managed_by
        from pyctrl.manager import Options

        class Item(pyctrl.CustomResource, group="example.com", version="v1"):
            pass

        class Reconciler:
            async def reconcile(self, request):
                return pyctrl.Result()

        async def main():
            from pyctrl._kubernetes import Configuration

            configuration = Configuration()
            configuration.host = "http://127.0.0.1:1"
            manager = Manager(configuration, Options(metrics_bind_address="0"))
            controller_managed_by(manager).for_(Item).complete(Reconciler())

        asyncio.run(main())
        """
    )
    assert loaded == []


def test_secure_metrics_serving_still_loads_the_certificates_when_started() -> None:
    """The deferred imports are real: a self-signed metrics server gets its certificate."""
    loaded = _loaded_heavy(
        """
        import asyncio
        from pyctrl.metricsserver import Options, Server

        async def main():
            server = Server("127.0.0.1", 0, Options(secure_serving=True))
            task = asyncio.create_task(server.start())
            await asyncio.wait_for(server.started.wait(), 30)
            task.cancel()
            print("serving", server.scheme, end=" ")

        asyncio.run(main())
        """
    )
    assert loaded[:2] == ["serving", "https"]
    assert {"pyctrl.certs", "cryptography", "aiohttp.web"} <= set(loaded[2:])


def test_a_kubeconfig_with_inline_certificates_loads_without_cryptography(
    tmp_path: Path,
) -> None:
    """Inline CA, client certificate and key are checked without loading cryptography.

    cryptography costs a manager several MiB of memory; the ``ssl`` module parses the
    certificates, the key's PEM armour is checked. Bad data still fails at load
    (tests/test_config.py).
    """
    from pyctrl import certs

    ca = certs.generate_ca("startup-ca")
    client = certs.issue_client_cert(ca, "startup-user")
    user = {
        "client-certificate-data": base64.b64encode(client.cert_pem).decode(),
        "client-key-data": base64.b64encode(client.key_pem).decode(),
    }
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "c",
                "cluster": {
                    "server": "https://127.0.0.1:1",
                    "certificate-authority-data": base64.b64encode(ca.cert_pem).decode(),
                },
            }
        ],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(kubeconfig))
    loaded = _loaded_heavy(
        f"""
        import asyncio
        from pyctrl.config import load_kubeconfig

        config = asyncio.run(load_kubeconfig({str(path)!r}))
        print(config.configuration.host, end=" ")
        """
    )
    assert loaded == ["https://127.0.0.1:1"]
