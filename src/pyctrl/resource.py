"""Typed custom resources, unstructured objects and metadata-only objects.

A custom resource type is a pydantic model declared once, with its identity given as
class keywords::

    class MySrvSpec(KubeModel):
        name: str
        port: Annotated[int, Field(ge=1, le=65535)] = 80

    class MySrv(CustomResource, group="myapp.example.com", version="v1alpha1",
                short_names=("ms",)):
        spec: MySrvSpec
        status: MySrvStatus = Field(default_factory=MySrvStatus)

The keywords (see `ResourceInfo`) default the way kubebuilder does: kind is the class
name, plural the lowercase English plural of the kind, scope ``Namespaced``. A class
with a ``status`` field gets a status subresource. ``apiVersion`` and ``kind`` are filled
in on construction, and an object whose ``apiVersion`` or ``kind`` does not match the
class is refused with an error naming both. `pyctrl.crd` turns these classes into
CustomResourceDefinitions; several classes with the same group and kind but different
versions are the versions of one CRD, exactly one of them marked ``storage=True``.

`Unstructured` holds any object as its JSON dict, for kinds that have no Python type;
`PartialObjectMetadata` is an object reduced to its type and metadata, as
metadata-only informers deliver it. `accessor` reads and writes the metadata of any of
these forms, and of kubernetes-asyncio models, through one interface.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Self

from pydantic import Field, model_validator

from pyctrl.meta import GroupVersionKind, KubeModel, ObjectMeta

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "CustomResource",
    "ObjectAccessor",
    "OwnerRef",
    "PartialObjectMetadata",
    "PrinterColumn",
    "ResourceInfo",
    "ScaleSubresource",
    "Unstructured",
    "accessor",
    "pluralize",
]

Scope = Literal["Namespaced", "Cluster"]


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """An extra column ``kubectl get`` shows (``additionalPrinterColumns``).

    Attributes:
        name: Column header.
        json_path: JSONPath into the object, e.g. ``.spec.port``.
        type: ``string``, ``integer``, ``number``, ``boolean`` or ``date``.
        description: Shown by ``kubectl explain``-like tools.
        priority: 0 shows by default; higher only with ``-o wide``.
        format: Optional OpenAPI format hint.
    """

    name: str
    json_path: str
    type: str = "string"
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True, slots=True)
class ScaleSubresource:
    """Declares a ``/scale`` subresource: where replicas live in spec and status."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = None


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """The identity and CRD options of a `CustomResource` class.

    Attributes:
        group: API group, e.g. ``myapp.example.com``.
        version: API version, e.g. ``v1alpha1``.
        kind: Kind, CamelCase.
        plural: Resource name in URLs, lowercase plural.
        singular: Lowercase singular name.
        scope: ``Namespaced`` or ``Cluster``.
        short_names: Short names for kubectl.
        categories: Categories, e.g. ``("all",)``.
        list_kind: Kind of lists, ``<Kind>List``.
        storage: Whether this version is the storage version.
        served: Whether this version is served.
        deprecated: Whether this version is deprecated.
        deprecation_warning: Warning sent to clients of a deprecated version.
        printer_columns: Extra ``kubectl get`` columns.
        status_subresource: Whether ``/status`` is a subresource.
        scale: The ``/scale`` subresource, if any.
    """

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    scope: Scope = "Namespaced"
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    list_kind: str = ""
    storage: bool = True
    served: bool = True
    deprecated: bool = False
    deprecation_warning: str | None = None
    printer_columns: tuple[PrinterColumn, ...] = ()
    status_subresource: bool = True
    scale: ScaleSubresource | None = None

    @property
    def gvk(self) -> GroupVersionKind:
        """The GroupVersionKind of the type."""
        return GroupVersionKind(self.group, self.version, self.kind)

    @property
    def api_version(self) -> str:
        """``group/version``."""
        return f"{self.group}/{self.version}"

    @property
    def namespaced(self) -> bool:
        """True if objects live in namespaces."""
        return self.scope == "Namespaced"

    @property
    def crd_name(self) -> str:
        """The name of the CustomResourceDefinition: ``<plural>.<group>``."""
        return f"{self.plural}.{self.group}"


_PLURAL_IRREGULAR = {"person": "people", "child": "children", "man": "men", "woman": "women"}
_PLURAL_UNCHANGED = {"data", "info", "metadata", "series", "species", "status"}
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_VERSION = re.compile(r"^v\d+((alpha|beta)\d+)?$")


def pluralize(kind: str) -> str:
    """Lowercase English plural of a kind, as kubebuilder derives resource names."""
    word = kind.lower()
    if word in _PLURAL_UNCHANGED:
        return word
    if word in _PLURAL_IRREGULAR:
        return _PLURAL_IRREGULAR[word]
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


class CustomResource(KubeModel):
    """Base class of typed custom resources.

    Subclass it with class keywords naming the type; see the module documentation.
    Intermediate base classes may omit the keywords. Subclasses declare ``spec`` and,
    usually, ``status``.
    """

    __resource__: ClassVar[ResourceInfo]

    api_version: str = Field(default="", alias="apiVersion")
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Keywords are consumed in __pydantic_init_subclass__, once the fields exist.
        super().__init_subclass__()

    @classmethod
    def __pydantic_init_subclass__(
        cls,
        *,
        group: str | None = None,
        version: str | None = None,
        kind: str | None = None,
        plural: str | None = None,
        singular: str | None = None,
        scope: Scope = "Namespaced",
        short_names: Sequence[str] = (),
        categories: Sequence[str] = (),
        storage: bool = True,
        served: bool = True,
        deprecated: bool = False,
        deprecation_warning: str | None = None,
        printer_columns: Sequence[PrinterColumn] = (),
        status_subresource: bool | None = None,
        scale: ScaleSubresource | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the class's `ResourceInfo` from its class keywords."""
        super().__pydantic_init_subclass__(**kwargs)
        if group is None and version is None:
            return  # an abstract intermediate base
        if not group or not version:
            raise TypeError(f"{cls.__name__}: both group= and version= are required")
        if "." not in group:
            raise TypeError(
                f"{cls.__name__}: group {group!r} must be a domain name with at least one dot"
            )
        if not _VERSION.match(version):
            raise TypeError(
                f"{cls.__name__}: version {version!r} must look like v1, v1alpha1 or v2beta3"
            )
        kind = kind or cls.__name__
        plural = plural or pluralize(kind)
        if not _DNS_LABEL.match(plural):
            raise TypeError(f"{cls.__name__}: plural {plural!r} must be a lowercase DNS label")
        if scope not in ("Namespaced", "Cluster"):
            raise TypeError(f"{cls.__name__}: scope must be 'Namespaced' or 'Cluster'")
        cls.__resource__ = ResourceInfo(
            group=group,
            version=version,
            kind=kind,
            plural=plural,
            singular=singular or kind.lower(),
            scope=scope,
            short_names=tuple(short_names),
            categories=tuple(categories),
            list_kind=f"{kind}List",
            storage=storage,
            served=served,
            deprecated=deprecated,
            deprecation_warning=deprecation_warning,
            printer_columns=tuple(printer_columns),
            status_subresource=(
                "status" in cls.model_fields if status_subresource is None else status_subresource
            ),
            scale=scale,
        )

    @classmethod
    def resource_info(cls) -> ResourceInfo:
        """Return the type's `ResourceInfo`; raises TypeError on an abstract base."""
        info = cls.__dict__.get("__resource__")
        if info is None:
            raise TypeError(
                f"{cls.__name__} declares no group and version: "
                "subclass CustomResource with group=... and version=..."
            )
        return info  # type: ignore[no-any-return]

    @classmethod
    def gvk(cls) -> GroupVersionKind:
        """The GroupVersionKind of the type."""
        return cls.resource_info().gvk

    @model_validator(mode="before")
    @classmethod
    def _fill_type_fields(cls, data: Any) -> Any:
        info = cls.__dict__.get("__resource__")
        if info is None or not isinstance(data, dict):
            return data
        api_version = data.get("apiVersion", data.get("api_version")) or info.api_version
        kind = data.get("kind") or info.kind
        if api_version != info.api_version or kind != info.kind:
            raise ValueError(
                f"object is {api_version}, Kind={kind} but {cls.__name__} is "
                f"{info.api_version}, Kind={info.kind}"
            )
        return {**data, "apiVersion": api_version, "kind": kind}


class PartialObjectMetadata(KubeModel):
    """An object reduced to its type and metadata, as metadata-only watches deliver it."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def gvk(self) -> GroupVersionKind:
        """The GroupVersionKind of the object it describes."""
        return GroupVersionKind.from_api_version(self.api_version, self.kind)


@dataclass(slots=True)
class Unstructured:
    """Any Kubernetes object as its decoded JSON, for kinds with no Python type.

    The dict is in ``object``; accessors read and write the common fields. Nested
    values are reached with `get_nested` and `set_nested`::

        deploy = Unstructured({"apiVersion": "apps/v1", "kind": "Deployment", ...})
        replicas = deploy.get_nested("spec", "replicas", default=1)
    """

    object: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(
        cls,
        gvk: GroupVersionKind,
        name: str = "",
        namespace: str = "",
        **fields: Any,
    ) -> Unstructured:
        """Create an object of the given type, name and namespace with extra top-level fields."""
        metadata: dict[str, Any] = {}
        if name:
            metadata["name"] = name
        if namespace:
            metadata["namespace"] = namespace
        return cls(
            {"apiVersion": gvk.api_version, "kind": gvk.kind, "metadata": metadata, **fields}
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Wrap a deep copy of ``data``."""
        return cls(copy.deepcopy(dict(data)))

    def to_dict(self) -> dict[str, Any]:
        """Return a deep copy of the object's JSON form."""
        return copy.deepcopy(self.object)

    @property
    def api_version(self) -> str:
        """``apiVersion``."""
        return str(self.object.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        """``kind``."""
        return str(self.object.get("kind", ""))

    @property
    def gvk(self) -> GroupVersionKind:
        """The object's GroupVersionKind, from ``apiVersion`` and ``kind``."""
        return GroupVersionKind.from_api_version(self.api_version, self.kind)

    @property
    def metadata(self) -> dict[str, Any]:
        """The ``metadata`` dict (created empty if missing)."""
        meta = self.object.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise TypeError(f"metadata of {self.kind} is {type(meta).__name__}, not an object")
        return meta

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` ("" when cluster-scoped)."""
        return str(self.metadata.get("namespace", ""))

    @property
    def uid(self) -> str:
        """``metadata.uid``."""
        return str(self.metadata.get("uid", ""))

    @property
    def resource_version(self) -> str:
        """``metadata.resourceVersion``."""
        return str(self.metadata.get("resourceVersion", ""))

    @property
    def generation(self) -> int:
        """``metadata.generation`` (0 if unset)."""
        return int(self.metadata.get("generation", 0) or 0)

    @property
    def labels(self) -> dict[str, str]:
        """``metadata.labels`` (created empty if missing, so it can be edited in place)."""
        labels: dict[str, str] = self.metadata.setdefault("labels", {})
        return labels

    @property
    def annotations(self) -> dict[str, str]:
        """``metadata.annotations`` (created empty if missing)."""
        annotations: dict[str, str] = self.metadata.setdefault("annotations", {})
        return annotations

    @property
    def finalizers(self) -> list[str]:
        """``metadata.finalizers`` (created empty if missing)."""
        finalizers: list[str] = self.metadata.setdefault("finalizers", [])
        return finalizers

    @property
    def owner_references(self) -> list[dict[str, Any]]:
        """``metadata.ownerReferences`` as dicts (created empty if missing)."""
        refs: list[dict[str, Any]] = self.metadata.setdefault("ownerReferences", [])
        return refs

    @property
    def deletion_timestamp(self) -> str | None:
        """``metadata.deletionTimestamp`` as sent by the server, or None."""
        value = self.metadata.get("deletionTimestamp")
        return str(value) if value else None

    def get_nested(self, *path: str, default: Any = None) -> Any:
        """Return the value at ``path`` (keys into nested objects), or ``default``."""
        node: Any = self.object
        for key in path:
            if not isinstance(node, dict) or key not in node:
                return default
            node = node[key]
        return node

    def set_nested(self, value: Any, *path: str) -> None:
        """Set the value at ``path``, creating intermediate objects."""
        if not path:
            raise ValueError("set_nested needs a path")
        node = self.object
        for key in path[:-1]:
            child = node.setdefault(key, {})
            if not isinstance(child, dict):
                raise TypeError(f"{'.'.join(path)}: {key} is not an object")
            node = child
        node[path[-1]] = value

    def remove_nested(self, *path: str) -> None:
        """Remove the value at ``path`` if present."""
        node: Any = self.object
        for key in path[:-1]:
            if not isinstance(node, dict) or key not in node:
                return
            node = node[key]
        if isinstance(node, dict):
            node.pop(path[-1], None)


class ObjectAccessor:
    """Uniform read and write access to the metadata of any object form.

    Handlers, predicates and controllerutil work on whatever the user's types are: a
    `CustomResource`, a kubernetes-asyncio model, `Unstructured`, `PartialObjectMetadata`
    or a plain dict. ``accessor(obj)`` hides the difference, like ``metav1.Object``::

        meta = accessor(obj)
        if meta.deletion_timestamp is None and "x/finalizer" not in meta.finalizers:
            meta.finalizers = [*meta.finalizers, "x/finalizer"]

    Getters return copies of lists and maps; setters write through to the object.
    """

    __slots__ = ("_kind", "_meta", "_obj")

    def __init__(self, obj: Any) -> None:
        self._obj = obj
        if isinstance(obj, Unstructured):
            self._kind, self._meta = "dict", obj.metadata
        elif isinstance(obj, dict):
            self._kind, self._meta = "dict", obj.setdefault("metadata", {})
        elif isinstance(getattr(obj, "metadata", None), ObjectMeta):
            self._kind, self._meta = "pydantic", obj.metadata
        elif hasattr(type(obj), "openapi_types") and hasattr(obj, "metadata"):
            if obj.metadata is None:
                from kubernetes_asyncio.client import V1ObjectMeta

                obj.metadata = V1ObjectMeta()
            self._kind, self._meta = "model", obj.metadata
        else:
            raise TypeError(f"{type(obj).__qualname__} is not a Kubernetes object with metadata")

    def _get(self, attr: str, key: str) -> Any:
        if self._kind == "dict":
            return self._meta.get(key)
        return getattr(self._meta, attr)

    def _set(self, attr: str, key: str, value: Any) -> None:
        if self._kind == "dict":
            if value is None:
                self._meta.pop(key, None)
            else:
                self._meta[key] = value
        else:
            setattr(self._meta, attr, value)

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return str(self._get("name", "name") or "")

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` ("" when cluster-scoped)."""
        return str(self._get("namespace", "namespace") or "")

    @property
    def uid(self) -> str:
        """``metadata.uid``."""
        return str(self._get("uid", "uid") or "")

    @property
    def resource_version(self) -> str:
        """``metadata.resourceVersion``."""
        return str(self._get("resource_version", "resourceVersion") or "")

    @property
    def generation(self) -> int:
        """``metadata.generation`` (0 if unset)."""
        return int(self._get("generation", "generation") or 0)

    @property
    def deletion_timestamp(self) -> Any:
        """``metadata.deletionTimestamp`` (a datetime or the wire string), or None."""
        return self._get("deletion_timestamp", "deletionTimestamp")

    @property
    def labels(self) -> dict[str, str]:
        """A copy of ``metadata.labels``."""
        return dict(self._get("labels", "labels") or {})

    @labels.setter
    def labels(self, value: Mapping[str, str]) -> None:
        self._set("labels", "labels", dict(value) or None)

    @property
    def annotations(self) -> dict[str, str]:
        """A copy of ``metadata.annotations``."""
        return dict(self._get("annotations", "annotations") or {})

    @annotations.setter
    def annotations(self, value: Mapping[str, str]) -> None:
        self._set("annotations", "annotations", dict(value) or None)

    @property
    def finalizers(self) -> list[str]:
        """A copy of ``metadata.finalizers``."""
        return list(self._get("finalizers", "finalizers") or [])

    @finalizers.setter
    def finalizers(self, value: Sequence[str]) -> None:
        self._set("finalizers", "finalizers", list(value) or None)

    @property
    def owner_references(self) -> list[OwnerRef]:
        """``metadata.ownerReferences`` as `OwnerRef` values."""
        refs = self._get("owner_references", "ownerReferences") or []
        return [OwnerRef.of(ref) for ref in refs]

    @owner_references.setter
    def owner_references(self, value: Sequence[OwnerRef]) -> None:
        if not value:
            self._set("owner_references", "ownerReferences", None)
        elif self._kind == "dict":
            self._set("owner_references", "ownerReferences", [r.to_dict() for r in value])
        elif self._kind == "pydantic":
            from pyctrl.meta import OwnerReference

            self._set(
                "owner_references",
                "ownerReferences",
                [OwnerReference.model_validate(r.to_dict()) for r in value],
            )
        else:
            from kubernetes_asyncio.client import V1OwnerReference

            self._set(
                "owner_references",
                "ownerReferences",
                [
                    V1OwnerReference(
                        api_version=r.api_version,
                        kind=r.kind,
                        name=r.name,
                        uid=r.uid,
                        controller=r.controller,
                        block_owner_deletion=r.block_owner_deletion,
                    )
                    for r in value
                ],
            )


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """An owner reference as a plain value, whatever form the object stores it in."""

    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None

    @classmethod
    def of(cls, ref: Any) -> OwnerRef:
        """Read an owner reference from a dict, a pydantic model or a kubernetes-asyncio model."""
        if isinstance(ref, dict):
            return cls(
                api_version=str(ref.get("apiVersion", "")),
                kind=str(ref.get("kind", "")),
                name=str(ref.get("name", "")),
                uid=str(ref.get("uid", "")),
                controller=ref.get("controller"),
                block_owner_deletion=ref.get("blockOwnerDeletion"),
            )
        return cls(
            api_version=ref.api_version,
            kind=ref.kind,
            name=ref.name,
            uid=ref.uid,
            controller=ref.controller,
            block_owner_deletion=ref.block_owner_deletion,
        )

    @property
    def group(self) -> str:
        """The owner's API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        out: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
        }
        if self.controller is not None:
            out["controller"] = self.controller
        if self.block_owner_deletion is not None:
            out["blockOwnerDeletion"] = self.block_owner_deletion
        return out


def accessor(obj: Any) -> ObjectAccessor:
    """Return an `ObjectAccessor` over ``obj``'s metadata."""
    return ObjectAccessor(obj)
