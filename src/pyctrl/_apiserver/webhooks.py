"""Admission and conversion webhooks, called by the embedded API server as kube-apiserver does.

A cluster extends its API server with webhooks: HTTPS endpoints that kube-apiserver calls
while it serves a request. *Mutating admission webhooks* (MutatingWebhookConfiguration)
may change an object before it is validated and stored, by answering with a JSON patch;
*validating admission webhooks* (ValidatingWebhookConfiguration) may deny a write, with a
``Status`` the client sees; both may add warnings, which reach the client as
``Warning: 299 - "<text>"`` response headers (kubectl prints them). A
CustomResourceDefinition whose ``spec.conversion.strategy`` is ``Webhook`` has its
objects converted between versions by a *conversion webhook* (ConversionReview).

This module makes the embedded API server do the same, so that webhooks written with
`pyctrl.webhook` (or any other webhook server) run end to end in tests and under
``kubectl``:

- `WebhookDispatcher` is the server's `AdmissionHook`: on every write it reads the
  stored webhook configurations (parsed once per resourceVersion), picks the webhooks
  whose rules, ``namespaceSelector`` and ``objectSelector`` match, sends each an
  ``admission.k8s.io/v1`` AdmissionReview (``v1beta1`` when that is all the webhook
  accepts) and applies the answers;
- `WebhookConverter` is the server's `ConversionHook` for CRDs with a Webhook strategy;
- `install` plugs both into an `APIServer`.

What kube-apiserver does, and so this module (k8s.io/apiserver
pkg/admission/plugin/webhook, apiextensions-apiserver pkg/apiserver/conversion):

- Configurations are taken in name order, webhooks in their order within one.
  Webhook configuration objects themselves (and admission policies) are never sent
  to webhooks, so a broken webhook cannot lock its own configuration.
- Rules match on ``operations``, ``apiGroups``, ``apiVersions``, ``resources`` (``*``,
  ``pods/status``, ``*/status``, ``pods/*``) and ``scope`` (a Namespace object counts as
  cluster-scoped). With ``matchPolicy: Equivalent`` (the default) a rule written for
  another version of the same resource also matches: the object is converted to that
  version for the webhook (through the conversion webhook for such CRDs) and, for a
  mutating webhook, the patched object converted back.
- ``namespaceSelector`` matches the labels of the request's namespace (for a Namespace
  object, its own labels); cluster-scoped objects always match. ``objectSelector``
  matches the labels of the new or the old object.
- Mutating webhooks run one after another; each answer's base64 JSON patch is applied
  to the object. ``reinvocationPolicy: IfNeeded``: when a later webhook changed the
  object, the earlier IfNeeded webhooks that were called run once more (one extra
  round, as kube-apiserver's admission chain does; built-in admission plugins do not
  exist here, so only webhook changes count).
- Validating webhooks run concurrently; the first denial (in completion order) is
  what the client gets.
- A denial is the webhook's ``Status`` with its message prefixed by
  ``admission webhook "<name>" denied the request: ``; a code below 400 becomes 400
  (kube-apiserver 1.32; newer releases answer 403 and prefix the resource and name).
- A failed call (connection refused, TLS error, timeout, non-2xx answer, malformed
  review) is subject to ``failurePolicy``: ``Fail`` (default) answers 500
  ``Internal error occurred: failed calling webhook "<name>": failed to call webhook:
  Post "<url>?timeout=10s": ...``; ``Ignore`` skips the webhook (logged).
- ``timeoutSeconds`` (default 10) bounds each call; the URL carries ``?timeout=Ns``.
- On a dry-run request a webhook whose ``sideEffects`` is not ``None`` or
  ``NoneOnDryRun`` makes the request fail with 400 ``admission webhook "<name>" does
  not support dry run``.
- Warnings in answers are added to the response. The server's write path takes them
  from ``request.warnings`` when the `AdmissionRequest` carries such a list; on a
  denial they also go into the error's ``Warning`` header.
- The server certificate is verified against ``caBundle`` (the system roots without
  one). ``clientConfig.url`` is the usual envtest case. A ``service`` cannot be reached
  without cluster DNS: `install` takes ``services``, a map from ``"<namespace>/<name>"``
  to a base URL (``https://127.0.0.1:9443``); the certificate is still checked for the
  Service's name ``<name>.<namespace>.svc``, as in a cluster. An unmapped Service fails
  like an unresolvable host, with a hint.
- Conversion sends only objects not yet at the desired version, checks the answer
  (uid, count, apiVersion, kind, name, namespace, uid of every object), keeps the
  original metadata except labels and annotations, and fails the request with 500
  ``conversion webhook for <group/version>, Kind=<Kind> failed: ...``. The call is
  bounded at 30 seconds (kube-apiserver's webhook client timeout).

Not done: ``matchConditions`` (CEL) are not evaluated; a matching webhook that has
them fails the request with an error saying so. Webhook configurations are not
validated when stored (kube-apiserver rejects, for instance, ``sideEffects: Some`` in
``admissionregistration.k8s.io/v1``); such values are honoured here as far as they
make sense. Each call opens a fresh connection (no keep-alive), which costs a TLS
handshake per call.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import ssl
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import aiohttp
import jsonpatch
import jsonpointer
import orjson

from pyctrl._apiextensions.gofmt import go_quote as _quote
from pyctrl._apiextensions.gofmt import go_type
from pyctrl._apiserver.apimachinery.errors import (
    Cause,
    StatusError,
    bad_request,
    internal,
    not_found,
)
from pyctrl._apiserver.apimachinery.fields import (
    LabelSelector,
    SelectorError,
    label_value_problem,
    qualified_name_problem,
    selector_from_object,
)
from pyctrl._apiserver.registry.meta import CRDS, NAMESPACES

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyctrl._apiserver.admission.interfaces import AdmissionRequest
    from pyctrl._apiserver.endpoints.server import APIServer
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import StorageKey

__all__ = [
    "CONVERSION_TIMEOUT_SECONDS",
    "DEFAULT_TIMEOUT_SECONDS",
    "WebhookConverter",
    "WebhookDispatcher",
    "install",
]

logger = logging.getLogger("pyctrl.envtest.webhooks")

DEFAULT_TIMEOUT_SECONDS = 10
"""``timeoutSeconds`` of an admission webhook that does not set it."""

CONVERSION_TIMEOUT_SECONDS = 30
"""How long a conversion webhook may take (kube-apiserver's webhook client timeout)."""

MUTATING: StorageKey = ("admissionregistration.k8s.io", "mutatingwebhookconfigurations")
VALIDATING: StorageKey = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")

# IsExemptAdmissionConfigurationResource: webhooks never see these, so a broken webhook
# cannot prevent its own configuration from being fixed or removed.
_EXEMPT_KINDS = frozenset(
    {
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
    }
)
_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, */*",
    "User-Agent": "kube-apiserver-admission",
}


# --- errors -------------------------------------------------------------------------------


class _CallFailedError(Exception):
    """The HTTP exchange failed; the message is worded as client-go words it."""


class _CallingWebhookError(Exception):
    """kube-apiserver's ``ErrCallingWebhook``: the webhook's ``failurePolicy`` decides."""

    def __init__(self, webhook: str, reason: str) -> None:
        super().__init__(f"failed calling webhook {_quote(webhook)}: {reason}")
        self.webhook = webhook


def _warning_header(warnings: list[str]) -> str:
    return ", ".join(
        '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"' for w in warnings
    )


def _denial(webhook: str, status: Any) -> StatusError:
    """``webhookerrors.ToStatusErr``: the webhook's Status, its message prefixed."""
    result: dict[str, Any] = status if isinstance(status, dict) else {}
    try:
        code = int(result.get("code") or 0)
    except (TypeError, ValueError):
        code = 0
    # kube-apiserver never lets a rejection look like a success.
    code = max(code, 400)
    reason = str(result.get("reason") or "")
    message = str(result.get("message") or "")
    denied = f"admission webhook {_quote(webhook)} denied the request"
    if message:
        text = f"{denied}: {message}"
    elif reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    details = result.get("details")
    details = details if isinstance(details, dict) else {}
    causes = [
        Cause(str(c.get("reason") or ""), str(c.get("message") or ""), str(c.get("field") or ""))
        for c in details.get("causes") or []
        if isinstance(c, dict)
    ]
    retry = details.get("retryAfterSeconds")
    return StatusError(
        code,
        reason,
        text,
        name=str(details.get("name") or ""),
        group=str(details.get("group") or ""),
        kind=str(details.get("kind") or ""),
        uid=str(details.get("uid") or ""),
        causes=causes,
        retry_after=retry if isinstance(retry, int) and not isinstance(retry, bool) else None,
        details=False,
    )


def _unexpected_status(status: int, content_type: str, body: bytes) -> str:
    """client-go's error for a non-2xx answer (``NewGenericServerResponse``)."""
    try:
        decoded = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return str(decoded.get("message") or "")
    server_message = "unknown"
    if content_type == "text/plain":
        server_message = body[:1024].decode(errors="replace").strip()
    fixed = {
        400: "the server rejected our request for an unknown reason",
        401: "the server has asked for the client to provide credentials",
        404: "the server could not find the requested resource",
        405: "the server does not allow this method on the requested resource",
        409: "the server reported a conflict",
        422: "the server rejected our request due to an error in our request",
        429: "the server has received too many requests and has asked us to try again later",
        503: "the server is currently unable to handle the request",
        504: "the server was unable to return a response in the time allotted, but may still "
        "be processing the request",
    }
    if status in fixed:
        return fixed[status]
    if status in (403, 415):
        return server_message
    if status >= 500:
        return (
            f"an error on the server ({_quote(server_message)}) has prevented the request "
            "from succeeding"
        )
    return f"the server responded with the status code {status} but did not return more information"


# --- HTTPS client -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    """Where one call goes: the URL shown in errors, the URL dialled, TLS settings."""

    shown_url: str
    dial_url: str
    host_port: str
    ssl: ssl.SSLContext
    server_hostname: str | None
    unresolved: str = ""
    """Set when the host cannot be reached at all (an unmapped Service)."""


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Client:
    """Posts reviews over HTTPS, verifying the server with the configuration's caBundle."""

    def __init__(self, services: Mapping[str, str] | None) -> None:
        self.services: dict[str, str] = dict(services or {})
        self._contexts: dict[str, ssl.SSLContext] = {}

    def _context(self, ca_bundle: Any) -> ssl.SSLContext:
        key = ca_bundle if isinstance(ca_bundle, str) else ""
        context = self._contexts.get(key)
        if context is not None:
            return context
        if not key:
            context = ssl.create_default_context()
        else:
            try:
                pem = base64.b64decode(key, validate=True).decode()
            except (binascii.Error, UnicodeDecodeError) as exc:
                raise ValueError(f"caBundle is not base64-encoded PEM: {exc}") from None
            try:
                context = ssl.create_default_context(cadata=pem)
            except (ssl.SSLError, ValueError) as exc:
                raise ValueError(f"unable to load root certificates: {exc}") from None
        self._contexts[key] = context
        return context

    def target(self, client_config: Any, timeout: int) -> _Target:
        """Resolve a ``clientConfig``; ValueError (worded for the user) when it is unusable."""
        if not isinstance(client_config, dict):
            raise ValueError("clientConfig must be an object with url or service")
        context = self._context(client_config.get("caBundle"))
        query = f"?timeout={timeout}s"
        url = client_config.get("url")
        service = client_config.get("service")
        if isinstance(url, str) and url:
            parts = urlsplit(url)
            if parts.scheme != "https":
                raise ValueError(f"webhook url {_quote(url)} must use the https scheme")
            if not parts.hostname:
                raise ValueError(f"webhook url {_quote(url)} has no host")
            if parts.query or parts.fragment:
                raise ValueError(f"webhook url {_quote(url)} may not have a query or a fragment")
            port = parts.port or 443
            full = url + query
            return _Target(full, full, _host_port(parts.hostname, port), context, None)
        if isinstance(service, dict):
            name = str(service.get("name") or "")
            namespace = str(service.get("namespace") or "")
            if not name or not namespace:
                raise ValueError("clientConfig.service needs a name and a namespace")
            path = str(service.get("path") or "")
            port = int(service.get("port") or 443)
            host = f"{name}.{namespace}.svc"
            shown = f"https://{host}:{port}{path}{query}"
            base = self.services.get(f"{namespace}/{name}")
            if base is None:
                return _Target(
                    shown,
                    shown,
                    _host_port(host, port),
                    context,
                    host,
                    unresolved=(
                        f"dial tcp: lookup {host}: no such host (the embedded API server "
                        "cannot resolve Service names: use clientConfig.url, or map the "
                        f'Service with install(server, services={{"{namespace}/{name}": '
                        '"https://127.0.0.1:<port>"}))'
                    ),
                )
            dial = base.rstrip("/") + path + query
            dial_parts = urlsplit(dial)
            return _Target(
                shown,
                dial,
                _host_port(dial_parts.hostname or "", dial_parts.port or 443),
                context,
                host,
            )
        raise ValueError("clientConfig must set url or service")

    async def post(self, target: _Target, body: Any, seconds: float) -> Any:
        """POST ``body`` as JSON; return the decoded answer or raise `_CallFailedError`."""
        shown = f"Post {_quote(target.shown_url)}"
        if target.unresolved:
            raise _CallFailedError(f"{shown}: {target.unresolved}")
        data = orjson.dumps(body)
        try:
            async with asyncio.timeout(seconds):
                connector = aiohttp.TCPConnector(ssl=target.ssl, force_close=True)
                async with (
                    aiohttp.ClientSession(
                        connector=connector, timeout=aiohttp.ClientTimeout(total=None)
                    ) as session,
                    session.post(
                        target.dial_url,
                        data=data,
                        headers=_HEADERS,
                        server_hostname=target.server_hostname,
                    ) as response,
                ):
                    raw = await response.read()
                    status, content_type = response.status, response.content_type
        except TimeoutError:
            raise _CallFailedError(f"{shown}: context deadline exceeded") from None
        except aiohttp.ClientError as exc:
            raise _CallFailedError(f"{shown}: {self._describe(exc, target)}") from None
        if not 200 <= status <= 206:
            raise _CallFailedError(_unexpected_status(status, content_type, raw))
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _CallFailedError(f"couldn't get version/kind; json parse error: {exc}") from None

    @staticmethod
    def _describe(exc: aiohttp.ClientError, target: _Target) -> str:  # noqa: PLR0911 - one message per client error, as the webhook client words them
        """The transport error as Go's net/http and crypto/tls word it."""
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            cert_error = exc.certificate_error
            text = str(getattr(cert_error, "verify_message", "") or cert_error)
            if "mismatch" in text.lower():
                host = target.server_hostname or target.host_port.rsplit(":", 1)[0].strip("[]")
                return (
                    f"tls: failed to verify certificate: x509: certificate is not valid for {host}"
                )
            if "local issuer" in text or "self-signed" in text or "self signed" in text:
                return (
                    "tls: failed to verify certificate: x509: certificate signed by unknown "
                    "authority"
                )
            return f"tls: failed to verify certificate: {text}"
        if isinstance(exc, aiohttp.ClientSSLError):
            return f"remote error: tls: {exc}"
        if isinstance(exc, aiohttp.ClientConnectorDNSError):
            return f"dial tcp: lookup {target.host_port.rsplit(':', 1)[0]}: no such host"
        if isinstance(exc, aiohttp.ClientConnectorError):
            os_error = exc.os_error
            if isinstance(os_error, ConnectionRefusedError):
                return f"dial tcp {target.host_port}: connect: connection refused"
            return f"dial tcp {target.host_port}: {os_error.strerror or os_error}"
        if isinstance(exc, aiohttp.ServerDisconnectedError):
            return "EOF"
        return str(exc) or type(exc).__name__


# --- webhook configurations -------------------------------------------------------------------


@dataclass(frozen=True)
class _Hook:
    """One webhook of a stored configuration, parsed."""

    name: str
    uid: str
    rules: tuple[dict[str, Any], ...]
    equivalent: bool
    namespace_selector: LabelSelector | None
    object_selector: LabelSelector | None
    namespace_selector_error: str
    object_selector_error: str
    ignore_failures: bool
    side_effects: str | None
    timeout: int
    reinvoke_if_needed: bool
    client_config: Any
    review_versions: tuple[str, ...]
    has_match_conditions: bool


def _selector(raw: Any) -> tuple[LabelSelector | None, str]:
    if raw is None:
        # kube-apiserver defaults both selectors to {} (everything): null never reaches it.
        return None, ""
    if not isinstance(raw, dict):
        return None, f"invalid label selector: {raw!r}"
    try:
        return selector_from_object(raw), ""
    except SelectorError as exc:
        return None, str(exc)


def _parse_configuration(config: dict[str, Any]) -> list[_Hook]:
    config_name = str((config.get("metadata") or {}).get("name") or "")
    hooks: list[_Hook] = []
    for index, raw in enumerate(config.get("webhooks") or []):
        if not isinstance(raw, dict):
            continue
        name = str(raw.get("name") or "")
        ns_selector, ns_error = _selector(raw.get("namespaceSelector"))
        obj_selector, obj_error = _selector(raw.get("objectSelector"))
        timeout = raw.get("timeoutSeconds")
        side_effects = raw.get("sideEffects")
        hooks.append(
            _Hook(
                name=name,
                uid=f"{config_name}/{name}/{index}",
                rules=tuple(r for r in raw.get("rules") or [] if isinstance(r, dict)),
                equivalent=(raw.get("matchPolicy") or "Equivalent") == "Equivalent",
                namespace_selector=ns_selector,
                object_selector=obj_selector,
                namespace_selector_error=ns_error,
                object_selector_error=obj_error,
                ignore_failures=raw.get("failurePolicy") == "Ignore",
                side_effects=side_effects if isinstance(side_effects, str) else None,
                timeout=timeout
                if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > 0
                else DEFAULT_TIMEOUT_SECONDS,
                reinvoke_if_needed=raw.get("reinvocationPolicy") == "IfNeeded",
                client_config=raw.get("clientConfig"),
                review_versions=tuple(
                    str(v) for v in raw.get("admissionReviewVersions") or [] if isinstance(v, str)
                ),
                has_match_conditions=bool(raw.get("matchConditions")),
            )
        )
    return hooks


def _matches_any(items: Any, requested: str) -> bool:
    return isinstance(items, list) and any(i in ("*", requested) for i in items)


def _is_namespace_resource(rt: ResourceType) -> bool:
    return rt.group == "" and rt.version == "v1" and rt.plural == "namespaces"


def _rule_matches(  # noqa: PLR0911 - a rule's match: operations, groups, versions, resources, scope
    rule: dict[str, Any], rt: ResourceType, subresource: str, operation: str, namespace: str
) -> bool:
    """``rules.Matcher.Matches``."""
    scope = rule.get("scope") or "*"
    if scope == "Namespaced":
        if _is_namespace_resource(rt) or not namespace:
            return False
    elif scope == "Cluster":
        if not (_is_namespace_resource(rt) or not namespace):
            return False
    elif scope != "*":
        return False
    if not _matches_any(rule.get("operations"), operation):
        return False
    if not _matches_any(rule.get("apiGroups"), rt.group):
        return False
    if not _matches_any(rule.get("apiVersions"), rt.version):
        return False
    for entry in rule.get("resources") or []:
        if not isinstance(entry, str):
            continue
        resource, _, sub = entry.partition("/")
        if (resource in ("*", rt.plural)) and (sub in ("*", subresource)):
            return True
    return False


@dataclass
class _Attributes:
    """One admission request as the matchers and review builders see it."""

    request: AdmissionRequest
    namespace: str
    """kube-apiserver's ``attr.GetNamespace()``: a Namespace object's own name."""
    obj: dict[str, Any] | None
    warnings: list[str]


@dataclass(frozen=True)
class _Invocation:
    hook: _Hook
    rt: ResourceType
    """The version of the resource the webhook gets (differs for an equivalent match)."""


@dataclass
class _Answer:
    allowed: bool
    status: Any
    patch: bytes = b""
    patch_type: str = ""
    warnings: list[str] = field(default_factory=list)


def _verify_admission_response(  # noqa: PLR0912 - VerifyAdmissionResponse: one refusal per field of the response
    uid: str, mutating: bool, review_version: str, answer: Any
) -> _Answer:
    """``VerifyAdmissionResponse``; ValueError with kube-apiserver's wording."""
    if not isinstance(answer, dict):
        raise ValueError("webhook response was absent")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ValueError("webhook response was absent")
    if review_version == "v1":
        got_uid = response.get("uid")
        if got_uid != uid:
            raise ValueError(
                f"expected response.uid={_quote(uid)}, got {_quote(str(got_uid or ''))}"
            )
        api_version, kind = str(answer.get("apiVersion") or ""), str(answer.get("kind") or "")
        if api_version != "admission.k8s.io/v1" or kind != "AdmissionReview":
            gv = api_version if "/" in api_version else f"/{api_version}"
            raise ValueError(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, "
                f"got {gv}, Kind={kind}"
            )
    raw_patch = response.get("patch")
    patch_type = response.get("patchType")
    patch = b""
    if raw_patch:
        if not isinstance(raw_patch, str):
            raise ValueError("response.patch must be a base64-encoded string")
        try:
            patch = base64.b64decode(raw_patch, validate=True)
        except binascii.Error as exc:
            raise ValueError(f"illegal base64 data in response.patch: {exc}") from None
    if mutating:
        if review_version == "v1":
            if patch and patch_type is None:
                raise ValueError("webhook returned response.patch but not response.patchType")
            if not patch and patch_type is not None:
                raise ValueError("webhook returned response.patchType but not response.patch")
            if patch_type is not None and not patch_type:
                raise ValueError('webhook returned invalid response.patchType of ""')
        elif patch:
            patch_type = "JSONPatch"
    else:
        if patch:
            raise ValueError("validating webhook may not return response.patch")
        if patch_type is not None:
            raise ValueError("validating webhook may not return response.patchType")
    warnings = response.get("warnings")
    return _Answer(
        allowed=response.get("allowed") is True,
        status=response.get("status"),
        patch=patch,
        patch_type=str(patch_type or ""),
        warnings=[w for w in warnings if isinstance(w, str)] if isinstance(warnings, list) else [],
    )


class WebhookDispatcher:
    """Calls the admission webhooks stored in an `APIServer` (an `AdmissionHook`).

    Args:
        server: The server whose MutatingWebhookConfigurations and
            ValidatingWebhookConfigurations are read on each request.
        services: ``"<namespace>/<name>"`` of a Service -> base URL that reaches it
            (the embedded server has no cluster DNS); see the module docstring.
    """

    def __init__(self, server: APIServer, *, services: Mapping[str, str] | None = None) -> None:
        self.server = server
        self.client = _Client(services)
        self._parsed: dict[StorageKey, dict[str, tuple[str, list[_Hook]]]] = {
            MUTATING: {},
            VALIDATING: {},
        }

    @property
    def services(self) -> dict[str, str]:
        """The Service -> base URL map (mutable: later additions take effect)."""
        return self.client.services

    # --- configuration -------------------------------------------------------------------

    def _hooks(self, key: StorageKey) -> list[_Hook]:
        """The webhooks of one kind, configurations in name order, parsed once per version."""
        cache = self._parsed[key]
        hooks: list[_Hook] = []
        seen: set[str] = set()
        for config in self.server.store.items(key, None):
            meta = config.get("metadata") or {}
            name = str(meta.get("name") or "")
            rv = str(meta.get("resourceVersion") or "")
            cached = cache.get(name)
            if cached is None or cached[0] != rv:
                cached = (rv, _parse_configuration(config))
                cache[name] = cached
            seen.add(name)
            hooks.extend(cached[1])
        for gone in set(cache) - seen:
            del cache[gone]
        return hooks

    @staticmethod
    def _exempt(request: AdmissionRequest) -> bool:
        rt = request.resource
        return rt.group == "admissionregistration.k8s.io" and rt.kind in _EXEMPT_KINDS

    def _attributes(self, request: AdmissionRequest) -> _Attributes:
        namespace = request.namespace
        if _is_namespace_resource(request.resource) and request.operation != "CREATE":
            namespace = request.name
        warnings = getattr(request, "warnings", None)
        return _Attributes(
            request=request,
            namespace=namespace,
            obj=request.obj,
            warnings=warnings if isinstance(warnings, list) else [],
        )

    # --- matching ------------------------------------------------------------------------

    def _namespace_matches(
        self, hook: _Hook, attrs: _Attributes
    ) -> tuple[bool, StatusError | None]:
        """``namespace.Matcher.MatchNamespaceSelector``."""
        request = attrs.request
        is_namespace = _is_namespace_resource(request.resource)
        if not attrs.namespace and not is_namespace:
            return True, None
        if hook.namespace_selector_error:
            return False, internal(hook.namespace_selector_error)
        selector = hook.namespace_selector
        if selector is None or selector.empty:
            return True, None
        if is_namespace and not request.subresource and request.operation in ("CREATE", "UPDATE"):
            labels = ((attrs.obj or {}).get("metadata") or {}).get("labels")
        else:
            stored = self.server.store.get(NAMESPACES, "", attrs.namespace)
            if stored is None:
                return False, not_found("", "namespaces", attrs.namespace)
            labels = (stored.get("metadata") or {}).get("labels")
        return selector.matches(labels if isinstance(labels, dict) else None), None

    @staticmethod
    def _object_matches(hook: _Hook, attrs: _Attributes) -> tuple[bool, StatusError | None]:
        """``object.Matcher.MatchObjectSelector``: the new or the old object's labels."""
        if hook.object_selector_error:
            return False, internal(hook.object_selector_error)
        selector = hook.object_selector
        if selector is None or selector.empty:
            return True, None
        for obj in (attrs.obj, attrs.request.old):
            if obj is None:
                continue
            labels = (obj.get("metadata") or {}).get("labels")
            if selector.matches(labels if isinstance(labels, dict) else None):
                return True, None
        return False, None

    def _invocation(self, hook: _Hook, attrs: _Attributes) -> _Invocation | None:
        """``Webhook.ShouldCallHook``: the invocation, None to skip, StatusError to fail."""
        ns_matches, ns_error = self._namespace_matches(hook, attrs)
        if not ns_matches and ns_error is None:
            return None
        obj_matches, obj_error = self._object_matches(hook, attrs)
        if not obj_matches and obj_error is None:
            return None
        request = attrs.request
        rt, sub, op = request.resource, request.subresource, request.operation
        target: ResourceType | None = None
        for rule in hook.rules:
            if _rule_matches(rule, rt, sub, op, attrs.namespace):
                target = rt
                break
        if target is None and hook.equivalent:
            equivalents = [
                t
                for t in self.server.registry.for_storage(rt.storage_key)
                if t.served
                and (t.group, t.version, t.plural) != (rt.group, rt.version, rt.plural)
                and (not sub or sub in t.subresources)
            ]
            target = next(
                (
                    t
                    for rule in hook.rules
                    for t in equivalents
                    if _rule_matches(rule, t, sub, op, attrs.namespace)
                ),
                None,
            )
        if target is None:
            return None
        if ns_error is not None:
            raise ns_error
        if obj_error is not None:
            raise obj_error
        if hook.has_match_conditions:
            raise internal(
                f"webhook {_quote(hook.name)} has matchConditions, which the embedded API "
                "server does not evaluate"
            )
        return _Invocation(hook, target)

    # --- calls ---------------------------------------------------------------------------

    async def _convert(
        self, obj: dict[str, Any] | None, source: ResourceType, dest: ResourceType
    ) -> dict[str, Any] | None:
        """An object of ``source``'s version at ``dest``'s version (equivalent matches)."""
        if obj is None or (source.group, source.version) == (dest.group, dest.version):
            return obj
        hook = self.server.conversion
        try:
            if source.crd_name and hook is not None and hook.handles(source.crd_name):
                return (await hook.convert(source.crd_name, [obj], dest.api_version))[0]
        except StatusError as exc:
            raise internal(exc.message) from None
        api = self.server.api
        return api.to_external(dest, api.to_storage(source, obj))

    def _review(
        self,
        invocation: _Invocation,
        attrs: _Attributes,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        version: str,
    ) -> tuple[str, dict[str, Any]]:
        """``CreateV1AdmissionReview``: the review for one webhook."""
        request = attrs.request
        target, asked = invocation.rt, request.resource
        sub = request.subresource

        def kind_of(rt: ResourceType) -> dict[str, str]:
            if sub == "scale":
                return {"group": "autoscaling", "version": "v1", "kind": "Scale"}
            if sub == "eviction":
                return {"group": "policy", "version": "v1", "kind": "Eviction"}
            return {"group": rt.group, "version": rt.version, "kind": rt.kind}

        uid = str(uuid.uuid4())
        body: dict[str, Any] = {
            "uid": uid,
            "kind": kind_of(target),
            "resource": {
                "group": target.group,
                "version": target.version,
                "resource": target.plural,
            },
        }
        if sub:
            body["subResource"] = sub
        body["requestKind"] = kind_of(asked)
        body["requestResource"] = {
            "group": asked.group,
            "version": asked.version,
            "resource": asked.plural,
        }
        if sub:
            body["requestSubResource"] = sub
        if request.name:
            body["name"] = request.name
        if attrs.namespace:
            body["namespace"] = attrs.namespace
        body["operation"] = request.operation
        user: dict[str, Any] = {"username": request.user.username}
        if request.user.uid:
            user["uid"] = request.user.uid
        if request.user.groups:
            user["groups"] = list(request.user.groups)
        body["userInfo"] = user
        body["object"] = obj
        body["oldObject"] = old
        body["dryRun"] = request.dry_run
        body["options"] = request.options or None
        return uid, {
            "kind": "AdmissionReview",
            "apiVersion": f"admission.k8s.io/{version}",
            "request": body,
        }

    async def _call(
        self,
        invocation: _Invocation,
        attrs: _Attributes,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        *,
        mutating: bool,
    ) -> _Answer:
        """Send one review; raises `_CallingWebhookError` or `StatusError`."""
        hook = invocation.hook
        if attrs.request.dry_run:
            if hook.side_effects is None:
                raise _CallingWebhookError(hook.name, "Webhook SideEffects is nil")
            if hook.side_effects not in ("None", "NoneOnDryRun"):
                raise bad_request(f"admission webhook {_quote(hook.name)} does not support dry run")
        version = next((v for v in hook.review_versions if v in ("v1", "v1beta1")), None)
        if version is None:
            raise _CallingWebhookError(
                hook.name,
                "could not create admission objects: webhook does not accept known "
                "AdmissionReview versions (v1, v1beta1)",
            )
        try:
            target = self.client.target(hook.client_config, hook.timeout)
        except ValueError as exc:
            raise _CallingWebhookError(hook.name, f"could not get REST client: {exc}") from None
        uid, review = self._review(invocation, attrs, obj, old, version)
        try:
            answer = await self.client.post(target, review, hook.timeout)
        except _CallFailedError as exc:
            raise _CallingWebhookError(hook.name, f"failed to call webhook: {exc}") from None
        try:
            return _verify_admission_response(uid, mutating, version, answer)
        except ValueError as exc:
            raise _CallingWebhookError(
                hook.name, f"received invalid webhook response: {exc}"
            ) from None

    @staticmethod
    def _add_warnings(attrs: _Attributes, warnings: list[str]) -> None:
        for warning in warnings:
            if warning not in attrs.warnings:
                attrs.warnings.append(warning)

    @staticmethod
    def _with_warnings(err: StatusError, attrs: _Attributes) -> StatusError:
        if attrs.warnings:
            err.headers["Warning"] = _warning_header(attrs.warnings)
        return err

    # --- mutating ------------------------------------------------------------------------

    async def mutate(self, request: AdmissionRequest) -> dict[str, Any] | None:  # noqa: PLR0912 - the mutating dispatcher: matching, reinvocation, patch and audit per webhook
        """Run the matching mutating webhooks; return the patched object (None: unchanged)."""
        if request.obj is None or self._exempt(request) or not self.server.store.count(MUTATING):
            return None
        hooks = self._hooks(MUTATING)
        if not hooks:
            return None
        attrs = self._attributes(request)
        reinvoke: set[str] = set()
        invoked_reinvocable: set[str] = set()
        mutated = False
        try:
            for round_ in (0, 1):
                if round_ == 1 and not reinvoke:
                    break
                for hook in hooks:
                    invocation = self._invocation(hook, attrs)
                    if invocation is None:
                        continue
                    if round_ == 1 and hook.uid not in reinvoke:
                        continue
                    changed = False
                    failure: _CallingWebhookError | None = None
                    try:
                        changed = await self._mutate_once(invocation, attrs)
                    except _CallingWebhookError as exc:
                        failure = exc
                    if changed:
                        mutated = True
                        # Every earlier IfNeeded webhook must see what this one changed.
                        reinvoke |= invoked_reinvocable
                        invoked_reinvocable = set()
                    if hook.reinvoke_if_needed:
                        invoked_reinvocable.add(hook.uid)
                    if failure is not None:
                        if hook.ignore_failures:
                            logger.warning(
                                "Failed calling webhook, failing open %s: %s", hook.name, failure
                            )
                            continue
                        raise internal(str(failure))
        except StatusError as err:
            raise self._with_warnings(err, attrs) from None
        return attrs.obj if mutated else None

    async def _mutate_once(self, invocation: _Invocation, attrs: _Attributes) -> bool:
        """Call one mutating webhook and apply its patch to ``attrs.obj``; True if changed."""
        hook = invocation.hook
        asked = attrs.request.resource
        obj = await self._convert(attrs.obj, asked, invocation.rt)
        old = await self._convert(attrs.request.old, asked, invocation.rt)
        answer = await self._call(invocation, attrs, obj, old, mutating=True)
        self._add_warnings(attrs, answer.warnings)
        if not answer.allowed:
            raise _denial(hook.name, answer.status)
        if not answer.patch:
            return False
        try:
            operations = orjson.loads(answer.patch)
            if not isinstance(operations, list) or not all(isinstance(o, dict) for o in operations):
                raise ValueError("a JSON patch must be an array of operation objects")
        except (orjson.JSONDecodeError, ValueError) as exc:
            raise _CallingWebhookError(
                hook.name, f"received undecodable patch in webhook response: {exc}"
            ) from None
        if not operations:
            return False
        if answer.patch_type != "JSONPatch":
            raise _CallingWebhookError(
                hook.name, f"unsupported patch type {_quote(answer.patch_type)}"
            )
        if obj is None:
            raise internal(
                f"admission webhook {_quote(hook.name)} attempted to modify the object, which "
                "is not supported for this operation"
            )
        try:
            patched = jsonpatch.JsonPatch(operations).apply(obj)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise internal(str(exc)) from None
        if not isinstance(patched, dict):
            raise internal(
                f"admission webhook {_quote(hook.name)} patched the object into a non-object"
            )
        if patched == obj:
            return False
        attrs.obj = await self._convert(patched, invocation.rt, asked)
        return True

    # --- validating ----------------------------------------------------------------------

    async def validate(self, request: AdmissionRequest) -> None:
        """Run the matching validating webhooks concurrently; raise the first denial."""
        if self._exempt(request) or not self.server.store.count(VALIDATING):
            return
        hooks = self._hooks(VALIDATING)
        if not hooks:
            return
        attrs = self._attributes(request)
        try:
            await self._validate(attrs, hooks)
        except StatusError as err:
            raise self._with_warnings(err, attrs) from None

    async def _validate(self, attrs: _Attributes, hooks: list[_Hook]) -> None:
        invocations = [inv for hook in hooks if (inv := self._invocation(hook, attrs)) is not None]
        if not invocations:
            return
        asked = attrs.request.resource
        versioned: dict[tuple[str, str], tuple[dict[str, Any] | None, dict[str, Any] | None]] = {}
        for invocation in invocations:
            key = (invocation.rt.group, invocation.rt.version)
            if key not in versioned:
                versioned[key] = (
                    await self._convert(attrs.obj, asked, invocation.rt),
                    await self._convert(attrs.request.old, asked, invocation.rt),
                )
        errors: list[StatusError] = []

        async def run(invocation: _Invocation) -> None:
            hook = invocation.hook
            obj, old = versioned[(invocation.rt.group, invocation.rt.version)]
            try:
                answer = await self._call(invocation, attrs, obj, old, mutating=False)
            except _CallingWebhookError as exc:
                if hook.ignore_failures:
                    logger.warning("Failed calling webhook, failing open %s: %s", hook.name, exc)
                else:
                    errors.append(internal(str(exc)))
                return
            except StatusError as exc:
                errors.append(exc)
                return
            self._add_warnings(attrs, answer.warnings)
            if not answer.allowed:
                errors.append(_denial(hook.name, answer.status))

        async with asyncio.TaskGroup() as group:
            for invocation in invocations:
                group.create_task(run(invocation), name=f"webhook {invocation.hook.name}")
        if errors:
            raise errors[0]


# --- conversion -------------------------------------------------------------------------------


def _gvk_text(obj: dict[str, Any]) -> str:
    """Go's ``GroupVersionKind.String()`` of an object."""
    api_version = str(obj.get("apiVersion") or "")
    group_version = api_version if "/" in api_version else f"/{api_version}"
    return f"{group_version}, Kind={obj.get('kind') or ''}"


def _is_empty_object(obj: dict[str, Any]) -> bool:
    return set(obj) == {"apiVersion", "kind"}


def _validate_map(name: str, values: dict[str, str]) -> str:
    """``ValidateLabels`` / ``ValidateAnnotations`` keys (and label values), aggregated."""
    problems: list[str] = []
    path = "metadata.labels" if name == "labels" else "metadata.annotation"
    for key, value in values.items():
        problem = qualified_name_problem(key)
        if problem:
            problems.append(f"{path}: Invalid value: {_quote(key)}: {problem}")
        if name == "labels":
            problem = label_value_problem(value)
            if problem:
                problems.append(f"{path}: Invalid value: {_quote(value)}: {problem}")
    if not problems:
        return ""
    return problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"


def _restore_object_meta(original: dict[str, Any], converted: dict[str, Any]) -> dict[str, Any]:
    """``restoreObjectMeta``: the original metadata with the converted labels and annotations."""
    if "metadata" not in converted:
        raise ValueError("missing metadata in converted object")
    response_meta = converted["metadata"]
    if not isinstance(response_meta, dict):
        raise ValueError(f"invalid metadata of type {go_type(response_meta)} in converted object")
    meta = orjson.loads(orjson.dumps(original.get("metadata") or {}))
    for name in ("labels", "annotations"):
        value = response_meta.get(name)
        if value is None:
            meta.pop(name, None)
            continue
        if not isinstance(value, dict):
            raise ValueError(
                f"invalid metadata.{name} of type {go_type(value)} in converted object"
            )
        for key, item in value.items():
            if not isinstance(item, str):
                raise ValueError(
                    f"metadata.{name}[{key}] must be a string, but is {go_type(item)} in "
                    "converted object"
                )
        if value != (meta.get(name) or {}):
            problem = _validate_map(name, value)
            if problem:
                raise ValueError(problem)
        meta[name] = value
    out = dict(converted)
    out["metadata"] = meta
    return out


def _converted_objects(uid: str, review_version: str, answer: Any) -> list[Any]:
    """``getConvertedObjectsFromResponse``; ValueError with kube-apiserver's wording."""
    if not isinstance(answer, dict):
        raise ValueError("no response provided")
    if review_version == "v1":
        api_version, kind = str(answer.get("apiVersion") or ""), str(answer.get("kind") or "")
        if api_version != "apiextensions.k8s.io/v1" or kind != "ConversionReview":
            gv = api_version if "/" in api_version else f"/{api_version}"
            raise ValueError(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, "
                f"got {gv}, Kind={kind}"
            )
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ValueError("no response provided")
    if review_version == "v1" and response.get("uid") != uid:
        raise ValueError(
            f"expected response.uid={_quote(uid)}, got {_quote(str(response.get('uid') or ''))}"
        )
    result = response.get("result")
    result = result if isinstance(result, dict) else {}
    if result.get("status") != "Success":
        if result.get("message"):
            raise ValueError(str(result["message"]))
        raise ValueError(
            f"response.result.status was '{result.get('status') or ''}', not 'Success'"
        )
    objects = response.get("convertedObjects")
    return list(objects) if isinstance(objects, list) else []


def _conversion_failure(message: str) -> StatusError:
    # A plain error inside kube-apiserver: 500 without a reason.
    return StatusError(500, "", message, details=False)


def _conversion_review(
    uid: str, version: str, desired_api_version: str, objects: list[dict[str, Any]]
) -> dict[str, Any]:
    """The ConversionReview request kube-apiserver sends (``createConversionReview``)."""
    return {
        "kind": "ConversionReview",
        "apiVersion": f"apiextensions.k8s.io/{version}",
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired_api_version,
            "objects": objects,
        },
        "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}},
    }


class WebhookConverter:
    """Converts custom resources through their CRD's conversion webhook (a `ConversionHook`).

    Args:
        server: The server whose stored CRDs say which webhook converts what.
        services: ``"<namespace>/<name>"`` of a Service -> base URL that reaches it.
    """

    def __init__(self, server: APIServer, *, services: Mapping[str, str] | None = None) -> None:
        self.server = server
        self.client = _Client(services)

    @property
    def services(self) -> dict[str, str]:
        """The Service -> base URL map (mutable: later additions take effect)."""
        return self.client.services

    def _conversion(self, crd_name: str) -> dict[str, Any]:
        crd = self.server.store.get(CRDS, "", crd_name) or {}
        conversion = (crd.get("spec") or {}).get("conversion")
        return conversion if isinstance(conversion, dict) else {}

    def handles(self, crd_name: str) -> bool:
        """Whether the CRD's ``spec.conversion.strategy`` is ``Webhook``."""
        return self._conversion(crd_name).get("strategy") == "Webhook"

    async def convert(
        self, crd_name: str, objects: list[dict[str, Any]], desired_api_version: str
    ) -> list[dict[str, Any]]:
        """Convert ``objects`` to ``desired_api_version`` with one ConversionReview.

        Objects already at that version (and empty objects) are not sent.

        Raises:
            StatusError: 500 with kube-apiserver's message when the webhook fails.
        """
        pending = [
            (i, o)
            for i, o in enumerate(objects)
            if o.get("apiVersion") != desired_api_version and not _is_empty_object(o)
        ]
        if not pending:
            return list(objects)
        subject = f"conversion webhook for {_gvk_text(pending[0][1])}"
        webhook = self._conversion(crd_name).get("webhook")
        webhook = webhook if isinstance(webhook, dict) else {}
        versions = [v for v in webhook.get("conversionReviewVersions") or [] if isinstance(v, str)]
        version = next((v for v in versions if v in ("v1", "v1beta1")), None)
        if version is None:
            raise _conversion_failure("no supported conversion review versions")
        try:
            target = self.client.target(webhook.get("clientConfig"), CONVERSION_TIMEOUT_SECONDS)
        except ValueError as exc:
            raise _conversion_failure(f"{subject} failed: {exc}") from None
        uid = str(uuid.uuid4())
        review = _conversion_review(uid, version, desired_api_version, [o for _, o in pending])
        try:
            answer = await self.client.post(target, review, CONVERSION_TIMEOUT_SECONDS)
            converted = _converted_objects(uid, version, answer)
        except (_CallFailedError, ValueError) as exc:
            raise _conversion_failure(f"{subject} failed: {exc}") from None
        if len(converted) != len(pending):
            raise _conversion_failure(
                f"{subject} returned {len(converted)} objects, expected {len(pending)}"
            )
        out = list(objects)
        single = len(objects) == 1
        for index, ((position, original), item) in enumerate(zip(pending, converted, strict=True)):
            where = (
                "invalid object at index 0"
                if single
                else f"invalid converted object at index {index}"
            )
            self._check_converted(subject, where, original, item, desired_api_version)
            problem = self._identity_problem(original, item)
            if problem:
                what = "invalid object" if single else f"invalid converted object at index {index}"
                raise _conversion_failure(f"{subject} returned {what}: {problem}")
            try:
                out[position] = _restore_object_meta(original, item)
            except ValueError as exc:
                what = (
                    "invalid metadata" if single else f"invalid metadata in object at index {index}"
                )
                raise _conversion_failure(f"{subject} returned {what}: {exc}") from None
        return out

    @staticmethod
    def _check_converted(
        subject: str, where: str, original: dict[str, Any], item: Any, desired_api_version: str
    ) -> None:
        """The converted object is an object of the desired version and the original kind."""
        if not isinstance(item, dict):
            raise _conversion_failure(
                f"{subject} returned {where}: invalid type, expected=Unstructured, "
                f"got={go_type(item)}"
            )
        got_version = str(item.get("apiVersion") or "")
        if got_version != desired_api_version:
            raise _conversion_failure(
                f"{subject} returned {where}: invalid groupVersion (expected "
                f"{desired_api_version}, received {got_version})"
            )
        if item.get("kind") != original.get("kind"):
            raise _conversion_failure(
                f"{subject} returned {where}: invalid kind (expected {original.get('kind')}, "
                f"received {item.get('kind')})"
            )

    @staticmethod
    def _identity_problem(original: dict[str, Any], converted: dict[str, Any]) -> str:
        """``validateConvertedObject``: kind, name, namespace and uid must not change."""
        before = original.get("metadata") or {}
        after = converted.get("metadata")
        after = after if isinstance(after, dict) else {}
        for label, a, b in (
            ("name", before.get("name") or "", after.get("name") or ""),
            ("namespace", before.get("namespace") or "", after.get("namespace") or ""),
            ("UID", before.get("uid") or "", after.get("uid") or ""),
        ):
            if a != b:
                return f"must have the same {label}: {a} != {b}"
        return ""


def install(server: APIServer, *, services: Mapping[str, str] | None = None) -> None:
    """Make ``server`` call admission and conversion webhooks, as kube-apiserver does.

    Appends a `WebhookDispatcher` to ``server.admission`` and sets a `WebhookConverter`
    as ``server.conversion``. Calling it again adds nothing twice; ``services`` entries
    are added to the existing map.

    Args:
        server: The embedded API server.
        services: ``"<namespace>/<name>"`` of a Service named in a ``clientConfig`` ->
            the base URL (``https://127.0.0.1:9443``) that reaches it.

    Raises:
        ValueError: ``server.conversion`` is already another hook.
    """
    if server.conversion is not None and not isinstance(server.conversion, WebhookConverter):
        raise ValueError(
            f"server.conversion is already set to {server.conversion!r}; install() would replace it"
        )
    dispatcher = next((h for h in server.admission if isinstance(h, WebhookDispatcher)), None)
    if dispatcher is None:
        dispatcher = WebhookDispatcher(server)
        server.admission.append(dispatcher)
    converter = server.conversion
    if converter is None:
        converter = WebhookConverter(server)
        server.conversion = converter
    dispatcher.services.update(services or {})
    converter.services.update(services or {})
