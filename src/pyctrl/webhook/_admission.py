"""Admission: AdmissionReview v1 models, Defaulter and Validator, and their handlers."""

from __future__ import annotations

import base64
import contextvars
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

import jsonpatch
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from pyctrl.errors import PyctrlError
from pyctrl.log import get_logger
from pyctrl.resource import CustomResource

__all__ = [
    "AdmissionRequest",
    "AdmissionResponse",
    "AdmissionReview",
    "Defaulter",
    "DefaultingHandler",
    "FieldError",
    "GroupVersionKindRef",
    "GroupVersionResourceRef",
    "InvalidObjectError",
    "UserInfo",
    "ValidatingHandler",
    "Validator",
    "Warnings",
    "current_request",
]

T = TypeVar("T", bound=CustomResource)
T_contra = TypeVar("T_contra", bound=CustomResource, contravariant=True)
Warnings = Sequence[str] | None
"""Warnings a webhook returns; the API server relays them to the client."""

_log = get_logger("pyctrl.webhook")


class _Wire(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
    )


class GroupVersionKindRef(_Wire):
    """``metav1.GroupVersionKind`` as AdmissionReview spells it."""

    group: str = ""
    version: str
    kind: str


class GroupVersionResourceRef(_Wire):
    """``metav1.GroupVersionResource`` as AdmissionReview spells it."""

    group: str = ""
    version: str
    resource: str


class UserInfo(_Wire):
    """Who made the request."""

    username: str = ""
    uid: str = ""
    groups: list[str] = Field(default_factory=list)
    extra: dict[str, list[str]] = Field(default_factory=dict)


class AdmissionRequest(_Wire):
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


class AdmissionResponse(_Wire):
    """``admission.k8s.io/v1`` AdmissionResponse."""

    uid: str
    allowed: bool
    status: dict[str, Any] | None = None
    patch: str | None = None
    patch_type: Literal["JSONPatch"] | None = None
    audit_annotations: dict[str, str] | None = None
    warnings: list[str] | None = None


class AdmissionReview(_Wire):
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
    """Fills in defaults on a custom resource being created or updated (mutating webhook)."""

    async def default(self, obj: T_contra) -> None:
        """Set defaults on ``obj`` in place; raise `InvalidObjectError` to deny."""
        ...


@runtime_checkable
class Validator(Protocol[T_contra]):
    """Accepts or denies creates, updates and deletes of a custom resource."""

    async def validate_create(self, obj: T_contra) -> Warnings:
        """Check a new object; raise `InvalidObjectError` to deny; return warnings."""
        ...

    async def validate_update(self, old: T_contra, new: T_contra) -> Warnings:
        """Check an update; raise `InvalidObjectError` to deny; return warnings."""
        ...

    async def validate_delete(self, obj: T_contra) -> Warnings:
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
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


def _decode(type_: type[T], data: dict[str, Any] | None, what: str) -> T:
    if data is None:
        raise _BadRequestError(f"the request has no {what}")
    try:
        return type_.model_validate(data)
    except ValidationError as exc:
        raise _BadRequestError(f"{what} is not a valid {type_.__name__}: {exc}") from exc


class _BadRequestError(Exception):
    pass


class _Handler(Generic[T]):
    """Shared plumbing: decode, run user code, map failures to responses, log."""

    name: str

    def __init__(self, type_: type[T], name: str) -> None:
        self.type = type_
        self.name = name

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        """Answer one AdmissionRequest."""
        token = _current.set(request)
        try:
            return await self._handle(request)
        except _BadRequestError as exc:
            return _denied(request.uid, 400, "BadRequest", str(exc))
        except InvalidObjectError as exc:
            return _denied(request.uid, 422, "Invalid", exc.message, exc.errors)
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

    def __init__(self, type_: type[T], defaulter: Defaulter[T], name: str) -> None:
        super().__init__(type_, name)
        self.defaulter = defaulter

    async def _handle(self, request: AdmissionRequest) -> AdmissionResponse:
        if request.operation not in ("CREATE", "UPDATE"):
            return _allowed(request.uid)
        original = request.object
        obj = _decode(self.type, original, "object")
        assert original is not None  # _decode refused None
        try:
            decoded = obj.to_dict()
        except ValueError as exc:  # pydantic serializes a limited depth
            raise _BadRequestError(f"object cannot be processed: {exc}") from None
        await _call(self.defaulter.default, obj)
        target = _apply_changes(original, decoded, obj.to_dict())
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

    def __init__(self, type_: type[T], validator: Validator[T], name: str) -> None:
        super().__init__(type_, name)
        self.validator = validator

    async def _handle(self, request: AdmissionRequest) -> AdmissionResponse:
        op = request.operation
        if op == "CREATE":
            warnings = await _call(
                self.validator.validate_create, _decode(self.type, request.object, "object")
            )
        elif op == "UPDATE":
            old = _decode(self.type, request.old_object, "oldObject")
            new = _decode(self.type, request.object, "object")
            warnings = await _call(self.validator.validate_update, old, new)
        elif op == "DELETE":
            # The API server sends the object being deleted as oldObject.
            warnings = await _call(
                self.validator.validate_delete, _decode(self.type, request.old_object, "oldObject")
            )
        else:
            return _allowed(request.uid)
        return _allowed(request.uid, warnings)
