"""Admission: AdmissionReview v1 models, Defaulter and Validator, and their handlers.

The handlers work on any kind: a `pyctrl.resource.CustomResource`, a kubernetes-asyncio
model (``V1Pod``), a `pyctrl.meta.KubeModel`, or `pyctrl.resource.Unstructured` for a
GroupVersionKind without a Python type; the scheme decodes and encodes each.
`AdmissionHandler` is the raw form: it gets the whole AdmissionRequest and builds its
own `AdmissionResponse` (`allowed`, `denied`, `errored`, `patch_response`).
"""

from __future__ import annotations

import base64
import contextvars
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

import jsonpatch
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from pyctrl import _executor
from pyctrl.errors import PyctrlError, SchemeError
from pyctrl.log import get_logger
from pyctrl.resource import Unstructured
from pyctrl.scheme import default_scheme

if TYPE_CHECKING:
    from pyctrl.meta import GroupVersionKind

__all__ = [
    "AdmissionHandler",
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReview",
    "Defaulter",
    "DefaultingHandler",
    "FieldError",
    "GroupVersionKindRef",
    "GroupVersionResourceRef",
    "InvalidObjectError",
    "SyncDefaulter",
    "SyncValidator",
    "UserInfo",
    "ValidatingHandler",
    "Validator",
    "Warnings",
    "allowed",
    "current_request",
    "denied",
    "errored",
    "patch_response",
]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)
Warnings = Sequence[str] | None
"""Warnings a webhook returns; the API server relays them to the client."""

_log = get_logger("pyctrl.webhook")


class Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
    )


class GroupVersionKindRef(Wire):
    """``metav1.GroupVersionKind`` as AdmissionReview spells it."""

    group: str = ""
    version: str
    kind: str


class GroupVersionResourceRef(Wire):
    """``metav1.GroupVersionResource`` as AdmissionReview spells it."""

    group: str = ""
    version: str
    resource: str


class UserInfo(Wire):
    """Who made the request."""

    username: str = ""
    uid: str = ""
    groups: list[str] = Field(default_factory=list)
    extra: dict[str, list[str]] = Field(default_factory=dict)


class AdmissionRequest(Wire):
    """``admission.k8s.io/v1`` AdmissionRequest: one operation the API server asks about."""

    uid: str
    kind: GroupVersionKindRef
    resource: GroupVersionResourceRef
    sub_resource: str = ""
    request_kind: GroupVersionKindRef | None = None
    request_resource: GroupVersionResourceRef | None = None
    request_sub_resource: str = ""
    name: str = ""
    namespace: str = ""
    operation: Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]
    user_info: UserInfo = Field(default_factory=UserInfo)
    object: dict[str, Any] | None = None
    old_object: dict[str, Any] | None = None
    dry_run: bool = False
    options: dict[str, Any] | None = None


class AdmissionResponse(Wire):
    """``admission.k8s.io/v1`` AdmissionResponse."""

    uid: str = ""
    """Left empty by a handler: the server copies the request's uid."""
    allowed: bool
    status: dict[str, Any] | None = None
    patch: str | None = None
    patch_type: Literal["JSONPatch"] | None = None
    audit_annotations: dict[str, str] | None = None
    warnings: list[str] | None = None


class AdmissionReview(Wire):
    """``admission.k8s.io/v1`` AdmissionReview: the request in, the response out."""

    api_version: Literal["admission.k8s.io/v1"] = Field(
        default="admission.k8s.io/v1", alias="apiVersion"
    )
    kind: Literal["AdmissionReview"] = "AdmissionReview"
    request: AdmissionRequest | None = None
    response: AdmissionResponse | None = None


@dataclass(frozen=True, slots=True)
class FieldError:
    """One invalid field: its path (``spec.port``), what is wrong, and a Status reason."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"


@dataclass(eq=False)
class InvalidObjectError(PyctrlError):
    """Raised by a Validator (or Defaulter) to deny a request with field causes.

    The API server relays it to the client as a 422-style ``Status``; kubectl prints
    ``admission webhook "..." denied the request: <message>``.
    """

    message: str
    errors: Sequence[FieldError] = field(default_factory=tuple)
    warnings: Sequence[str] = ()
    """Warnings to relay with the denial (controller-runtime returns both at once)."""

    def __post_init__(self) -> None:
        super().__init__(self.message)


_current: contextvars.ContextVar[AdmissionRequest] = contextvars.ContextVar("admission_request")


def current_request() -> AdmissionRequest:
    """The AdmissionRequest being handled, for user code that needs userInfo or dryRun.

    Raises:
        LookupError: called outside a webhook handler.
    """
    return _current.get()


@runtime_checkable
class Defaulter(Protocol[T_contra]):
    """Fills in defaults on an object being created or updated (mutating webhook).

    controller-runtime's ``CustomDefaulter``: ``T`` is the webhook's type (a custom
    resource, a kubernetes-asyncio model such as ``V1Pod``, or `Unstructured`).
    """

    async def default(self, obj: T_contra) -> None:
        """Set defaults on ``obj`` in place; raise `InvalidObjectError` to deny."""
        ...


@runtime_checkable
class Validator(Protocol[T_contra]):
    """Accepts or denies creates, updates and deletes (controller-runtime's ``CustomValidator``).

    ``T`` is the webhook's type, as for `Defaulter`.
    """

    async def validate_create(self, obj: T_contra) -> Warnings:
        """Check a new object; raise `InvalidObjectError` to deny; return warnings."""
        ...

    async def validate_update(self, old: T_contra, new: T_contra) -> Warnings:
        """Check an update; raise `InvalidObjectError` to deny; return warnings."""
        ...

    async def validate_delete(self, obj: T_contra) -> Warnings:
        """Check a delete; raise `InvalidObjectError` to deny; return warnings."""
        ...


@runtime_checkable
class SyncDefaulter(Protocol[T_contra]):
    """A `Defaulter` of blocking code: a plain ``def default``, run in a thread."""

    def default(self, obj: T_contra) -> None:
        """Set defaults on ``obj`` in place; raise `InvalidObjectError` to deny."""
        ...


@runtime_checkable
class SyncValidator(Protocol[T_contra]):
    """A `Validator` of blocking code: plain ``def`` methods, run in a thread."""

    def validate_create(self, obj: T_contra) -> Warnings:
        """Check a new object; raise `InvalidObjectError` to deny; return warnings."""
        ...

    def validate_update(self, old: T_contra, new: T_contra) -> Warnings:
        """Check an update; raise `InvalidObjectError` to deny; return warnings."""
        ...

    def validate_delete(self, obj: T_contra) -> Warnings:
        """Check a delete; raise `InvalidObjectError` to deny; return warnings."""
        ...


class UserCodeError(Exception):
    """User code raised something other than InvalidObjectError."""


class BadReviewError(Exception):
    """The body is JSON but not a review this endpoint accepts (answered with 400)."""


def _allowed(uid: str, warnings: Warnings = None) -> AdmissionResponse:
    return AdmissionResponse(uid=uid, allowed=True, warnings=list(warnings) if warnings else None)


def _denied(
    uid: str, code: int, reason: str, message: str, causes: Sequence[FieldError] = ()
) -> AdmissionResponse:
    status: dict[str, Any] = {
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    if causes:
        status["details"] = {
            "causes": [{"field": c.field, "message": c.message, "reason": c.reason} for c in causes]
        }
    return AdmissionResponse(uid=uid, allowed=False, status=status)


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Await user code; a plain ``def`` runs in a thread (`pyctrl.blocking`), off the loop."""
    return await _executor.invoke(fn, *args)


def _type_name(type_: type[Any], gvk: GroupVersionKind | None) -> str:
    return gvk.kind if type_ is Unstructured and gvk is not None else type_.__name__


def _decode(
    type_: type[T], data: dict[str, Any] | None, what: str, gvk: GroupVersionKind | None = None
) -> T:
    """``data`` as a ``type_``; `_BadRequestError` (400) when it is absent or does not fit."""
    if data is None:
        raise _BadRequestError(f"the request has no {what}")
    name = _type_name(type_, gvk)
    if gvk is not None:
        api_version, kind = data.get("apiVersion"), data.get("kind")
        if (api_version is not None and api_version != gvk.api_version) or (
            kind is not None and kind != gvk.kind
        ):
            raise _BadRequestError(
                f"{what} is a {api_version}, Kind={kind}, not the webhook's "
                f"{gvk.api_version}, Kind={gvk.kind}"
            )
    try:
        return default_scheme().from_dict(data, type_)
    except (SchemeError, ValidationError) as exc:
        raise _BadRequestError(f"{what} is not a valid {name}: {exc}") from exc
    except (AttributeError, KeyError, IndexError, RecursionError) as exc:
        # kubernetes-asyncio's models raise these on values of the wrong shape.
        raise _BadRequestError(
            f"{what} is not a valid {name}: {type(exc).__name__}: {exc}"
        ) from None


def _encode(obj: Any) -> dict[str, Any]:
    try:
        return default_scheme().to_dict(obj)
    except (ValueError, RecursionError) as exc:  # pydantic serializes a limited depth
        raise _BadRequestError(f"object cannot be processed: {exc}") from None


class _BadRequestError(Exception):
    pass


class _Handler(Generic[T]):
    """Shared plumbing: decode, run user code, map failures to responses, log."""

    name: str

    def __init__(self, type_: type[T], name: str, gvk: GroupVersionKind | None = None) -> None:
        self.type = type_
        self.name = name
        self.gvk = gvk
        """The kind served; required for `Unstructured`, checked against the request."""

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Answer one AdmissionRequest."""
        token = _current.set(request)
        try:
            return await self._handle(request)
        except _BadRequestError as exc:
            return _denied(request.uid, 400, "BadRequest", str(exc))
        except InvalidObjectError as exc:
            denial = _denied(request.uid, 422, "Invalid", exc.message, exc.errors)
            if exc.warnings:
                denial.warnings = list(exc.warnings)
            return denial
        except Exception as exc:
            _log.exception("webhook handler raised", webhook=self.name, uid=request.uid)
            raise UserCodeError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            _current.reset(token)

    async def _handle(self, request: AdmissionRequest) -> AdmissionResponse:
        raise NotImplementedError


class DefaultingHandler(_Handler[T]):
    """Runs a Defaulter and answers with a JSON patch of what it changed.

    The patch applies to the object as the API server sent it and carries only the
    Defaulter's changes: what decoding into the type alone changes (a
    ``creationTimestamp: null`` dropped, a default filled in by the model) is left out,
    as controller-runtime leaves out the removals its scheme makes.
    """

    def __init__(
        self,
        type_: type[T],
        defaulter: Defaulter[T] | SyncDefaulter[T],
        name: str,
        gvk: GroupVersionKind | None = None,
    ) -> None:
        super().__init__(type_, name, gvk)
        self.defaulter = defaulter

    async def _handle(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in ("CREATE", "UPDATE"):
            return _allowed(request.uid)
        original = request.object
        obj = _decode(self.type, original, "object", self.gvk)
        assert original is not None  # _decode refused None
        decoded = _encode(obj)
        await _call(self.defaulter.default, obj)
        target = _apply_changes(original, decoded, _encode(obj))
        ops = jsonpatch.make_patch(original, target).patch
        if not ops:
            return _allowed(request.uid)
        encoded = base64.b64encode(jsonpatch.JsonPatch(ops).to_string().encode()).decode()
        return AdmissionResponse(
            uid=request.uid, allowed=True, patch=encoded, patch_type="JSONPatch"
        )


_ABSENT: Any = object()


def _apply_changes(original: Any, decoded: Any, defaulted: Any) -> Any:
    """``original`` with the changes that turned ``decoded`` into ``defaulted``.

    ``decoded`` is ``original`` after a round trip through the type; where ``defaulted``
    still equals it the Defaulter changed nothing and ``original`` is kept as sent.
    `_ABSENT` stands for a missing key.
    """
    if defaulted == decoded:
        return original
    if not (isinstance(decoded, dict) and isinstance(defaulted, dict)):
        return defaulted
    if original is _ABSENT:
        # A container the round trip created and the Defaulter filled: only its changes.
        original = {}
    if not isinstance(original, dict):
        return defaulted
    out = {}
    for key in {**original, **decoded, **defaulted}:
        value = _apply_changes(
            original.get(key, _ABSENT), decoded.get(key, _ABSENT), defaulted.get(key, _ABSENT)
        )
        if value is not _ABSENT:
            out[key] = value
    return out


class ValidatingHandler(_Handler[T]):
    """Runs a Validator's method for the operation and answers allowed or denied."""

    def __init__(
        self,
        type_: type[T],
        validator: Validator[T] | SyncValidator[T],
        name: str,
        gvk: GroupVersionKind | None = None,
    ) -> None:
        super().__init__(type_, name, gvk)
        self.validator = validator

    async def _handle(self, request: AdmissionRequest) -> AdmissionResponse:
        op, gvk = request.operation, self.gvk
        if op == "CREATE":
            warnings = await _call(
                self.validator.validate_create, _decode(self.type, request.object, "object", gvk)
            )
        elif op == "UPDATE":
            old = _decode(self.type, request.old_object, "oldObject", gvk)
            new = _decode(self.type, request.object, "object", gvk)
            warnings = await _call(self.validator.validate_update, old, new)
        elif op == "DELETE":
            # The API server sends the object being deleted as oldObject.
            warnings = await _call(
                self.validator.validate_delete,
                _decode(self.type, request.old_object, "oldObject", gvk),
            )
        else:
            return _allowed(request.uid)
        return _allowed(request.uid, warnings)


@runtime_checkable
class AdmissionHandler(Protocol):
    """A raw admission handler: the whole AdmissionRequest in, an AdmissionResponse out.

    controller-runtime's ``admission.Handler``, for what a typed `Defaulter` or
    `Validator` does not fit: a webhook on ``pods/eviction``, on the DELETE of a
    Namespace, on several kinds at once. Build the answer with `allowed`, `denied`,
    `errored` or `patch_response`; the uid is filled in for you. An exception is a
    denial with code 500, as for typed handlers.
    """

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Answer one request."""
        ...


def allowed(*warnings: str) -> AdmissionResponse:
    """Admit the request, with warnings for the client."""
    return AdmissionResponse(allowed=True, warnings=list(warnings) or None)


def denied(message: str, *, code: int = 403, reason: str = "Forbidden") -> AdmissionResponse:
    """Deny the request; the client sees ``message`` (and the code, 403 by default)."""
    return _denied("", code, reason, message)


def errored(code: int, message: str) -> AdmissionResponse:
    """Deny because the request could not be handled (``admission.Errored``)."""
    return _denied("", code, "BadRequest" if code == 400 else "InternalError", message)


def patch_response(
    original: dict[str, Any], changed: dict[str, Any], *warnings: str
) -> AdmissionResponse:
    """Admit with the JSON patch from ``original`` to ``changed`` (``PatchResponseFromRaw``)."""
    ops = jsonpatch.make_patch(original, changed).patch
    if not ops:
        return allowed(*warnings)
    return AdmissionResponse(
        allowed=True,
        patch=base64.b64encode(jsonpatch.JsonPatch(ops).to_string().encode()).decode(),
        patch_type="JSONPatch",
        warnings=list(warnings) or None,
    )


class RawHandler:
    """Runs an `AdmissionHandler` with the plumbing typed handlers get.

    ``current_request()`` works inside it, the uid is filled in, and an exception from
    user code becomes a 500 denial counted as a panic.
    """

    def __init__(self, handler: AdmissionHandler, name: str) -> None:
        self.handler = handler
        self.name = name

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Answer one AdmissionRequest."""
        token = _current.set(request)
        try:
            response = await self.handler.handle(request)
        except Exception as exc:
            _log.exception("webhook handler raised", webhook=self.name, uid=request.uid)
            raise UserCodeError(f"{type(exc).__name__}: {exc}") from exc
        finally:
            _current.reset(token)
        if not isinstance(response, AdmissionResponse):
            raise UserCodeError(
                f"{type(self.handler).__name__}.handle returned {type(response).__name__}, "
                "not an AdmissionResponse"
            )
        return response.model_copy(update={"uid": request.uid})
