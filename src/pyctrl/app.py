"""Operators as applications: one object gives the process entry point and the manifests.

An operator package declares an `Operator`: its name, its custom resource types, and a
``setup`` function that registers controllers (and webhooks) on a Manager::

    async def setup(manager: Manager) -> None:
        controller_managed_by(manager).for_(MySrv).owns(V1Deployment).complete(...)
        webhook_managed_by(manager).for_(MySrv).with_defaulter(...).complete()

    operator = Operator(name="mysrv", types=[MySrv], setup=setup)

    if __name__ == "__main__":
        operator.main()

`Operator.main` is the ``main.go`` kubebuilder scaffolds: it parses the usual flags
(``--kubeconfig``, ``--context``, ``--metrics-bind-address`` ``:8080``,
``--health-probe-bind-address`` ``:8081``, ``--leader-elect``,
``--leader-election-namespace`` (default: the pod's own namespace), ``--namespace``,
``--log-format`` ``json|console``, ``--log-level``, ``--webhook-port``,
``--webhook-cert-dir``, ``--metrics-secure``, ``--metrics-cert-dir``,
``--debug-bind-address``), resolves the configuration (KUBECONFIG or in-cluster), builds the
Manager, calls ``setup`` and runs until SIGTERM.

`Operator.manifests` is what ``controller-gen`` and kustomize produce, generated from
the same Python: CustomResourceDefinitions, least-privilege RBAC, the manager's
Deployment, webhook configurations, and the secure metrics wiring (the roles the
authn/authz filter needs, a ``metrics-reader`` role for scrapers, the metrics Service and
a ServiceMonitor). RBAC is derived from what ``setup`` registers:
the reconciled type may be read and updated (status and finalizers included), owned
types may be fully managed, other watched types are read-only; Events, leader-election
Leases (also those of a shard ring: ``Operator(replicas=3)`` deploys three sharded
replicas) and the operator's own ``extra_rules`` are added. ``pyctrl generate`` writes
them to files.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyctrl._kubernetes import Configuration
from pyctrl.cache import CacheOptions
from pyctrl.config import Config, get_config
from pyctrl.controller import Controller
from pyctrl.crd import crd_for, to_yaml
from pyctrl.errors import ConfigError
from pyctrl.filters import with_authentication_and_authorization
from pyctrl.handler import EnqueueRequestForObject, EnqueueRequestForOwner
from pyctrl.log import configure
from pyctrl.manager import Manager, Options
from pyctrl.metricsserver import Options as MetricsServerOptions
from pyctrl.resource import CustomResource, pluralize
from pyctrl.shardelection import ShardingOptions
from pyctrl.source import Kind
from pyctrl.webhook import (
    ClientConfig,
    LocalWebhooks,
    Server,
    conversion_stanza,
    converted_kinds,
    webhook_configurations,
    write_local_certs,
)

if TYPE_CHECKING:
    import os

    from pyctrl.meta import GroupVersionKind

__all__ = ["Operator", "PolicyRule"]

Setup = Callable[[Manager], Awaitable[None] | None]
_READ = ("get", "list", "watch")
METRICS_PORT = 8443
"""The generated Deployment serves metrics here, over HTTPS with authn/authz."""
_WRITE = ("create", "update", "patch", "delete")
# Built-in kinds whose resource name is not the lowercase English plural of the kind.
_IRREGULAR = {"Endpoints": "endpoints"}


@dataclass(frozen=True)
class PolicyRule:
    """One RBAC rule: API groups, resources and verbs (``rbac.authorization.k8s.io/v1``)."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        return {
            "apiGroups": list(self.api_groups),
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }


@dataclass
class Operator:
    """An operator: its types, its setup, and how it is deployed.

    Attributes:
        name: Short name, e.g. ``mysrv``; prefixes every generated object.
        types: Custom resource types (every version) whose CRDs it owns.
        setup: Registers controllers and webhooks on a Manager (plain or coroutine).
        namespace: Where the operator runs (``<name>-system``).
        image: The container image of the manager.
        extra_rules: RBAC rules beyond what is derived from ``setup``.
        leader_election_id: The Lease name (``<name>.pyctrl.dev``).
        replicas: Replicas of the generated Deployment. Above 1 they run sharded
            (``--shard-ring=<name>``, `pyctrl.shardelection`): every replica reconciles its
            share of the objects, instead of one leader and idle standbys.
    """

    name: str
    types: Sequence[type[CustomResource]]
    setup: Setup
    namespace: str = ""
    image: str = ""
    extra_rules: Sequence[PolicyRule] = ()
    leader_election_id: str = ""
    replicas: int = 1
    _parser: argparse.ArgumentParser | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.namespace = self.namespace or f"{self.name}-system"
        self.image = self.image or f"{self.command_name}:latest"
        self.leader_election_id = self.leader_election_id or f"{self.name}.pyctrl.dev"

    @property
    def command_name(self) -> str:
        """The program's name: ``<name>-operator``, or the name if it ends in ``-operator``.

        It names the image, the field manager and ``--help``'s usage line.
        """
        return self.name if self.name.endswith("-operator") else f"{self.name}-operator"

    # -- running -----------------------------------------------------------------------

    def parser(self) -> argparse.ArgumentParser:
        """The command-line flags (controller-runtime's usual ones)."""
        parser = argparse.ArgumentParser(
            prog=self.command_name, description=f"The {self.name} operator."
        )
        parser.add_argument(
            "--kubeconfig", help="kubeconfig file (default: KUBECONFIG, in-cluster, ~/.kube/config)"
        )
        parser.add_argument("--context", help="kubeconfig context to use")
        parser.add_argument(
            "--metrics-bind-address", default=":8080", help='metrics address; "0" disables'
        )
        parser.add_argument("--health-probe-bind-address", default=":8081", help="probe address")
        parser.add_argument("--leader-elect", action="store_true", help="enable leader election")
        parser.add_argument(
            "--leader-election-namespace",
            default="",
            help="namespace of the leader-election Lease (default: the pod's own namespace)",
        )
        parser.add_argument(
            "--shard-ring",
            default="",
            help="run sharded: this replica takes its share of the ring's slots (its Leases "
            "live in the leader-election namespace)",
        )
        parser.add_argument("--shard-slots", type=int, default=64, help="slots of the ring")
        parser.add_argument("--namespace", default="", help="watch only this namespace")
        parser.add_argument(
            "--log-format",
            choices=("json", "console"),
            default="json",
            help="log lines as JSON objects, or colored for people (default: json)",
        )
        parser.add_argument(
            "--log-level",
            default="info",
            help="lowest level logged: debug, info, warning, error (default: info)",
        )
        parser.add_argument(
            "--webhook-port",
            type=int,
            default=9443,
            help="port of the webhook server, if setup registers webhooks (default: 9443)",
        )
        parser.add_argument(
            "--webhook-cert-dir",
            default=None,
            help="directory holding the webhook server's tls.crt and tls.key "
            "(default: $TMPDIR/k8s-webhook-server/serving-certs)",
        )
        parser.add_argument(
            "--metrics-secure",
            action="store_true",
            help="serve metrics over HTTPS, authenticated and authorized by the API server",
        )
        parser.add_argument(
            "--metrics-cert-dir",
            default=None,
            help="metrics tls.crt/tls.key (default: self-signed)",
        )
        parser.add_argument(
            "--debug-bind-address", default="", help="address of the /debug endpoints (off)"
        )
        return parser

    async def create_manager(
        self, config: Config | Configuration, args: argparse.Namespace | None = None
    ) -> Manager:
        """Build the Manager from flags and run ``setup``.

        Without ``args`` (a manager built in a test), the flags' defaults apply, except
        that metrics and health probes are not served: managers of tests running side by
        side would otherwise all bind ``:8080`` and ``:8081``.

        Raises:
            ConfigError: ``--leader-elect`` outside a cluster without
                ``--leader-election-namespace``.
        """
        if args is None:
            args = self.parser().parse_args(
                ["--metrics-bind-address=0", "--health-probe-bind-address=0"]
            )
        options = Options(
            metrics_bind_address=args.metrics_bind_address,
            health_probe_bind_address=args.health_probe_bind_address,
            leader_election=args.leader_elect,
            leader_election_id=self.leader_election_id,
            leader_election_namespace=args.leader_election_namespace,
            cache=CacheOptions(namespaces=[args.namespace]) if args.namespace else None,
            webhook_server=Server(port=args.webhook_port, cert_dir=args.webhook_cert_dir),
            field_owner=self.command_name,
            metrics=MetricsServerOptions(
                secure_serving=args.metrics_secure,
                filter_provider=with_authentication_and_authorization
                if args.metrics_secure
                else None,
                cert_dir=args.metrics_cert_dir,
            ),
            debug_bind_address=args.debug_bind_address,
            sharding=(
                ShardingOptions(
                    name=args.shard_ring,
                    namespace=args.leader_election_namespace,
                    slots=args.shard_slots,
                )
                if args.shard_ring
                else None
            ),
        )
        manager = Manager(config, options)
        result = self.setup(manager)
        if inspect.isawaitable(result):
            await result
        return manager

    async def run(
        self, argv: Sequence[str] | None = None, *, webhook_host: str | None = None
    ) -> None:
        """Parse flags, build the manager and run it until SIGTERM/SIGINT.

        Args:
            argv: The operator's flags (default: the process's).
            webhook_host: Local webhook development (``pyctrl run --webhook-host``): serve
                the webhooks with a fresh certificate for this address of the machine, and
                register configurations pointing at it while running (`local_webhooks`).
        """
        args = self.parser().parse_args(argv)
        configure(development=args.log_format == "console", level=args.log_level)
        config = await get_config(kubeconfig=args.kubeconfig, context=args.context)
        with tempfile.TemporaryDirectory(prefix=f"{self.name}-webhook-certs-") as certs:
            ca_bundle = b""
            if webhook_host:
                ca_bundle = write_local_certs(webhook_host, certs)
                args.webhook_cert_dir = certs
            manager = await self.create_manager(config, args)
            if webhook_host:
                manager.add(self.local_webhooks(manager, webhook_host, ca_bundle))
            await manager.run()

    def local_webhooks(self, manager: Manager, host: str, ca_bundle: bytes) -> LocalWebhooks:
        """The runnable registering ``manager``'s webhooks at ``host`` while it runs.

        The configurations are named ``<name>-dev-mutating-webhook-configuration`` (and
        validating), apart from the deployed operator's.
        """
        return LocalWebhooks(
            manager.rest,
            manager.webhook_server,
            host=host,
            ca_bundle=ca_bundle,
            name_prefix=f"{self.name}-dev-",
        )

    def main(self, argv: Sequence[str] | None = None, *, webhook_host: str | None = None) -> None:
        """The process entry point (``python -m your_operator``).

        A configuration problem (no or a broken kubeconfig; ``--leader-elect`` outside a
        cluster without ``--leader-election-namespace``) is one line on stderr and exit
        status 1, not a traceback. ``webhook_host``: see `run`.
        """
        try:
            asyncio.run(self.run(argv, webhook_host=webhook_host))
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            raise SystemExit(1) from None

    # -- manifests ---------------------------------------------------------------------

    async def _offline_manager(self) -> Manager:
        # Nothing connects before start, so a placeholder address is enough to run setup.
        placeholder = Configuration(host="https://cluster.invalid")
        return await self.create_manager(placeholder)

    async def manifests(self) -> dict[str, list[dict[str, Any]]]:
        """Every manifest, by file name under ``config/``.

        crd/, rbac/ (with the metrics auth and reader roles), manager/ (with the metrics
        Service), webhook/ and prometheus/ (a ServiceMonitor).
        """
        manager = await self._offline_manager()
        server = manager.webhook_server
        client = ClientConfig(
            service_name=f"{self.name}-webhook-service",
            service_namespace=self.namespace,
            cert_manager_certificate=f"{self.namespace}/{self.name}-serving-cert",
        )
        files: dict[str, list[dict[str, Any]]] = {}
        converted = converted_kinds(server)
        by_kind: dict[tuple[str, str], list[type[CustomResource]]] = {}
        for type_ in self.types:
            info = type_.resource_info()
            by_kind.setdefault((info.group, info.kind), []).append(type_)
        for (group, _kind), versions in sorted(by_kind.items()):
            conversion = conversion_stanza(client) if (group, _kind) in converted else None
            crd = crd_for(*versions, conversion=conversion)
            if conversion is not None:
                crd["metadata"].setdefault("annotations", {})["cert-manager.io/inject-ca-from"] = (
                    client.cert_manager_certificate
                )
            files[f"crd/{crd['metadata']['name']}.yaml"] = [crd]
        files["rbac/role.yaml"] = [self._cluster_role(manager)]
        files["rbac/leader_election_role.yaml"] = [self._leader_role()]
        files["rbac/service_account.yaml"] = [self._service_account()]
        files["rbac/role_binding.yaml"] = self._bindings()
        files["rbac/metrics_auth_role.yaml"] = self._metrics_auth_role()
        files["rbac/metrics_reader_role.yaml"] = [self._metrics_reader_role()]
        webhooks = bool(server.paths)
        files["manager/manager.yaml"] = [self._namespace(), self._deployment(webhooks)]
        files["manager/metrics_service.yaml"] = [self._metrics_service()]
        files["prometheus/monitor.yaml"] = [self._service_monitor()]
        if webhooks:
            files["webhook/manifests.yaml"] = [
                *webhook_configurations(server, client, name_prefix=f"{self.name}-"),
                self._webhook_service(),
                *self._certificates(),
            ]
        return files

    async def render_manifests(self) -> dict[str, str]:
        """The manifests as YAML text, by relative file name (what `write_manifests` writes)."""
        return {name: to_yaml(objects) for name, objects in (await self.manifests()).items()}

    async def write_manifests(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write every manifest under ``directory`` (``config/``); return the files written.

        Files of the generated subdirectories that are no longer produced are removed, so
        the directory always matches the Python types.
        """
        root = Path(directory)
        rendered = await self.render_manifests()
        for sub in {name.split("/", 1)[0] for name in rendered} | {
            "crd",
            "rbac",
            "manager",
            "webhook",
            "prometheus",
        }:
            for stale in (root / sub).glob("*.yaml"):
                if f"{sub}/{stale.name}" not in rendered:
                    stale.unlink()
        written = []
        for name, text in sorted(rendered.items()):
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            written.append(path)
        return written

    def rbac_rules(self, manager: Manager) -> list[PolicyRule]:
        """Least-privilege rules for what ``setup`` registered on ``manager``."""
        verbs: dict[tuple[str, str], set[str]] = {}

        def grant(gvk: GroupVersionKind, resource: str, *wanted: str) -> None:
            verbs.setdefault((gvk.group, resource), set()).update(wanted)

        for runnable in manager.runnables:
            if not isinstance(runnable, Controller):
                continue
            for source in runnable.sources:
                if not isinstance(source, Kind):
                    continue
                gvk = manager.scheme.gvk_for(source.type)
                resource = _resource(source.type, gvk)
                grant(gvk, resource, *_READ)
                if isinstance(source.handler, EnqueueRequestForObject):
                    grant(gvk, resource, "update", "patch")
                    grant(gvk, f"{resource}/status", "get", "update", "patch")
                    grant(gvk, f"{resource}/finalizers", "update")
                elif isinstance(source.handler, EnqueueRequestForOwner):
                    grant(gvk, resource, *_WRITE)
        rules = [
            PolicyRule((group,), (resource,), tuple(sorted(v)))
            for (group, resource), v in sorted(verbs.items())
        ]
        rules.append(PolicyRule(("", "events.k8s.io"), ("events",), ("create", "patch")))
        rules.extend(self.extra_rules)
        return rules

    def _cluster_role(self, manager: Manager) -> dict[str, Any]:
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{self.name}-manager-role"},
            "rules": [r.to_dict() for r in self.rbac_rules(manager)],
        }

    def _leader_role(self) -> dict[str, Any]:
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": f"{self.name}-leader-election-role", "namespace": self.namespace},
            "rules": [
                PolicyRule(("coordination.k8s.io",), ("leases",), (*_READ, *_WRITE)).to_dict(),
                PolicyRule(("", "events.k8s.io"), ("events",), ("create", "patch")).to_dict(),
            ],
        }

    def _service_account(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": f"{self.name}-controller-manager", "namespace": self.namespace},
        }

    def _bindings(self) -> list[dict[str, Any]]:
        subject = {
            "kind": "ServiceAccount",
            "name": f"{self.name}-controller-manager",
            "namespace": self.namespace,
        }
        return [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{self.name}-manager-rolebinding"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": f"{self.name}-manager-role",
                },
                "subjects": [subject],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {
                    "name": f"{self.name}-leader-election-rolebinding",
                    "namespace": self.namespace,
                },
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": f"{self.name}-leader-election-role",
                },
                "subjects": [subject],
            },
        ]

    def _namespace(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": self.namespace, "labels": {"control-plane": "controller-manager"}},
        }

    def _deployment(self, webhooks: bool) -> dict[str, Any]:
        labels = {"control-plane": "controller-manager", "app.kubernetes.io/name": self.name}
        container: dict[str, Any] = {
            "name": "manager",
            "image": self.image,
            "args": [
                "--leader-elect" if self.replicas <= 1 else f"--shard-ring={self.name}",
                "--health-probe-bind-address=:8081",
                f"--metrics-bind-address=:{METRICS_PORT}",
                "--metrics-secure",
            ],
            "ports": [{"name": "https", "containerPort": METRICS_PORT, "protocol": "TCP"}],
            "livenessProbe": {
                "httpGet": {"path": "/healthz", "port": 8081},
                "initialDelaySeconds": 15,
                "periodSeconds": 20,
            },
            "readinessProbe": {
                "httpGet": {"path": "/readyz", "port": 8081},
                "initialDelaySeconds": 5,
                "periodSeconds": 10,
            },
            "resources": {
                "limits": {"cpu": "500m", "memory": "256Mi"},
                "requests": {"cpu": "10m", "memory": "64Mi"},
            },
            "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"]},
                "readOnlyRootFilesystem": True,
            },
        }
        pod_spec: dict[str, Any] = {
            "serviceAccountName": f"{self.name}-controller-manager",
            "terminationGracePeriodSeconds": 40,
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container],
        }
        if webhooks:
            container["ports"].append(
                {"name": "webhook-server", "containerPort": 9443, "protocol": "TCP"}
            )
            container["args"].append("--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs")
            container["volumeMounts"] = [
                {
                    "name": "cert",
                    "mountPath": "/tmp/k8s-webhook-server/serving-certs",
                    "readOnly": True,
                }
            ]
            pod_spec["volumes"] = [
                {"name": "cert", "secret": {"secretName": f"{self.name}-webhook-server-cert"}}
            ]
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": f"{self.name}-controller-manager",
                "namespace": self.namespace,
                "labels": labels,
            },
            "spec": {
                "replicas": self.replicas,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            },
        }

    def _metrics_auth_role(self) -> list[dict[str, Any]]:
        """What the filter of `pyctrl.filters` needs: TokenReviews and SubjectAccessReviews."""
        role = f"{self.name}-metrics-auth-role"
        return [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": role},
                "rules": [
                    PolicyRule(
                        ("authentication.k8s.io",), ("tokenreviews",), ("create",)
                    ).to_dict(),
                    PolicyRule(
                        ("authorization.k8s.io",), ("subjectaccessreviews",), ("create",)
                    ).to_dict(),
                ],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{self.name}-metrics-auth-rolebinding"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [
                    {
                        "kind": "ServiceAccount",
                        "name": f"{self.name}-controller-manager",
                        "namespace": self.namespace,
                    }
                ],
            },
        ]

    def _metrics_reader_role(self) -> dict[str, Any]:
        """Bind it to a scraper (Prometheus' ServiceAccount) to let it read ``/metrics``."""
        return {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{self.name}-metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        }

    def _metrics_service(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": f"{self.name}-controller-manager-metrics-service",
                "namespace": self.namespace,
                "labels": {"control-plane": "controller-manager"},
            },
            "spec": {
                "ports": [
                    {
                        "name": "https",
                        "port": METRICS_PORT,
                        "protocol": "TCP",
                        "targetPort": METRICS_PORT,
                    }
                ],
                "selector": {
                    "control-plane": "controller-manager",
                    "app.kubernetes.io/name": self.name,
                },
            },
        }

    def _service_monitor(self) -> dict[str, Any]:
        """A prometheus-operator ServiceMonitor for the metrics Service (kubebuilder's)."""
        return {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": {
                "name": f"{self.name}-controller-manager-metrics-monitor",
                "namespace": self.namespace,
                "labels": {"control-plane": "controller-manager"},
            },
            "spec": {
                "endpoints": [
                    {
                        "path": "/metrics",
                        "port": "https",
                        "scheme": "https",
                        "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                        # The self-signed certificate; with cert-manager, use its CA instead.
                        "tlsConfig": {"insecureSkipVerify": True},
                    }
                ],
                "selector": {"matchLabels": {"control-plane": "controller-manager"}},
            },
        }

    def _webhook_service(self) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": f"{self.name}-webhook-service", "namespace": self.namespace},
            "spec": {
                "ports": [{"port": 443, "protocol": "TCP", "targetPort": 9443}],
                "selector": {
                    "control-plane": "controller-manager",
                    "app.kubernetes.io/name": self.name,
                },
            },
        }

    def _certificates(self) -> list[dict[str, Any]]:
        service = f"{self.name}-webhook-service"
        return [
            {
                "apiVersion": "cert-manager.io/v1",
                "kind": "Issuer",
                "metadata": {"name": f"{self.name}-selfsigned-issuer", "namespace": self.namespace},
                "spec": {"selfSigned": {}},
            },
            {
                "apiVersion": "cert-manager.io/v1",
                "kind": "Certificate",
                "metadata": {"name": f"{self.name}-serving-cert", "namespace": self.namespace},
                "spec": {
                    "dnsNames": [
                        f"{service}.{self.namespace}.svc",
                        f"{service}.{self.namespace}.svc.cluster.local",
                    ],
                    "issuerRef": {"kind": "Issuer", "name": f"{self.name}-selfsigned-issuer"},
                    "secretName": f"{self.name}-webhook-server-cert",
                },
            },
        ]


def _resource(type_: type[Any], gvk: GroupVersionKind) -> str:
    if isinstance(type_, type) and issubclass(type_, CustomResource):
        return type_.resource_info().plural
    return _IRREGULAR.get(gvk.kind, pluralize(gvk.kind))
