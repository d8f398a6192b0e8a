"""The Scheme: which Python type stands for which GroupVersionKind, and back.

Like apimachinery's ``runtime.Scheme``, it lets a call name a type instead of a URL:
``client.get(V1Deployment, ...)`` and ``client.get(MySrv, ...)`` both work because the
Scheme knows V1Deployment is ``apps/v1 Deployment`` and MySrv declares its own identity.
It also converts objects between their Python form and the JSON dict the API server
speaks: `to_dict` and `from_dict`.

Three kinds of Python objects are understood:

- `pyctrl.resource.CustomResource` subclasses (pydantic), which carry their identity;
- kubernetes-asyncio's generated models of built-in kinds (``V1ConfigMap``,
  ``V1Deployment``...), registered by `Scheme.with_builtins` (the default scheme);
- `pyctrl.resource.Unstructured` and plain dicts, which carry ``apiVersion`` and ``kind``.

kubernetes-asyncio models are converted by pyctrl itself rather than through
``ApiClient.deserialize``: it is many times faster and makes no per-object copy of the
client configuration.
"""

from __future__ import annotations

import datetime as _dt
import re
from functools import cache
from typing import Any, TypeVar, cast

from pyctrl.errors import SchemeError
from pyctrl.meta import GroupVersionKind, KubeModel, format_time
from pyctrl.resource import CustomResource, PartialObjectMetadata, Unstructured

__all__ = ["Scheme", "default_scheme"]

T = TypeVar("T")

# API group of each stable kubernetes-asyncio model of a top-level kind. Version and kind
# come from the class name (``V1Deployment`` -> v1, Deployment).
_GROUP_OF_MODEL: dict[str, str] = {
    "CoreV1Event": "",
    "V1ConfigMap": "",
    "V1Endpoints": "",
    "V1LimitRange": "",
    "V1Namespace": "",
    "V1Node": "",
    "V1PersistentVolume": "",
    "V1PersistentVolumeClaim": "",
    "V1Pod": "",
    "V1PodTemplate": "",
    "V1ReplicationController": "",
    "V1ResourceQuota": "",
    "V1Secret": "",
    "V1Service": "",
    "V1ServiceAccount": "",
    "V1MutatingWebhookConfiguration": "admissionregistration.k8s.io",
    "V1ValidatingWebhookConfiguration": "admissionregistration.k8s.io",
    "V1ValidatingAdmissionPolicy": "admissionregistration.k8s.io",
    "V1ValidatingAdmissionPolicyBinding": "admissionregistration.k8s.io",
    "V1CustomResourceDefinition": "apiextensions.k8s.io",
    "V1APIService": "apiregistration.k8s.io",
    "V1ControllerRevision": "apps",
    "V1DaemonSet": "apps",
    "V1Deployment": "apps",
    "V1ReplicaSet": "apps",
    "V1StatefulSet": "apps",
    "V1HorizontalPodAutoscaler": "autoscaling",
    "V2HorizontalPodAutoscaler": "autoscaling",
    "V1CronJob": "batch",
    "V1Job": "batch",
    "V1CertificateSigningRequest": "certificates.k8s.io",
    "V1Lease": "coordination.k8s.io",
    "V1EndpointSlice": "discovery.k8s.io",
    "EventsV1Event": "events.k8s.io",
    "V1FlowSchema": "flowcontrol.apiserver.k8s.io",
    "V1PriorityLevelConfiguration": "flowcontrol.apiserver.k8s.io",
    "V1Ingress": "networking.k8s.io",
    "V1IngressClass": "networking.k8s.io",
    "V1NetworkPolicy": "networking.k8s.io",
    "V1RuntimeClass": "node.k8s.io",
    "V1PodDisruptionBudget": "policy",
    "V1ClusterRole": "rbac.authorization.k8s.io",
    "V1ClusterRoleBinding": "rbac.authorization.k8s.io",
    "V1Role": "rbac.authorization.k8s.io",
    "V1RoleBinding": "rbac.authorization.k8s.io",
    "V1PriorityClass": "scheduling.k8s.io",
    "V1CSIDriver": "storage.k8s.io",
    "V1CSINode": "storage.k8s.io",
    "V1CSIStorageCapacity": "storage.k8s.io",
    "V1StorageClass": "storage.k8s.io",
    "V1VolumeAttachment": "storage.k8s.io",
}
_MODEL_NAME = re.compile(r"^(?:Core|Events)?V(\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")


def _model_gvk(name: str) -> GroupVersionKind | None:
    """The GVK of the kubernetes-asyncio model class called ``name``, if it is a known kind."""
    group = _GROUP_OF_MODEL.get(name)
    match = _MODEL_NAME.match(name)
    if group is None or match is None:
        return None
    return GroupVersionKind(group, "v" + match.group(1), match.group(2))


class Scheme:
    """A registry of Python types by GroupVersionKind.

    Custom resource classes need no registration to be used by type, but registering
    them (`add`) lets the Scheme decode objects of that kind by their GVK alone, which
    ``from_dict`` without a class, and lists of mixed kinds, need.
    """

    def __init__(self) -> None:
        self._by_gvk: dict[GroupVersionKind, type[Any]] = {}
        self._by_type: dict[type[Any], GroupVersionKind] = {}
        # Built-in kinds registered by model name, their classes not imported yet.
        self._models: dict[GroupVersionKind, str] = {}

    @classmethod
    def with_builtins(cls) -> Scheme:
        """A Scheme with kubernetes-asyncio's models of the stable built-in kinds.

        The models are imported the first time the Scheme is asked for one of them
        (importing one imports all of them, some 35 MiB): an operator that never uses
        kubernetes-asyncio's models does not pay for them.
        """
        scheme = cls()
        for name in _GROUP_OF_MODEL:
            gvk = _model_gvk(name)
            if gvk is not None:
                scheme._models[gvk] = name
        return scheme

    def _resolve(self, gvk: GroupVersionKind) -> type[Any] | None:
        """Import the built-in model registered by name for ``gvk``, if any."""
        name = self._models.pop(gvk, None)
        if name is None:
            return None
        model = getattr(_models(), name, None)
        if model is not None:
            self._by_gvk[gvk] = model
            self._by_type[model] = gvk
        return model

    def add(self, type_: type[Any], gvk: GroupVersionKind | None = None) -> None:
        """Register a type; its GVK is derived when not given.

        Raises:
            SchemeError: the GVK cannot be derived, or another type holds it already.
        """
        gvk = gvk or self._derive_gvk(type_)
        holder = self._by_gvk.get(gvk) or self._resolve(gvk)
        if holder is not None and holder is not type_:
            raise SchemeError(f"{gvk} is already registered to {holder.__qualname__}")
        self._by_gvk[gvk] = type_
        self._by_type[type_] = gvk

    def type_for(self, gvk: GroupVersionKind) -> type[Any] | None:
        """The registered type for a GVK, or None."""
        return self._by_gvk.get(gvk) or self._resolve(gvk)

    def known_kinds(self) -> list[GroupVersionKind]:
        """Every registered GVK, sorted."""
        for gvk in list(self._models):
            self._resolve(gvk)
        return sorted(self._by_gvk)

    def gvk_for(self, obj_or_type: Any) -> GroupVersionKind:
        """The GroupVersionKind of a type, or of an object (read from the object if untyped).

        Raises:
            SchemeError: the type is not known and the object does not say.
        """
        if isinstance(obj_or_type, type):
            gvk = self._by_type.get(obj_or_type)
            return gvk or self._derive_gvk(obj_or_type)
        if isinstance(obj_or_type, Unstructured | PartialObjectMetadata):
            return obj_or_type.gvk
        if isinstance(obj_or_type, dict):
            api_version, kind = obj_or_type.get("apiVersion"), obj_or_type.get("kind")
            if not api_version or not kind:
                raise SchemeError("object has no apiVersion and kind to identify its type")
            return GroupVersionKind.from_api_version(str(api_version), str(kind))
        return self.gvk_for(type(obj_or_type))

    @staticmethod
    def _derive_gvk(type_: type[Any]) -> GroupVersionKind:
        if isinstance(type_, type) and issubclass(type_, CustomResource):
            try:
                return type_.gvk()
            except TypeError as exc:
                raise SchemeError(str(exc)) from None
        name = getattr(type_, "__name__", repr(type_))
        gvk = _model_gvk(name)
        if gvk is None:
            raise SchemeError(
                f"{name} is not a known Kubernetes type: register it with "
                "Scheme.add(type, GroupVersionKind(...)), or use Unstructured"
            )
        return gvk

    def to_dict(self, obj: Any) -> dict[str, Any]:
        """The wire form of an object (``apiVersion`` and ``kind`` always set).

        The result is a new dict that the caller owns.
        """
        if isinstance(obj, Unstructured):
            return obj.to_dict()
        if isinstance(obj, dict):
            return cast("dict[str, Any]", _deepcopy_json(obj))
        if isinstance(obj, KubeModel):
            data = obj.to_dict()
        elif hasattr(type(obj), "openapi_types"):
            data = cast("dict[str, Any]", _model_to_json(obj))
        else:
            raise SchemeError(f"cannot serialise {type(obj).__qualname__}: not a Kubernetes object")
        if not data.get("apiVersion") or not data.get("kind"):
            gvk = self.gvk_for(type(obj))
            data["apiVersion"], data["kind"] = gvk.api_version, gvk.kind
        return data

    def from_dict(self, data: dict[str, Any], type_: type[T] | None = None) -> T:
        """Build a typed object from its wire form.

        Args:
            data: The decoded JSON object. It is not modified; the result shares nothing
                mutable with it.
            type_: The Python type to build. When None, the registered type for the
                object's GVK is used, or `Unstructured` if none is registered.

        Raises:
            SchemeError: the data does not fit the type (the message says what is wrong).
        """
        if type_ is None:
            type_ = cast("type[T]", self.type_for(self.gvk_for(data)) or Unstructured)
        try:
            if type_ is Unstructured:
                return cast("T", Unstructured.from_dict(data))
            if type_ is dict:
                return cast("T", _deepcopy_json(data))
            if issubclass(type_, KubeModel):
                return cast("T", type_.model_validate(data))
            if hasattr(type_, "openapi_types"):
                return cast("T", _model_from_json(data, type_))
        except SchemeError:
            raise
        except (TypeError, ValueError) as exc:
            raise SchemeError(f"object does not fit {type_.__qualname__}: {exc}") from exc
        raise SchemeError(f"cannot decode into {type_.__qualname__}: not a Kubernetes type")


@cache
def default_scheme() -> Scheme:
    """The process-wide Scheme with the built-in kinds; custom types may be added to it."""
    return Scheme.with_builtins()


def _deepcopy_json(value: Any) -> Any:
    # JSON holds only dicts, lists and scalars: several times faster than copy.deepcopy.
    if isinstance(value, dict):
        return {k: _deepcopy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deepcopy_json(v) for v in value]
    return value


# kubernetes-asyncio models --------------------------------------------------------------


@cache
def _model_configuration() -> Any:
    from pyctrl._kubernetes import Configuration

    config = Configuration()
    config.client_side_validation = False
    return config


def _models() -> Any:
    from kubernetes_asyncio.client import models

    return models


@cache
def _model_class(name: str) -> Any:
    return getattr(_models(), name)


_LIST_TYPE = re.compile(r"^list\[(.+)\]$")
_DICT_TYPE = re.compile(r"^dict\(([^,]*), (.+)\)$")
_PRIMITIVES = {"str", "int", "float", "bool", "object"}


def _model_from_json(data: Any, klass: Any) -> Any:
    if data is None:
        return None
    kwargs = {}
    for attr, type_name in klass.openapi_types.items():
        key = klass.attribute_map[attr]
        if key in data:
            kwargs[attr] = _decode_value(data[key], type_name)
    return klass(local_vars_configuration=_model_configuration(), **kwargs)


def _decode_value(value: Any, type_name: str) -> Any:
    if value is None:
        return None
    if type_name in _PRIMITIVES:
        return value
    if type_name in ("datetime", "date"):
        return _parse_time(value)
    if match := _LIST_TYPE.match(type_name):
        inner = match.group(1)
        return [_decode_value(v, inner) for v in value]
    if match := _DICT_TYPE.match(type_name):
        inner = match.group(2)
        return {k: _decode_value(v, inner) for k, v in value.items()}
    return _model_from_json(value, _model_class(type_name))


def _parse_time(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = value[:-1] + "+00:00" if value.endswith("Z") else value
    try:
        return _dt.datetime.fromisoformat(text)
    except ValueError as exc:
        raise ValueError(f"invalid timestamp {value!r}") from exc


def _model_to_json(obj: Any) -> Any:
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    if isinstance(obj, list | tuple):
        return [_model_to_json(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _model_to_json(v) for k, v in obj.items()}
    if isinstance(obj, _dt.datetime):
        return format_time(obj, micro=obj.microsecond != 0)
    if isinstance(obj, _dt.date):
        return obj.isoformat()
    openapi_types = getattr(type(obj), "openapi_types", None)
    if openapi_types is None:
        raise SchemeError(f"cannot serialise {type(obj).__qualname__}")
    out = {}
    for attr in openapi_types:
        value = getattr(obj, attr)
        if value is not None:
            out[type(obj).attribute_map[attr]] = _model_to_json(value)
    return out
