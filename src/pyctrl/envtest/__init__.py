"""Package envtest runs a Kubernetes API server for integration tests.

Like controller-runtime's ``pkg/envtest``, it gives tests a real API server to talk
to instead of a fake client: objects are validated, defaulted and versioned,
watches deliver events, finalizers and owner references behave, and the code
under test uses exactly the client configuration it would use in a cluster.

`Environment` is the entry point. Started (``async with Environment(...) as env``),
it installs the given CustomResourceDefinitions, waits until they are Established,
and offers ``env.config`` (a kubernetes_asyncio ``Configuration``) and
``env.kubeconfig_path`` (for kubectl and subprocesses). It runs in one of three
modes:

* embedded (default): `APIServer`, pyctrl's in-process API server, over HTTPS with a
  generated CA and bearer token. It implements what operators touch (CRUD, patches
  of every kind including server-side apply, watches with bookmarks, label and
  field selectors, CRD schemas with defaulting, pruning and CEL validation,
  status and scale subresources, finalizers, garbage collection, discovery and
  OpenAPI) and answers kubectl. It starts in milliseconds, and `Faults` lets a
  test break it on purpose: drop watches, fail or slow down requests, compact
  the event history, restart the server.
* existing cluster (``use_existing_cluster=True`` or ``USE_EXISTING_CLUSTER=true``):
  any cluster reachable through a kubeconfig.
* binaries (``binary_assets_directory`` or ``KUBEBUILDER_ASSETS``): etcd and
  kube-apiserver as controller-runtime's envtest runs them.

`Environment` (in ``environment``) delegates, as controller-runtime's envtest does, to
private modules beside it: ``_crd`` reads, installs, waits for and uninstalls CRDs
(``crd.go``), ``_webhook`` installs and undoes webhook configurations (``webhook.go``),
``_controlplane`` starts each mode's API server.

For pytest, the ``envtest`` fixture (from the ``pyctrl`` pytest plugin) yields a
started `Environment`. From a shell, ``python -m pyctrl.envtest`` serves the
embedded API server and prints a kubeconfig for kubectl.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl.envtest.environment import (
    BinariesNotFoundError,
    ControlPlaneError,
    CRDInstallError,
    Environment,
    EnvironmentFleet,
    EnvtestError,
    Mode,
    load_crds,
)

__all__ = [
    "APIServer",
    "BinariesNotFoundError",
    "CRDInstallError",
    "ControlPlaneError",
    "Environment",
    "EnvironmentFleet",
    "EnvtestError",
    "Faults",
    "Mode",
    "load_crds",
]

if TYPE_CHECKING:
    from pyctrl._apiserver.endpoints.server import APIServer
    from pyctrl._apiserver.faults import Faults


def __getattr__(name: str) -> Any:
    # The server is imported on first use: the pytest plugin imports this package in
    # every pytest run, and most of those never start a server.
    if name == "APIServer":
        from pyctrl._apiserver.endpoints.server import APIServer

        return APIServer
    if name == "Faults":
        from pyctrl._apiserver.faults import Faults

        return Faults
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
