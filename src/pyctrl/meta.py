"""Object metadata, owner references, conditions and type identities.

These are the Python forms of apimachinery's ``metav1`` types that every Kubernetes
object carries: `ObjectMeta`, `OwnerReference`, `ManagedFieldsEntry`, `Condition`; the
identities `GroupVersionKind` and `GroupVersionResource`; and the condition helpers of
``k8s.io/apimachinery/pkg/api/meta`` (`set_status_condition` and friends), with the same
rule: a condition's ``last_transition_time`` moves only when its status changes.

All models are pydantic v2: snake_case in Python, camelCase on the wire
(``model_dump(by_alias=True)`` or `KubeModel.to_dict`), and fields the model does not
declare are kept, so an object read from a newer server and written back loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel

from pyctrl._apimachinery import merge_keys as _merge_keys
from pyctrl._builtin_models import teach_pydantic

__all__ = [
    "BUILTIN_GROUPS",
    "Condition",
    "ConditionStatus",
    "GroupVersionKind",
    "GroupVersionResource",
    "KubeModel",
    "ManagedFieldsEntry",
    "MicroTime",
    "ObjectMeta",
    "ObjectReference",
    "OwnerReference",
    "Time",
    "find_status_condition",
    "format_time",
    "is_status_condition_false",
    "is_status_condition_true",
    "now",
    "remove_status_condition",
    "set_status_condition",
]


def now() -> datetime:
    """Return the current time in UTC, truncated to seconds as ``metav1.Time`` stores it."""
    return datetime.now(UTC).replace(microsecond=0)


def format_time(value: datetime, *, micro: bool = False) -> str:
    """Format a datetime the way the API server does: RFC 3339 in UTC with a ``Z``."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    if micro:
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


Time = Annotated[datetime, PlainSerializer(format_time, return_type=str, when_used="json")]
"""``metav1.Time``: a timestamp serialised with second precision (``2024-05-01T10:00:00Z``)."""

MicroTime = Annotated[
    datetime,
    PlainSerializer(lambda v: format_time(v, micro=True), return_type=str, when_used="json"),
]
"""``metav1.MicroTime``: a timestamp serialised with microseconds (Leases, events)."""


class KubeModel(BaseModel):
    """Base of every pyctrl model of a Kubernetes type.

    Python attribute names are snake_case and the wire names camelCase; both are accepted
    on input. Undeclared fields are kept (``extra="allow"``) so that nothing a server sent
    is dropped on the way back.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
        validate_assignment=False,
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Fields may be kubernetes-asyncio models (V1PodTemplateSpec...): teach pydantic
        # those before it builds this class's schema.
        teach_pydantic()
        super().__init_subclass__(**kwargs)

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready wire form: camelCase keys, ``None`` fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Build the model from its wire form."""
        return cls.model_validate(data)


class OwnerReference(KubeModel):
    """Names an owner of an object; the garbage collector deletes dependents of gone owners."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectReference(KubeModel):
    """Points at one object, at one version of it (core/v1 ``ObjectReference``).

    What a status lists its objects by (kubebuilder's CronJob keeps its running Jobs in
    ``status.active``); `pyctrl.controllerutil.get_reference` makes one from an object.
    Every field is optional, as in core/v1.
    """

    api_version: str | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    field_path: str | None = None


class ManagedFieldsEntry(KubeModel):
    """Which fields one field manager owns, as server-side apply tracks them."""

    manager: str | None = None
    operation: str | None = None
    api_version: str | None = None
    time: Time | None = None
    fields_type: str | None = None
    fields_v1: dict[str, Any] | None = Field(default=None, alias="fieldsV1")
    subresource: str | None = None


class ObjectMeta(KubeModel):
    """Metadata every persisted object has (``metav1.ObjectMeta``)."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None
    managed_fields: list[ManagedFieldsEntry] | None = None


ConditionStatus = Literal["True", "False", "Unknown"]


class Condition(KubeModel):
    """One aspect of an object's current state (``metav1.Condition``).

    Attributes:
        type: CamelCase name of the aspect, e.g. ``Available`` or ``Ready``.
        status: ``"True"``, ``"False"`` or ``"Unknown"``.
        observed_generation: The ``metadata.generation`` the condition was computed from.
        last_transition_time: When ``status`` last changed.
        reason: CamelCase machine-readable reason for the last transition.
        message: Human-readable detail.
    """

    type: str
    status: ConditionStatus
    observed_generation: int | None = None
    last_transition_time: Time | None = None
    reason: str = ""
    message: str = ""


def find_status_condition(conditions: list[Condition] | None, type_: str) -> Condition | None:
    """Return the condition of the given type, or None."""
    for condition in conditions or ():
        if condition.type == type_:
            return condition
    return None


def set_status_condition(conditions: list[Condition], new: Condition) -> bool:
    """Set ``new`` in ``conditions`` the way ``meta.SetStatusCondition`` does.

    A condition of a type not yet present is appended, stamped with the current time
    unless it carries one. For an existing type, status, reason, message and observed
    generation are updated, but ``last_transition_time`` changes only when the status
    does (to ``new``'s time if it has one, otherwise now).

    Returns:
        True if anything in ``conditions`` changed.
    """
    existing = find_status_condition(conditions, new.type)
    if existing is None:
        added = new.model_copy()
        if added.last_transition_time is None:
            added.last_transition_time = now()
        conditions.append(added)
        return True
    changed = False
    if existing.status != new.status:
        existing.status = new.status
        existing.last_transition_time = new.last_transition_time or now()
        changed = True
    for attr in ("reason", "message", "observed_generation"):
        if getattr(existing, attr) != getattr(new, attr):
            setattr(existing, attr, getattr(new, attr))
            changed = True
    return changed


def remove_status_condition(conditions: list[Condition], type_: str) -> bool:
    """Remove the condition of the given type; return True if one was removed."""
    for index, condition in enumerate(conditions):
        if condition.type == type_:
            del conditions[index]
            return True
    return False


def is_status_condition_true(conditions: list[Condition] | None, type_: str) -> bool:
    """True if the condition of that type exists and its status is ``"True"``."""
    condition = find_status_condition(conditions, type_)
    return condition is not None and condition.status == "True"


def is_status_condition_false(conditions: list[Condition] | None, type_: str) -> bool:
    """True if the condition of that type exists and its status is ``"False"``."""
    condition = find_status_condition(conditions, type_)
    return condition is not None and condition.status == "False"


@dataclass(frozen=True, order=True, slots=True)
class GroupVersionKind:
    """Identifies a kind of object: ``apps/v1 Deployment``; the core group is ``""``."""

    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` field value: ``v1`` for the core group, else ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> GroupVersionKind:
        """Build from an ``apiVersion`` string and a kind."""
        group, _, version = api_version.rpartition("/")
        if not version:
            raise ValueError(f"invalid apiVersion {api_version!r}")
        return cls(group=group, version=version, kind=kind)

    def __str__(self) -> str:
        return f"{self.api_version}, Kind={self.kind}"


@dataclass(frozen=True, order=True, slots=True)
class GroupVersionResource:
    """Identifies a REST resource: ``apps/v1 deployments``."""

    group: str
    version: str
    resource: str

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, else ``group/version``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.api_version}, Resource={self.resource}"


BUILTIN_GROUPS = _merge_keys.BUILTIN_GROUPS
"""API groups served by kube-apiserver itself; every other group is custom (a CRD or an
aggregated API), which strategic merge patch does not support."""
