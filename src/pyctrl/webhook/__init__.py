"""Webhooks: admission (defaulting, validating) and conversion, served over HTTPS.

This is controller-runtime's ``pkg/webhook`` in Python. For a custom resource type you
write a `Defaulter` (fill in fields) and a `Validator` (accept or deny creates, updates
and deletes), both typed on your pydantic class, and register them; the webhook
`Server`, run by the Manager, answers the API server's AdmissionReview calls:

- defaulting answers with a JSON patch from the object as sent to the object as your
  ``default`` left it;
- validation raises `InvalidObjectError` (with `FieldError` causes) to deny, and may
  return warnings that reach the client (kubectl prints them);
- `current_request()` gives the AdmissionRequest (user info, dry run) to user code;
- an exception from user code denies the request with its message (code 500) and is
  counted in ``controller_runtime_webhook_panics_total``.

Conversion between versions is hub and spoke: one version (the hub) is what every
other converts through; each other version implements `Spoke` (``to_hub`` and
``from_hub``). `ConversionHandler` serves ``/convert`` (`ConversionReview` is the wire
format); a conversion that raises answers a ``Failure`` result with the message, and an
exception other than ``ValueError``, ``TypeError``, ``RecursionError`` or a pydantic
``ValidationError`` is counted in ``controller_runtime_conversion_webhook_panics_total``.

Paths follow controller-runtime's convention (`mutate_path`, `validate_path`):
``/mutate-<group with dots as dashes>-<version>-<lowercase kind>``.
`webhook_configurations` generates the MutatingWebhookConfiguration and
ValidatingWebhookConfiguration (and `conversion_stanza` the CRD's ``spec.conversion``)
for what is registered, pointing at a Service (production, with a cert-manager
annotation) or a URL (local development and envtest); `certs` makes a self-signed CA
and serving certificate for local development. `LocalWebhooks` and `write_local_certs`
are the local development loop against a real cluster (``pyctrl run --webhook-host``):
the cluster's API server calls the webhooks on the developer's machine while it runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyctrl.webhook._admission import (
    AdmissionRequest,
    AdmissionResponse,
    AdmissionReview,
    BadReviewError,
    Defaulter,
    DefaultingHandler,
    FieldError,
    InvalidObjectError,
    UserInfo,
    ValidatingHandler,
    Validator,
    Warnings,
    current_request,
)
from pyctrl.webhook._conversion import (
    CONVERSION_DATA_ANNOTATION,
    ConversionHandler,
    ConversionRequest,
    ConversionResponse,
    ConversionReview,
    Spoke,
)
from pyctrl.webhook._local import LocalWebhooks, write_local_certs
from pyctrl.webhook._server import AdmissionEndpoint, CertWatcher, Server, default_cert_dir

if TYPE_CHECKING:
    from pyctrl.resource import CustomResource

__all__ = [
    "CONVERSION_DATA_ANNOTATION",
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReview",
    "CertWatcher",
    "ClientConfig",
    "ConversionHandler",
    "ConversionRequest",
    "ConversionResponse",
    "ConversionReview",
    "Defaulter",
    "FieldError",
    "InvalidObjectError",
    "LocalWebhooks",
    "Server",
    "Spoke",
    "UserInfo",
    "Validator",
    "Warnings",
    "conversion_stanza",
    "converted_kinds",
    "current_request",
    "default_cert_dir",
    "mutate_path",
    "register_conversion",
    "register_defaulter",
    "register_validator",
    "validate_path",
    "webhook_configurations",
    "write_local_certs",
]


def _suffix(type_: type[CustomResource]) -> str:
    gvk = type_.gvk()
    return f"{gvk.group.replace('.', '-')}-{gvk.version}-{gvk.kind.lower()}"


def mutate_path(type_: type[CustomResource]) -> str:
    """The defaulting webhook's path for a type: ``/mutate-<group>-<version>-<kind>``."""
    return f"/mutate-{_suffix(type_)}"


def validate_path(type_: type[CustomResource]) -> str:
    """The validating webhook's path for a type: ``/validate-<group>-<version>-<kind>``."""
    return f"/validate-{_suffix(type_)}"


def register_defaulter(
    server: Server, type_: type[CustomResource], defaulter: Defaulter[Any]
) -> str:
    """Serve ``defaulter`` for ``type_`` at its mutate path; return the path."""
    path = mutate_path(type_)
    server.register(path, AdmissionEndpoint(DefaultingHandler(type_, defaulter, path)))
    return path


def register_validator(
    server: Server, type_: type[CustomResource], validator: Validator[Any]
) -> str:
    """Serve ``validator`` for ``type_`` at its validate path; return the path."""
    path = validate_path(type_)
    server.register(path, AdmissionEndpoint(ValidatingHandler(type_, validator, path)))
    return path


def register_conversion(
    server: Server, hub: type[CustomResource], spokes: list[type[CustomResource]]
) -> str:
    """Serve conversion for ``hub`` and its ``spokes`` at ``/convert``; return the path.

    One ``/convert`` endpoint serves every kind, as in controller-runtime: registering
    another kind adds its versions to the same handler.
    """
    existing = server.handler_at("/convert")
    if isinstance(existing, _MultiKindConversion):
        existing.add(ConversionHandler(hub, spokes))
    else:
        multi = _MultiKindConversion()
        multi.add(ConversionHandler(hub, spokes))
        server.register("/convert", multi)
    return "/convert"


class _MultiKindConversion:
    """Dispatches a ConversionReview to the handler of the objects' kind."""

    name = "/convert"

    def __init__(self) -> None:
        self.by_kind: dict[tuple[str, str], ConversionHandler] = {}

    def add(self, handler: ConversionHandler) -> None:
        gvk = handler.hub.gvk()
        self.by_kind[(gvk.group, gvk.kind)] = handler

    async def review(self, body: Any) -> Any:
        request = body.get("request") if isinstance(body, dict) else None
        objects = request.get("objects") if isinstance(request, dict) else None
        kinds = (
            {
                (str(o.get("apiVersion", "")).rpartition("/")[0], str(o.get("kind", "")))
                for o in objects or ()
                if isinstance(o, dict)
            }
            if isinstance(objects, list)
            else set()
        )
        if len(kinds) > 1:
            raise BadReviewError(f"a ConversionReview mixes kinds: {sorted(kinds)}")
        handler = self.by_kind.get(next(iter(kinds))) if kinds else None
        if kinds and handler is None:
            raise BadReviewError(f"no conversion registered for {sorted(kinds)}")
        # Without objects to go by, any handler validates the review's shape and answers.
        return await (handler or next(iter(self.by_kind.values()))).review(body)


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
        import base64

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


def _webhook(
    *,
    path: str,
    type_: type[CustomResource],
    prefix: str,
    operations: list[str],
    client: ClientConfig,
    failure_policy: str,
    timeout: int,
) -> dict[str, Any]:
    info = type_.resource_info()
    return {
        "name": f"{prefix}{info.kind.lower()}-{info.version}.{info.group}",
        "admissionReviewVersions": ["v1"],
        "clientConfig": client.for_path(path),
        "failurePolicy": failure_policy,
        "sideEffects": "None",
        "timeoutSeconds": timeout,
        "rules": [
            {
                "apiGroups": [info.group],
                "apiVersions": [info.version],
                "operations": operations,
                "resources": [info.plural],
                "scope": "Namespaced" if info.namespaced else "Cluster",
            }
        ],
    }


def webhook_configurations(
    server: Server,
    client: ClientConfig,
    *,
    name_prefix: str = "",
    failure_policy: str = "Fail",
    timeout_seconds: int = 10,
) -> list[dict[str, Any]]:
    """The Mutating/ValidatingWebhookConfiguration objects for what ``server`` serves.

    Returns one MutatingWebhookConfiguration and one ValidatingWebhookConfiguration
    (each only if it has webhooks), named ``<prefix>mutating-webhook-configuration`` and
    ``<prefix>validating-webhook-configuration`` as kubebuilder names them.
    """
    mutating: list[dict[str, Any]] = []
    validating: list[dict[str, Any]] = []
    for path in server.paths:
        endpoint = server.handler_at(path)
        handler = getattr(endpoint, "handler", None)
        if isinstance(handler, DefaultingHandler):
            mutating.append(
                _webhook(
                    path=path,
                    type_=handler.type,
                    prefix="m",
                    operations=["CREATE", "UPDATE"],
                    client=client,
                    failure_policy=failure_policy,
                    timeout=timeout_seconds,
                )
            )
        elif isinstance(handler, ValidatingHandler):
            validating.append(
                _webhook(
                    path=path,
                    type_=handler.type,
                    prefix="v",
                    operations=["CREATE", "UPDATE", "DELETE"],
                    client=client,
                    failure_policy=failure_policy,
                    timeout=timeout_seconds,
                )
            )
    out = []
    if mutating:
        out.append(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "MutatingWebhookConfiguration",
                "metadata": client.metadata(f"{name_prefix}mutating-webhook-configuration"),
                "webhooks": mutating,
            }
        )
    if validating:
        out.append(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": client.metadata(f"{name_prefix}validating-webhook-configuration"),
                "webhooks": validating,
            }
        )
    return out


def converted_kinds(server: Server) -> set[tuple[str, str]]:
    """The (group, kind) pairs whose conversion ``server`` serves at ``/convert``."""
    endpoint = server.handler_at("/convert")
    handlers: list[ConversionHandler] = list(getattr(endpoint, "by_kind", {}).values())
    return {(h.hub.gvk().group, h.hub.gvk().kind) for h in handlers}


def conversion_stanza(client: ClientConfig) -> dict[str, Any]:
    """The CRD ``spec.conversion`` for the ``/convert`` webhook."""
    return {
        "strategy": "Webhook",
        "webhook": {
            "conversionReviewVersions": ["v1"],
            "clientConfig": client.for_path("/convert"),
        },
    }
