"""The operator's manifests: what controller-gen and kustomize make, from the same Python.

The functions take the `Operator` and call its methods where a subclass may override
one (``manifests``, ``render_manifests``, ``rbac_rules``), so an operator that adds to
its manifests by overriding ``manifests`` gets them written too.

CustomResourceDefinitions, least-privilege RBAC derived from what ``setup`` registers,
the manager's Deployment, webhook configurations with their Service and cert-manager
Certificate, and the secure metrics wiring. `manifests` gives them by file name under
``config/``; `write_manifests` writes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyctrl._kubernetes import Configuration
from pyctrl.app._assembly import published_names
from pyctrl.app._packaging import kustomizations
from pyctrl.app._spec import OperatorSpec, PolicyRule
from pyctrl.controller import Controller
from pyctrl.crd import crd_for, to_yaml
from pyctrl.handler import EnqueueRequestForObject, EnqueueRequestForOwner
from pyctrl.meta import GroupVersionKind
from pyctrl.policy import params_role, policy_manifests
from pyctrl.resource import CustomResource, pluralize
from pyctrl.source import Kind
from pyctrl.webhook import ClientConfig, conversion_stanza, converted_kinds, webhook_configurations

if TYPE_CHECKING:
    import os

    from pyctrl.manager import Manager

__all__ = [
    "METRICS_PORT",
    "PolicyRule",
    "manifests",
    "rbac_rules",
    "render_manifests",
    "write_manifests",
]


_READ = ("get", "list", "watch")
METRICS_PORT = 8443
"""The generated Deployment serves metrics here, over HTTPS with authn/authz."""
_WRITE = ("create", "update", "patch", "delete")
_CRDS = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"


def _secret(op: OperatorSpec) -> str:
    return f"{op.name}-webhook-server-cert"


# Built-in kinds whose resource name is not the lowercase English plural of the kind.
_IRREGULAR = {"Endpoints": "endpoints"}


def _resource(type_: type[Any], gvk: GroupVersionKind) -> str:
    if isinstance(type_, type) and issubclass(type_, CustomResource):
        return type_.resource_info().plural
    return _IRREGULAR.get(gvk.kind, pluralize(gvk.kind))


def rbac_rules(op: OperatorSpec, manager: Manager) -> list[PolicyRule]:
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
            if source.optional:
                # Optional kinds start when their CRD is Established: the cache watches CRDs.
                grant(_CRDS, "customresourcedefinitions", *_READ)
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
    rules.extend(op.extra_rules)
    return rules


def _cluster_role(op: OperatorSpec, manager: Manager) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"{op.name}-manager-role"},
        "rules": [r.to_dict() for r in op.rbac_rules(manager)],
    }


def _leader_role(op: OperatorSpec) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": f"{op.name}-leader-election-role", "namespace": op.namespace},
        "rules": [
            PolicyRule(("coordination.k8s.io",), ("leases",), (*_READ, *_WRITE)).to_dict(),
            PolicyRule(("", "events.k8s.io"), ("events",), ("create", "patch")).to_dict(),
        ],
    }


def _service_account(op: OperatorSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": f"{op.name}-controller-manager", "namespace": op.namespace},
    }


def _bindings(op: OperatorSpec) -> list[dict[str, Any]]:
    subject = {
        "kind": "ServiceAccount",
        "name": f"{op.name}-controller-manager",
        "namespace": op.namespace,
    }
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{op.name}-manager-rolebinding"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{op.name}-manager-role",
            },
            "subjects": [subject],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {
                "name": f"{op.name}-leader-election-rolebinding",
                "namespace": op.namespace,
            },
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": f"{op.name}-leader-election-role",
            },
            "subjects": [subject],
        },
    ]


def _namespace(op: OperatorSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": op.namespace, "labels": {"control-plane": "controller-manager"}},
    }


def _deployment(op: OperatorSpec, webhooks: bool) -> dict[str, Any]:
    labels = {"control-plane": "controller-manager", "app.kubernetes.io/name": op.name}
    container: dict[str, Any] = {
        "name": "manager",
        "image": op.image,
        "args": [
            "--leader-elect" if op.replicas <= 1 else f"--shard-ring={op.name}",
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
        "serviceAccountName": f"{op.name}-controller-manager",
        "terminationGracePeriodSeconds": 40,
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
    }
    if webhooks:
        container["ports"].append(
            {"name": "webhook-server", "containerPort": 9443, "protocol": "TCP"}
        )
        container["args"].append(f"--webhook-cert-dir={_CERT_DIR}")
        if op.cert_mode == "self-managed":
            # The operator writes the Secret's pair here itself (read-only root file system).
            container["args"].append(f"--webhook-cert-secret={op.namespace}/{_secret(op)}")
            container["volumeMounts"] = [{"name": "cert", "mountPath": _CERT_DIR}]
            pod_spec["volumes"] = [{"name": "cert", "emptyDir": {}}]
        else:
            container["volumeMounts"] = [{"name": "cert", "mountPath": _CERT_DIR, "readOnly": True}]
            pod_spec["volumes"] = [{"name": "cert", "secret": {"secretName": _secret(op)}}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"{op.name}-controller-manager",
            "namespace": op.namespace,
            "labels": labels,
        },
        "spec": {
            "replicas": op.replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


def _metrics_auth_role(op: OperatorSpec) -> list[dict[str, Any]]:
    """What the filter of `pyctrl.filters` needs: TokenReviews and SubjectAccessReviews."""
    role = f"{op.name}-metrics-auth-role"
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [
                PolicyRule(("authentication.k8s.io",), ("tokenreviews",), ("create",)).to_dict(),
                PolicyRule(
                    ("authorization.k8s.io",), ("subjectaccessreviews",), ("create",)
                ).to_dict(),
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{op.name}-metrics-auth-rolebinding"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": role,
            },
            "subjects": [
                {
                    "kind": "ServiceAccount",
                    "name": f"{op.name}-controller-manager",
                    "namespace": op.namespace,
                }
            ],
        },
    ]


def _metrics_reader_role(op: OperatorSpec) -> dict[str, Any]:
    """Bind it to a scraper (Prometheus' ServiceAccount) to let it read ``/metrics``."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"{op.name}-metrics-reader"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }


def _metrics_service(op: OperatorSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": f"{op.name}-controller-manager-metrics-service",
            "namespace": op.namespace,
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
                "app.kubernetes.io/name": op.name,
            },
        },
    }


def _service_monitor(op: OperatorSpec) -> dict[str, Any]:
    """A prometheus-operator ServiceMonitor for the metrics Service (kubebuilder's)."""
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {
            "name": f"{op.name}-controller-manager-metrics-monitor",
            "namespace": op.namespace,
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


def _webhook_service(op: OperatorSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{op.name}-webhook-service", "namespace": op.namespace},
        "spec": {
            "ports": [{"port": 443, "protocol": "TCP", "targetPort": 9443}],
            "selector": {
                "control-plane": "controller-manager",
                "app.kubernetes.io/name": op.name,
            },
        },
    }


def _cert_rbac(op: OperatorSpec, manager: Manager) -> list[dict[str, Any]]:
    """What self-managed certificates need: their Secret, and caBundle in what they serve."""
    mutating, validating, crds = published_names(op, manager.webhook_server)
    subject = {
        "kind": "ServiceAccount",
        "name": f"{op.name}-controller-manager",
        "namespace": op.namespace,
    }
    role = f"{op.name}-webhook-cert-role"
    rules: list[dict[str, Any]] = []
    for group, resource, names in (
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", mutating),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations", validating),
        ("apiextensions.k8s.io", "customresourcedefinitions", crds),
    ):
        if names:
            rules.append(
                {
                    "apiGroups": [group],
                    "resources": [resource],
                    "resourceNames": names,
                    "verbs": ["get", "update"],
                }
            )
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": role, "namespace": op.namespace},
            "rules": [
                # create cannot be limited by name: the Secret does not exist yet.
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
                {
                    "apiGroups": [""],
                    "resources": ["secrets"],
                    "resourceNames": [_secret(op)],
                    "verbs": ["get", "update"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": f"{op.name}-webhook-cert-rolebinding", "namespace": op.namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [subject],
        },
    ]
    if rules:
        objects += [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": role},
                "rules": rules,
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": f"{op.name}-webhook-cert-rolebinding"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [subject],
            },
        ]
    return objects


def _certificates(op: OperatorSpec) -> list[dict[str, Any]]:
    service = f"{op.name}-webhook-service"
    return [
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Issuer",
            "metadata": {"name": f"{op.name}-selfsigned-issuer", "namespace": op.namespace},
            "spec": {"selfSigned": {}},
        },
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": f"{op.name}-serving-cert", "namespace": op.namespace},
            "spec": {
                "dnsNames": [
                    f"{service}.{op.namespace}.svc",
                    f"{service}.{op.namespace}.svc.cluster.local",
                ],
                "issuerRef": {"kind": "Issuer", "name": f"{op.name}-selfsigned-issuer"},
                "secretName": _secret(op),
            },
        },
    ]


async def _offline_manager(op: OperatorSpec) -> Manager:
    # Nothing connects before start, so a placeholder address is enough to run setup.
    placeholder = Configuration(host="https://cluster.invalid")
    return await op.create_manager(placeholder)


async def manifests(op: OperatorSpec) -> dict[str, list[dict[str, Any]]]:
    """Every manifest, by file name under ``config/``.

    crd/, rbac/ (with the metrics auth and reader roles), manager/ (with the metrics
    Service), webhook/, policy/ (admission policies and bindings) and prometheus/ (a
    ServiceMonitor).
    """
    manager = await _offline_manager(op)
    server = manager.webhook_server
    cert_manager = op.cert_mode == "cert-manager"
    client = ClientConfig(
        service_name=f"{op.name}-webhook-service",
        service_namespace=op.namespace,
        cert_manager_certificate=f"{op.namespace}/{op.name}-serving-cert" if cert_manager else None,
    )
    files: dict[str, list[dict[str, Any]]] = {}
    converted = converted_kinds(server)
    by_kind: dict[tuple[str, str], list[type[CustomResource]]] = {}
    for type_ in op.types:
        info = type_.resource_info()
        by_kind.setdefault((info.group, info.kind), []).append(type_)
    for (group, _kind), versions in sorted(by_kind.items()):
        conversion = conversion_stanza(client) if (group, _kind) in converted else None
        crd = crd_for(*versions, conversion=conversion)
        if conversion is not None and cert_manager:
            crd["metadata"].setdefault("annotations", {})["cert-manager.io/inject-ca-from"] = (
                client.cert_manager_certificate
            )
        files[f"crd/{crd['metadata']['name']}.yaml"] = [crd]
    files["rbac/role.yaml"] = [_cluster_role(op, manager)]
    files["rbac/leader_election_role.yaml"] = [_leader_role(op)]
    files["rbac/service_account.yaml"] = [_service_account(op)]
    files["rbac/role_binding.yaml"] = _bindings(op)
    files["rbac/metrics_auth_role.yaml"] = _metrics_auth_role(op)
    files["rbac/metrics_reader_role.yaml"] = [_metrics_reader_role(op)]
    webhooks = bool(server.paths)
    files["manager/manager.yaml"] = [_namespace(op), _deployment(op, webhooks)]
    files["manager/metrics_service.yaml"] = [_metrics_service(op)]
    files["prometheus/monitor.yaml"] = [_service_monitor(op)]
    if op.policies:
        files["policy/policies.yaml"] = policy_manifests(op.policies)
        role = params_role(op.policies, f"{op.name}-policy-params-editor")
        if role is not None:
            files["rbac/policy_params_role.yaml"] = [role]
    if webhooks:
        files["webhook/manifests.yaml"] = [
            *webhook_configurations(server, client, name_prefix=f"{op.name}-"),
            _webhook_service(op),
            *(_certificates(op) if cert_manager else []),
        ]
        if not cert_manager:
            files["rbac/webhook_cert_role.yaml"] = _cert_rbac(op, manager)
    return files


async def render_manifests(op: OperatorSpec) -> dict[str, str]:
    """The manifests as YAML text, by relative file name (what `write_manifests` writes).

    With a ``kustomization.yaml`` in each subdirectory and ``default/`` (what
    ``kubectl kustomize config/default`` builds: the installer's objects).
    """
    files = await op.manifests()
    return {
        **{name: to_yaml(objects) for name, objects in files.items()},
        **kustomizations(files),
    }


async def write_manifests(op: OperatorSpec, directory: str | os.PathLike[str]) -> list[Path]:
    """Write every manifest under ``directory`` (``config/``); return the files written.

    Files of the generated subdirectories that are no longer produced are removed, so
    the directory always matches the Python types.
    """
    root = Path(directory)
    rendered = await op.render_manifests()
    for sub in {name.split("/", 1)[0] for name in rendered} | {
        "crd",
        "rbac",
        "manager",
        "webhook",
        "policy",
        "prometheus",
        "default",
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
