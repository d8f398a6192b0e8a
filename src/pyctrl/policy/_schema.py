"""The CEL types a policy's expressions are checked against, from the kinds' schemas.

kube-apiserver type-checks a policy against the OpenAPI schema of each kind it matches
(``typechecking.go``; the result is a warning in the policy's status). pyctrl does it
when it generates the manifests, and refuses what does not check:

- ``object`` and ``oldObject``: a custom resource's CRD schema (`pyctrl.crd.schema_for`),
  or a built-in kind's schema as the embedded API server publishes it (the
  kubernetes-asyncio model's OpenAPI definition); ``metadata`` is the full ObjectMeta;
- ``params``: the param kind's schema the same way (a ConfigMap's ``data`` is a map of
  strings), ``null`` when the policy has no params;
- ``namespaceObject``: a Namespace; ``request``: the AdmissionRequest's fields
  (``operation``, ``userInfo.username``, ``userInfo.groups``...; ``options`` is dynamic);
- ``variables``: each variable typed by its own expression, in order.

Kinds without a Python type (rules given by hand) are dynamic: only the expressions'
syntax and names are checked; so is a built-in kind whose schema is recursive
(CustomResourceDefinition). Built-in kinds are otherwise typed in full from the
kubernetes-asyncio models and the OpenAPI definitions the embedded server publishes;
``metadata`` is ObjectMeta without ``managedFields``.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from pyctrl._apiextensions.cel import DYN, T, schema_type
from pyctrl._builtin_models import is_builtin_model
from pyctrl.errors import SchemaError
from pyctrl.resource import CustomResource

__all__ = ["OBJECT_META", "kind_type", "request_type"]

_STRING: Final = {"type": "string"}
_STRINGS: Final = {"type": "array", "items": _STRING}
_STRING_MAP: Final = {"type": "object", "additionalProperties": _STRING}
_TIME: Final = {"type": "string", "format": "date-time"}

OBJECT_META: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "name": _STRING,
        "generateName": _STRING,
        "namespace": _STRING,
        "uid": _STRING,
        "resourceVersion": _STRING,
        "generation": {"type": "integer"},
        "creationTimestamp": _TIME,
        "deletionTimestamp": _TIME,
        "deletionGracePeriodSeconds": {"type": "integer"},
        "labels": _STRING_MAP,
        "annotations": _STRING_MAP,
        "finalizers": _STRINGS,
        "ownerReferences": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "apiVersion": _STRING,
                    "kind": _STRING,
                    "name": _STRING,
                    "uid": _STRING,
                    "controller": {"type": "boolean"},
                    "blockOwnerDeletion": {"type": "boolean"},
                },
            },
        },
    },
}
"""ObjectMeta's schema, as the published OpenAPI types it (managedFields left out)."""


def _schema(type_: type[Any], where: str) -> dict[str, Any]:
    if isinstance(type_, type) and issubclass(type_, CustomResource):
        from pyctrl.crd import schema_for

        schema = copy.deepcopy(schema_for(type_))
    elif is_builtin_model(type_):
        from pyctrl.crd._builtin import builtin_schema

        schema = builtin_schema(type_, lambda: dict(OBJECT_META), where)
    else:
        raise SchemaError(
            f"{where}: {getattr(type_, '__name__', type_)!r} is neither a CustomResource "
            "class nor a kubernetes-asyncio model"
        )
    schema.setdefault("properties", {})["metadata"] = copy.deepcopy(OBJECT_META)
    return schema


def kind_type(type_: type[Any] | None, where: str) -> T:
    """The CEL type of objects of ``type_``.

    Dynamic for None, and for a built-in kind whose schema is recursive (a
    CustomResourceDefinition's ``JSONSchemaProps``): its expressions are checked for
    syntax and names only.
    """
    if type_ is None:
        return DYN
    try:
        schema = _schema(type_, where)
    except SchemaError:
        if not is_builtin_model(type_):
            raise
        return DYN
    found = schema_type(schema, True)
    return found if found is not None else DYN


def _obj(**fields: T) -> T:
    return T("object", fields={name: (name, t) for name, t in fields.items()})


def request_type() -> T:
    """The CEL type of ``request`` (an ``admission.k8s.io/v1`` AdmissionRequest)."""
    string, boolean = schema_type(_STRING, False), schema_type({"type": "boolean"}, False)
    assert string is not None
    assert boolean is not None
    strings = T("list", string)
    kind = _obj(group=string, version=string, kind=string)
    resource = _obj(group=string, version=string, resource=string)
    user = _obj(username=string, uid=string, groups=strings, extra=T("map", strings))
    return _obj(
        uid=string,
        kind=kind,
        resource=resource,
        subResource=string,
        requestKind=kind,
        requestResource=resource,
        requestSubResource=string,
        name=string,
        namespace=string,
        operation=string,
        userInfo=user,
        dryRun=boolean,
        options=DYN,
    )
