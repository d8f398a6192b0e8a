"""kubernetes-asyncio's configuration and loaders, without importing its API models.

``import kubernetes_asyncio`` (or any of its submodules) runs the package's
``__init__``, which imports ``kubernetes_asyncio.client``, whose ``__init__`` imports
every API class and all ~700 models: some 35 MiB of resident memory that an operator
built with pyctrl never touches (pyctrl speaks JSON to the API server and has its own
typed models). pyctrl needs only ``client.configuration.Configuration`` and the
kubeconfig and in-cluster loaders of ``kubernetes_asyncio.config``.

So, when kubernetes-asyncio has not been imported yet, this module registers its two
packages, ``kubernetes_asyncio`` and ``kubernetes_asyncio.client``, without running
their ``__init__``; the submodules pyctrl imports load as usual. Each package runs its
real ``__init__`` the first time anything asks it for a name it does not hold that is not
one of its submodules (``kubernetes_asyncio.client.CoreV1Api``,
``kubernetes_asyncio.__version__``, ``from kubernetes_asyncio.client import *``) or
lists its names (``dir()``); a submodule asked for is imported alone, as usual. Code in
the same process that uses kubernetes-asyncio directly sees the whole library, as if it
had been imported first. If it was imported first, this module changes nothing.

``kubernetes_asyncio.config.kube_config`` does ``from kubernetes_asyncio.client import
ApiClient`` at import, so it is imported here with a stand-in for that name alone (the
client package itself never holds it): constructing the stand-in loads the package and
returns a real ``ApiClient``, and loading the package puts the real class back into
``kube_config``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

_PACKAGE = "kubernetes_asyncio"
_CLIENT = "kubernetes_asyncio.client"
_KUBE_CONFIG = "kubernetes_asyncio.config.kube_config"
_lock = threading.RLock()


def _deferred_package(name: str, directory: Path) -> ModuleType:
    """Register package ``name`` (in ``directory``) whose ``__init__`` runs on demand."""
    spec = importlib.util.spec_from_file_location(
        name, directory / "__init__.py", submodule_search_locations=[str(directory)]
    )
    if spec is None or spec.loader is None:  # pragma: no cover - a broken installation
        raise ImportError(f"cannot locate the {name} package in {directory}")
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    started = False

    def load_rest(attribute: str) -> Any:
        # PEP 562: called only for names the module does not hold yet. A submodule is
        # imported alone, as the import system does for ``from package import module``.
        if not attribute.startswith("__") and importlib.util.find_spec(f"{name}.{attribute}"):
            return importlib.import_module(f"{name}.{attribute}")
        load()
        try:
            return module.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    def list_names() -> list[str]:
        # PEP 562's __dir__: dir(), inspect and completion see every name.
        load()
        return sorted(module.__dict__)

    def load() -> None:
        # Another thread asking meanwhile waits for the ``__init__`` to finish; this thread,
        # asking again from inside it, sees the partly initialised module, as in any import.
        nonlocal started
        with _lock:
            if not started:
                started = True
                try:
                    loader.exec_module(module)
                except BaseException:
                    started = False
                    raise
                del module.__dict__["__getattr__"], module.__dict__["__dir__"]
                _loaded(name)

    module.__getattr__ = load_rest  # type: ignore[method-assign]
    module.__dir__ = list_names  # type: ignore[method-assign]
    sys.modules[name] = module
    return module


def _loaded(name: str) -> None:
    """After package ``name`` ran its ``__init__``: replace the ApiClient stand-in."""
    if name != _CLIENT:
        return
    kube_config = sys.modules.get(_KUBE_CONFIG)
    if kube_config is not None and kube_config.__dict__.get("ApiClient") is _ApiClient:
        kube_config.__dict__["ApiClient"] = sys.modules[_CLIENT].__dict__["ApiClient"]


class _ApiClient:
    """Stands for ``kubernetes_asyncio.client.ApiClient`` until the client is loaded."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # Not in the client package's namespace: asking it for ApiClient loads it.
        return sys.modules[_CLIENT].ApiClient(*args, **kwargs)


def _install() -> None:
    if _PACKAGE in sys.modules:
        return
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("pyctrl needs kubernetes-asyncio: pip install kubernetes-asyncio")
    root = Path(next(iter(spec.submodule_search_locations)))
    with _lock:
        if _PACKAGE in sys.modules:
            return
        package = _deferred_package(_PACKAGE, root)
        client = _deferred_package(_CLIENT, root / "client")
        package.__dict__["client"] = client
        from kubernetes_asyncio.client.configuration import Configuration as _Configuration

        client.__dict__["Configuration"] = _Configuration
        # kube_config imports ApiClient from the client package: it gets the stand-in,
        # which then leaves the package, where a real ApiClient is what callers must get.
        client.__dict__["ApiClient"] = _ApiClient
        try:
            importlib.import_module(_KUBE_CONFIG)
        finally:
            del client.__dict__["ApiClient"]


_install()

from kubernetes_asyncio.client.configuration import Configuration  # noqa: E402

__all__ = ["Configuration"]
