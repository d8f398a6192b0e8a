"""Webhook configurations: what the API server is told about each admission webhook.

Each admission endpoint registered on a `pyctrl.webhook.Server` carries a
`Registration`: mutating or validating, the rules it matches and the `WebhookOptions`
(selectors, failurePolicy, sideEffects, timeoutSeconds, matchPolicy, reinvocation).
`webhook_configurations` turns them into MutatingWebhookConfiguration and
ValidatingWebhookConfiguration objects, as controller-gen does from kubebuilder's
``+kubebuilder:webhook`` markers.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pyctrl.resource import CustomResource, pluralize

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pyctrl.meta import GroupVersionKind

__all__ = [
    "ClientConfig",
    "Registration",
    "Rule",
    "WebhookOptions",
    "resource_of",
    "webhook_configurations",
]

_OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT", "*"})
_SCOPES = frozenset({"Namespaced", "Cluster", "*"})
_FAILURE_POLICIES = frozenset({"Fail", "Ignore"})
_SIDE_EFFECTS = frozenset({"None", "NoneOnDryRun"})
_MATCH_POLICIES = frozenset({"Exact", "Equivalent"})
_REINVOCATION = frozenset({"Never", "IfNeeded"})
# Built-in kinds whose resource name is not the lowercase English plural of the kind.
_IRREGULAR = {"Endpoints": "endpoints"}


def _one_of(what: str, value: str | None, allowed: frozenset[str]) -> None:
    if value is not None and value not in allowed:
        raise ValueError(f"{what} {value!r} is not one of {', '.join(sorted(allowed))}")


@dataclass(frozen=True)
class Rule:
    """One ``rules`` entry: which operations on which resources the webhook sees.

    Args:
        operations: ``CREATE``, ``UPDATE``, ``DELETE``, ``CONNECT`` or ``*``.
        api_groups: API groups (``""`` is the core group, ``*`` any).
        api_versions: Versions (``*`` any).
        resources: Resources, with a sub-resource after a slash: ``pods``,
            ``pods/status``, ``pods/eviction``, ``*/status``, ``*``.
        scope: ``Namespaced``, ``Cluster`` or ``*`` (the default).
    """

    operations: Sequence[str]
    api_groups: Sequence[str]
    api_versions: Sequence[str]
    resources: Sequence[str]
    scope: str = "*"

    def __post_init__(self) -> None:
        for op in self.operations:
            _one_of("operation", op, _OPERATIONS)
        _one_of("scope", self.scope, _SCOPES)
        for name, values in (
            ("operations", self.operations),
            ("api_groups", self.api_groups),
            ("api_versions", self.api_versions),
            ("resources", self.resources),
        ):
            if isinstance(values, str) or not values:
                raise ValueError(f"Rule.{name} must be a non-empty list, got {values!r}")

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        return {
            "apiGroups": list(self.api_groups),
            "apiVersions": list(self.api_versions),
            "operations": list(self.operations),
            "resources": list(self.resources),
            "scope": self.scope,
        }


_QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_MAX_MATCH_CONDITIONS = 64


@dataclass(frozen=True, slots=True)
class MatchCondition:
    """One ``matchConditions`` entry: a CEL expression the request must satisfy.

    The API server calls the webhook only if every condition is true; it sees
    ``object``, ``oldObject``, ``request`` (the AdmissionRequest) and ``authorizer``.
    A condition that fails to evaluate skips the webhook under ``failure_policy``
    ``Ignore`` and fails the request under ``Fail``.

    Args:
        name: A qualified name (``exclude-leases``), unique within the webhook.
        expression: The CEL expression, returning a bool
            (``!(request.userInfo.username == 'system:kube-scheduler')``).
    """

    name: str
    expression: str

    def __post_init__(self) -> None:
        if not _QUALIFIED_NAME.match(self.name):
            raise ValueError(
                f"match condition name {self.name!r} must be a qualified name "
                "(alphanumerics, '-', '_' or '.', at most 63, with an optional DNS prefix/)"
            )
        if not self.expression.strip():
            raise ValueError(f"match condition {self.name!r} needs an expression")

    def to_dict(self) -> dict[str, str]:
        """The entry as it goes on the wire."""
        return {"name": self.name, "expression": self.expression}


@dataclass(frozen=True)
class WebhookOptions:
    """How the API server calls one admission webhook (kubebuilder's webhook marker).

    Every field left at None takes the default of `webhook_configurations` (or of the
    API server). Values are checked when the options are made.

    Args:
        name: The webhook's name (a domain, e.g. ``mpod-v1.example.com``); derived from
            the kind when None.
        operations: For a typed webhook: the operations to see (default ``CREATE``,
            ``UPDATE`` for defaulting; with ``DELETE`` for validation).
        subresources: Sub-resources also sent to the webhook, e.g. ``("status",)``: a
            validator then checks status updates too (``CONNECT`` ones are not
            supported by typed webhooks: use a raw `pyctrl.webhook.AdmissionHandler`).
        resources: The resource names to match, instead of the kind's plural.
        scope: ``Namespaced``, ``Cluster`` or ``*``; a custom resource's own scope
            when None, else ``*``.
        rules: Explicit rules (a raw handler must give them; a typed one may).
        failure_policy: ``Fail`` or ``Ignore``.
        side_effects: ``None`` (default) or ``NoneOnDryRun``.
        timeout_seconds: 1 to 30.
        match_policy: ``Exact`` or ``Equivalent`` (the API server's default).
        namespace_selector: A label selector (``{"matchLabels": ...}``) on the namespace.
        object_selector: A label selector on the object (new or old).
        reinvocation_policy: For a mutating webhook: ``Never`` or ``IfNeeded``.
        admission_review_versions: The AdmissionReview versions it accepts.
        match_conditions: CEL conditions (`MatchCondition`) a request must meet for the
            webhook to be called, emitted as ``matchConditions`` (at most 64, names
            unique).
    """

    name: str | None = None
    operations: Sequence[str] | None = None
    subresources: Sequence[str] = ()
    resources: Sequence[str] | None = None
    scope: str | None = None
    rules: Sequence[Rule] | None = None
    failure_policy: str | None = None
    side_effects: str = "None"
    timeout_seconds: int | None = None
    match_policy: str | None = None
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    reinvocation_policy: str | None = None
    admission_review_versions: Sequence[str] = ("v1",)
    match_conditions: Sequence[MatchCondition] = ()

    def __post_init__(self) -> None:
        for op in self.operations or ():
            _one_of("operation", op, _OPERATIONS - {"CONNECT"})
        for sub in self.subresources:
            if not sub or "/" in sub:
                raise ValueError(f"sub-resource {sub!r} must be a name such as 'status'")
        _one_of("scope", self.scope, _SCOPES)
        _one_of("failure_policy", self.failure_policy, _FAILURE_POLICIES)
        _one_of("side_effects", self.side_effects, _SIDE_EFFECTS)
        _one_of("match_policy", self.match_policy, _MATCH_POLICIES)
        _one_of("reinvocation_policy", self.reinvocation_policy, _REINVOCATION)
        if self.timeout_seconds is not None and not 1 <= self.timeout_seconds <= 30:
            raise ValueError(f"timeout_seconds must be within 1..30, got {self.timeout_seconds}")
        for what, selector in (
            ("namespace_selector", self.namespace_selector),
            ("object_selector", self.object_selector),
        ):
            if selector is not None and not set(selector) <= {"matchLabels", "matchExpressions"}:
                raise ValueError(
                    f"{what} takes matchLabels and matchExpressions, got {sorted(selector)}"
                )
        if "v1" not in self.admission_review_versions:
            raise ValueError("admission_review_versions must include 'v1' (what pyctrl answers)")
        names = [c.name for c in self.match_conditions]
        if len(names) > _MAX_MATCH_CONDITIONS:
            raise ValueError(f"at most {_MAX_MATCH_CONDITIONS} match_conditions, got {len(names)}")
        if len(set(names)) != len(names):
            raise ValueError(f"match_conditions names must be unique, got {names}")


def resource_of(type_: type[Any], gvk: GroupVersionKind) -> str:
    """The resource name (plural) of a type: its CRD's plural, or the kind's plural."""
    if isinstance(type_, type) and issubclass(type_, CustomResource):
        return type_.resource_info().plural
    return _IRREGULAR.get(gvk.kind, pluralize(gvk.kind))


@dataclass(frozen=True)
class Registration:
    """What `webhook_configurations` needs to know of one admission endpoint.

    Args:
        mutating: A MutatingWebhookConfiguration entry (else validating).
        name: The webhook's name.
        rules: The rules, as they go on the wire.
        options: The rest of the configuration.
    """

    mutating: bool
    name: str
    rules: list[dict[str, Any]]
    options: WebhookOptions = field(default_factory=WebhookOptions)

    @classmethod
    def typed(
        cls,
        *,
        mutating: bool,
        type_: type[Any],
        gvk: GroupVersionKind,
        options: WebhookOptions | None,
    ) -> Registration:
        """The registration of a `Defaulter` or `Validator` of ``type_`` (``gvk``)."""
        options = options or WebhookOptions()
        if options.rules is not None:
            rules = [r.to_dict() for r in options.rules]
        else:
            plural = resource_of(type_, gvk)
            scope = options.scope
            if scope is None and isinstance(type_, type) and issubclass(type_, CustomResource):
                scope = "Namespaced" if type_.resource_info().namespaced else "Cluster"
            default_ops = ["CREATE", "UPDATE"] if mutating else ["CREATE", "UPDATE", "DELETE"]
            resources = list(options.resources or [plural])
            resources += [f"{r}/{sub}" for r in list(resources) for sub in options.subresources]
            rules = [
                Rule(
                    operations=list(options.operations or default_ops),
                    api_groups=[gvk.group],
                    api_versions=[gvk.version],
                    resources=resources,
                    scope=scope or "*",
                ).to_dict()
            ]
        name = options.name or (
            f"{'m' if mutating else 'v'}{gvk.kind.lower()}-{gvk.version}."
            f"{gvk.group or 'core.pyctrl.dev'}"
        )
        return cls(mutating=mutating, name=name, rules=rules, options=options)

    @classmethod
    def raw(cls, *, mutating: bool, path: str, options: WebhookOptions) -> Registration:
        """The registration of a raw handler: ``options.rules`` are required."""
        if not options.rules:
            raise ValueError(f"the raw admission handler at {path} needs WebhookOptions(rules=...)")
        name = options.name or f"{path.strip('/').replace('/', '-')}.pyctrl.dev"
        return cls(
            mutating=mutating,
            name=name,
            rules=[r.to_dict() for r in options.rules],
            options=options,
        )

    def webhook(
        self, path: str, client: ClientConfig, failure_policy: str, timeout_seconds: int
    ) -> dict[str, Any]:
        """The ``webhooks`` entry, with ``path`` reached through ``client``."""
        options = self.options
        out: dict[str, Any] = {
            "name": self.name,
            "admissionReviewVersions": list(options.admission_review_versions),
            "clientConfig": client.for_path(path),
            "failurePolicy": options.failure_policy or failure_policy,
        }
        if options.match_policy is not None:
            out["matchPolicy"] = options.match_policy
        if options.namespace_selector is not None:
            out["namespaceSelector"] = dict(options.namespace_selector)
        if options.object_selector is not None:
            out["objectSelector"] = dict(options.object_selector)
        if self.mutating and options.reinvocation_policy is not None:
            out["reinvocationPolicy"] = options.reinvocation_policy
        if options.match_conditions:
            out["matchConditions"] = [c.to_dict() for c in options.match_conditions]
        out["rules"] = self.rules
        out["sideEffects"] = options.side_effects
        out["timeoutSeconds"] = options.timeout_seconds or timeout_seconds
        return out


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """How the API server reaches the webhook server: a Service or a URL base.

    Args:
        service_name: The Service in front of the webhook server (production).
        service_namespace: Its namespace.
        service_port: Its port (443 by default, as kubebuilder scaffolds).
        url: ``https://host:port`` instead of a Service (local development, envtest).
        ca_bundle: PEM of the CA that signed the serving certificate; empty when
            cert-manager injects it (see ``cert_manager_certificate``).
        cert_manager_certificate: ``namespace/name`` of a cert-manager Certificate whose
            CA is injected through the ``cert-manager.io/inject-ca-from`` annotation.
    """

    service_name: str = "webhook-service"
    service_namespace: str = "system"
    service_port: int = 443
    url: str | None = None
    ca_bundle: bytes = b""
    cert_manager_certificate: str | None = None

    def for_path(self, path: str) -> dict[str, Any]:
        """The ``clientConfig`` for a webhook path."""
        config: dict[str, Any]
        if self.url:
            config = {"url": self.url.rstrip("/") + path}
        else:
            config = {
                "service": {
                    "name": self.service_name,
                    "namespace": self.service_namespace,
                    "path": path,
                    "port": self.service_port,
                }
            }
        if self.ca_bundle:
            config["caBundle"] = base64.b64encode(self.ca_bundle).decode()
        return config

    def metadata(self, name: str) -> dict[str, Any]:
        """Object metadata, with the cert-manager annotation when configured."""
        meta: dict[str, Any] = {"name": name}
        if self.cert_manager_certificate:
            meta["annotations"] = {"cert-manager.io/inject-ca-from": self.cert_manager_certificate}
        return meta


class ServedPaths(Protocol):
    """What `webhook_configurations` reads of a webhook `Server`: its paths and handlers."""

    @property
    def paths(self) -> list[str]:
        """The registered paths."""

    def handler_at(self, path: str) -> Any:
        """The handler registered at ``path``, if any."""


def webhook_configurations(
    server: ServedPaths,
    client: ClientConfig,
    *,
    name_prefix: str = "",
    failure_policy: str = "Fail",
    timeout_seconds: int = 10,
) -> list[dict[str, Any]]:
    """The Mutating/ValidatingWebhookConfiguration objects for what ``server`` serves.

    Returns one MutatingWebhookConfiguration and one ValidatingWebhookConfiguration
    (each only if it has webhooks), named ``<prefix>mutating-webhook-configuration`` and
    ``<prefix>validating-webhook-configuration`` as kubebuilder names them; webhooks in
    path order. ``failure_policy`` and ``timeout_seconds`` apply where a webhook's
    `WebhookOptions` leave them unset.
    """
    mutating: list[dict[str, Any]] = []
    validating: list[dict[str, Any]] = []
    for path in server.paths:
        registration = getattr(server.handler_at(path), "registration", None)
        if not isinstance(registration, Registration):
            continue
        webhook = registration.webhook(path, client, failure_policy, timeout_seconds)
        (mutating if registration.mutating else validating).append(webhook)
    out = []
    for kind, webhooks, name in (
        ("MutatingWebhookConfiguration", mutating, "mutating-webhook-configuration"),
        ("ValidatingWebhookConfiguration", validating, "validating-webhook-configuration"),
    ):
        if webhooks:
            out.append(
                {
                    "apiVersion": "admissionregistration.k8s.io/v1",
                    "kind": kind,
                    "metadata": client.metadata(f"{name_prefix}{name}"),
                    "webhooks": webhooks,
                }
            )
    return out
