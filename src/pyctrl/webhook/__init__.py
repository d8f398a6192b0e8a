"""Webhooks: admission (defaulting, validating) and conversion, served over HTTPS.

This is controller-runtime's ``pkg/webhook`` in Python. For any kind -- a custom
resource class, a built-in kind as its kubernetes-asyncio model (``V1Pod``,
``V1Deployment``), or any GroupVersionKind as `pyctrl.resource.Unstructured` -- you
write a `Defaulter` (fill in fields) and a `Validator` (accept or deny creates, updates
and deletes), typed on that class (controller-runtime's ``CustomDefaulter`` and
``CustomValidator``), and register them; the webhook `Server`, run by the Manager,
answers the API server's AdmissionReview calls:

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

For anything else (``pods/eviction``, the DELETE of a Namespace, several kinds at one
path) an `AdmissionHandler` gets the whole `AdmissionRequest` and answers with
`allowed`, `denied`, `errored` or `patch_response`; `register_admission` serves it with
the `Rule` list it needs.

Paths follow controller-runtime's convention (`mutate_path`, `validate_path`):
``/mutate-<group with dots as dashes>-<version>-<lowercase kind>`` (the core group is
empty: ``/mutate--v1-pod``, as controller-runtime writes it); a custom path may be
given. `WebhookOptions` carries what the configuration says of each webhook: operations,
sub-resources (``status``), object and namespace selectors, ``failurePolicy``,
``sideEffects``, ``timeoutSeconds``, ``matchPolicy``, ``reinvocationPolicy`` and CEL
``matchConditions`` (`MatchCondition`).
`webhook_configurations` generates the MutatingWebhookConfiguration and
ValidatingWebhookConfiguration (and `conversion_stanza` the CRD's ``spec.conversion``)
for what is registered, pointing at a Service (production, with a cert-manager
annotation) or a URL (local development and envtest); `certs` makes a self-signed CA
and serving certificate for local development. `LocalWebhooks` and `write_local_certs`
are the local development loop against a real cluster (``pyctrl run --webhook-host``):
the cluster's API server calls the webhooks on the developer's machine while it runs.
`SecretCertificates` and `CertRotator` are certificates the operator manages itself, in
a Secret, without cert-manager (``Operator(cert_mode="self-managed")``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl.webhook._admission import (
    AdmissionHandler,
    AdmissionRequest,
    AdmissionResponse,
    AdmissionReview,
    BadReviewError,
    Defaulter,
    DefaultingHandler,
    FieldError,
    InvalidObjectError,
    RawHandler,
    SyncDefaulter,
    SyncValidator,
    UserInfo,
    ValidatingHandler,
    Validator,
    Warnings,
    allowed,
    current_request,
    denied,
    errored,
    patch_response,
)
from pyctrl.webhook._certrotator import CertRotator, RotationOptions, SecretCertificates
from pyctrl.webhook._config import (
    ClientConfig,
    MatchCondition,
    Registration,
    Rule,
    WebhookOptions,
    webhook_configurations,
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
from pyctrl.webhook._server import (
    AdmissionEndpoint,
    CertProvider,
    CertWatcher,
    Server,
    default_cert_dir,
)

if TYPE_CHECKING:
    from pyctrl.meta import GroupVersionKind
    from pyctrl.resource import CustomResource

CustomDefaulter = Defaulter
"""controller-runtime's name for `Defaulter`."""
CustomValidator = Validator
"""controller-runtime's name for `Validator`."""

__all__ = [
    "CONVERSION_DATA_ANNOTATION",
    "AdmissionHandler",
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReview",
    "CertProvider",
    "CertRotator",
    "CertWatcher",
    "ClientConfig",
    "ConversionHandler",
    "ConversionRequest",
    "ConversionResponse",
    "ConversionReview",
    "CustomDefaulter",
    "CustomValidator",
    "Defaulter",
    "FieldError",
    "InvalidObjectError",
    "LocalWebhooks",
    "MatchCondition",
    "RotationOptions",
    "Rule",
    "SecretCertificates",
    "Server",
    "Spoke",
    "SyncDefaulter",
    "SyncValidator",
    "UserInfo",
    "Validator",
    "Warnings",
    "WebhookOptions",
    "allowed",
    "conversion_stanza",
    "converted_kinds",
    "current_request",
    "default_cert_dir",
    "denied",
    "errored",
    "mutate_path",
    "patch_response",
    "register_admission",
    "register_conversion",
    "register_defaulter",
    "register_validator",
    "validate_path",
    "webhook_configurations",
    "write_local_certs",
]


def _gvk_of(type_: type[Any], gvk: GroupVersionKind | None) -> GroupVersionKind:
    from pyctrl.resource import Unstructured
    from pyctrl.scheme import default_scheme

    if gvk is not None:
        return gvk
    if type_ is Unstructured:
        raise ValueError("a webhook for Unstructured needs the GroupVersionKind it serves (gvk=)")
    return default_scheme().gvk_for(type_)


def _suffix(type_: type[Any], gvk: GroupVersionKind | None = None) -> str:
    gvk = _gvk_of(type_, gvk)
    return f"{gvk.group.replace('.', '-')}-{gvk.version}-{gvk.kind.lower()}"


def mutate_path(type_: type[Any], gvk: GroupVersionKind | None = None) -> str:
    """The defaulting webhook's path for a type: ``/mutate-<group>-<version>-<kind>``.

    ``gvk`` is required for `pyctrl.resource.Unstructured` and overrides the type's own.
    """
    return f"/mutate-{_suffix(type_, gvk)}"


def validate_path(type_: type[Any], gvk: GroupVersionKind | None = None) -> str:
    """The validating webhook's path for a type: ``/validate-<group>-<version>-<kind>``."""
    return f"/validate-{_suffix(type_, gvk)}"


def register_defaulter(
    server: Server,
    type_: type[Any],
    defaulter: Defaulter[Any] | SyncDefaulter[Any],
    *,
    gvk: GroupVersionKind | None = None,
    path: str | None = None,
    options: WebhookOptions | None = None,
) -> str:
    """Serve ``defaulter`` for ``type_`` at its mutate path (or ``path``); return the path.

    Args:
        server: The webhook server.
        type_: A custom resource class, a kubernetes-asyncio model (``V1Pod``), or
            `pyctrl.resource.Unstructured` (with ``gvk``).
        defaulter: The `Defaulter`; a `SyncDefaulter` (plain ``def``) runs in a thread.
        gvk: The kind served (required for Unstructured).
        path: A custom path (``with_defaulter_custom_path``).
        options: How the API server calls it (`WebhookOptions`).
    """
    kind = _gvk_of(type_, gvk)
    path = path or mutate_path(type_, kind)
    handler = DefaultingHandler(type_, defaulter, path, kind if gvk is not None else None)
    registration = Registration.typed(mutating=True, type_=type_, gvk=kind, options=options)
    server.register(path, AdmissionEndpoint(handler, registration))
    return path


def register_validator(
    server: Server,
    type_: type[Any],
    validator: Validator[Any] | SyncValidator[Any],
    *,
    gvk: GroupVersionKind | None = None,
    path: str | None = None,
    options: WebhookOptions | None = None,
) -> str:
    """Serve ``validator`` for ``type_`` at its validate path (or ``path``); return the path.

    The arguments are those of `register_defaulter`.
    """
    kind = _gvk_of(type_, gvk)
    path = path or validate_path(type_, kind)
    handler = ValidatingHandler(type_, validator, path, kind if gvk is not None else None)
    registration = Registration.typed(mutating=False, type_=type_, gvk=kind, options=options)
    server.register(path, AdmissionEndpoint(handler, registration))
    return path


def register_admission(
    server: Server,
    path: str,
    handler: AdmissionHandler,
    *,
    options: WebhookOptions,
    mutating: bool = False,
) -> str:
    """Serve a raw `AdmissionHandler` at ``path``; return the path.

    Args:
        server: The webhook server.
        path: Where it is served.
        handler: Gets the whole `AdmissionRequest`.
        options: Must carry ``rules`` (what the API server sends it).
        mutating: In the MutatingWebhookConfiguration (it may answer with a patch).

    Raises:
        ValueError: No rules, or a path already taken.
    """
    if not isinstance(handler, AdmissionHandler):
        raise TypeError(f"{type(handler).__name__} has no async handle(request) method")
    registration = Registration.raw(mutating=mutating, path=path, options=options)
    server.register(path, AdmissionEndpoint(RawHandler(handler, path), registration))
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
