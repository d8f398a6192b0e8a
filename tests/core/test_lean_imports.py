"""pyctrl loads kubernetes-asyncio's configuration without its ~700 API models.

Each test runs a fresh interpreter: what is imported is process state.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest

from pyctrl.errors import SchemeError
from pyctrl.meta import GroupVersionKind
from pyctrl.resource import CustomResource
from pyctrl.scheme import Scheme

if TYPE_CHECKING:
    from pathlib import Path

MODELS = "kubernetes_asyncio.client.models"

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: secret}
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: team}
current-context: ctx
"""


def _python(code: str, tmp_path: Path) -> str:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_operator_process_never_imports_the_models(tmp_path: Path) -> None:
    """A Manager with a controller, built from a kubeconfig, leaves the models unloaded."""
    out = _python(
        f"""
        import asyncio, sys
        from pyctrl.builder import controller_managed_by
        from pyctrl.config import get_config
        from pyctrl.manager import Manager, Options
        from pyctrl.resource import CustomResource

        class Item(CustomResource, group="example.com", version="v1"):
            pass

        class Reconciler:
            async def reconcile(self, request):
                return None

        async def main():
            config = await get_config()
            manager = Manager(config, Options(metrics_bind_address="0"))
            controller_managed_by(manager).for_(Item).complete(Reconciler())
            print(config.namespace, config.configuration.host)

        asyncio.run(main())
        print({MODELS!r} in sys.modules, "kubernetes_asyncio.client.api" in sys.modules)
        """,
        tmp_path,
    )
    assert out.split() == ["team", "https://127.0.0.1:6443", "False", "False"]


def test_kubernetes_asyncio_stays_whole_for_code_that_uses_it(tmp_path: Path) -> None:
    """After pyctrl, every way of reaching kubernetes-asyncio's names still works."""
    out = _python(
        """
        import asyncio, os
        import pyctrl.config, pyctrl.manager
        import kubernetes_asyncio
        from kubernetes_asyncio import client, config, watch
        from kubernetes_asyncio.client import V1Pod, Configuration
        from kubernetes_asyncio.client.api_client import ApiClient

        print(kubernetes_asyncio.__version__ == kubernetes_asyncio.__dict__["__version__"])
        print(client.CoreV1Api.__name__, V1Pod.__name__, watch.Watch.__name__)
        # One Configuration class, whichever way it was imported.
        print(Configuration is pyctrl.config.Configuration)
        star = {}
        exec("from kubernetes_asyncio.client import *", star)
        print("AppsV1Api" in star)

        async def main():
            api = await config.new_client_from_config(os.environ["KUBECONFIG"])
            print(type(api) is ApiClient, api.configuration.host)
            await api.close()

        asyncio.run(main())
        """,
        tmp_path,
    )
    assert out.split() == [
        "True",
        "CoreV1Api",
        "V1Pod",
        "Watch",
        "True",
        "True",
        "True",
        "https://127.0.0.1:6443",
    ]


def test_an_api_client_is_real_however_it_is_first_asked_for(tmp_path: Path) -> None:
    """Before anything loads the client package, both ways give a real ApiClient."""
    out = _python(
        """
        import asyncio, os
        import pyctrl.config
        from kubernetes_asyncio import config
        from kubernetes_asyncio.config import kube_config

        async def main():
            api = await config.new_client_from_config(os.environ["KUBECONFIG"])
            from kubernetes_asyncio.client import ApiClient
            print(type(api) is ApiClient, kube_config.ApiClient is ApiClient)
            await api.close()
            other = ApiClient()
            print(type(other).__module__)
            await other.close()

        asyncio.run(main())
        """,
        tmp_path,
    )
    assert out.split() == ["True", "True", "kubernetes_asyncio.client.api_client"]


def test_the_client_package_gives_the_real_api_client_first(tmp_path: Path) -> None:
    """``kubernetes_asyncio.client.ApiClient``, asked first, is the real class."""
    out = _python(
        """
        import pyctrl.manager
        import kubernetes_asyncio.client as client
        print(client.ApiClient.__module__)
        """,
        tmp_path,
    )
    assert out.strip() == "kubernetes_asyncio.client.api_client"


def test_an_environment_started_after_pyctrl_serves_kubernetes_asyncio(tmp_path: Path) -> None:
    """The embedded server and kubernetes-asyncio's API classes, pyctrl imported first."""
    out = _python(
        """
        import asyncio
        import pyctrl.manager
        from pyctrl.envtest import Environment

        async def main():
            async with Environment() as env:
                from kubernetes_asyncio.client import ApiClient, CoreV1Api, V1ConfigMap

                async with ApiClient(env.config) as api:
                    core = CoreV1Api(api)
                    body = V1ConfigMap(metadata={"name": "lean"}, data={"a": "1"})
                    await core.create_namespaced_config_map("default", body)
                    read = await core.read_namespaced_config_map("lean", "default")
                    print(read.data["a"])

        asyncio.run(main())
        """,
        tmp_path,
    )
    assert out.strip() == "1"


def test_dir_lists_the_whole_package(tmp_path: Path) -> None:
    """dir() of a deferred package (inspect, completion) loads it and lists everything."""
    out = _python(
        """
        import pyctrl.manager
        import kubernetes_asyncio, kubernetes_asyncio.client as client
        print("CoreV1Api" in dir(client), "watch" in dir(kubernetes_asyncio))
        """,
        tmp_path,
    )
    assert out.split() == ["True", "True"]


def test_threads_asking_at_once_all_get_the_whole_client(tmp_path: Path) -> None:
    """While one thread runs the client's ``__init__``, the others wait for it."""
    out = _python(
        """
        import threading
        import pyctrl.config
        import kubernetes_asyncio.client as client

        barrier, found = threading.Barrier(8), []

        def ask():
            barrier.wait()
            found.append(client.CustomObjectsApi.__name__)

        threads = [threading.Thread(target=ask) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(len(found), set(found))
        """,
        tmp_path,
    )
    assert out.strip() == "8 {'CustomObjectsApi'}"


def test_kubernetes_asyncio_imported_first_is_used_as_it_is(tmp_path: Path) -> None:
    """pyctrl changes nothing when kubernetes-asyncio was imported before it."""
    out = _python(
        """
        import asyncio, sys
        import kubernetes_asyncio
        whole = sys.modules["kubernetes_asyncio.client"]
        from pyctrl.config import get_config
        config = asyncio.run(get_config())
        print(sys.modules["kubernetes_asyncio.client"] is whole, config.configuration.host)
        """,
        tmp_path,
    )
    assert out.split() == ["True", "https://127.0.0.1:6443"]


def test_builtin_kinds_are_known_before_their_models_load(tmp_path: Path) -> None:
    """The Scheme answers by name, and imports the models only when a type is asked for."""
    out = _python(
        f"""
        import sys
        from pyctrl.meta import GroupVersionKind
        from pyctrl.scheme import Scheme
        scheme = Scheme.with_builtins()
        print({MODELS!r} in sys.modules)
        model = scheme.type_for(GroupVersionKind("apps", "v1", "Deployment"))
        print(model.__name__, {MODELS!r} in sys.modules)
        """,
        tmp_path,
    )
    assert out.split() == ["False", "V1Deployment", "True"]


class Impostor(CustomResource, group="example.com", version="v1"):
    """Will claim a built-in kind."""


def test_a_builtin_kind_cannot_be_taken_by_another_type() -> None:
    """Registering another type for a built-in GVK fails, loaded or not."""
    deployment = GroupVersionKind("apps", "v1", "Deployment")
    scheme = Scheme.with_builtins()
    with pytest.raises(SchemeError, match="is already registered to V1Deployment"):
        scheme.add(Impostor, deployment)
    assert deployment in scheme.known_kinds()
    assert getattr(scheme.type_for(deployment), "__name__", None) == "V1Deployment"
