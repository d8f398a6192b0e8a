"""ValidatingAdmissionPolicies (kube-apiserver's pkg/registry/admissionregistration).

Defaulted and validated (their CEL expressions compiled) as kube-apiserver does; see
`pyctrl._apiserver.registry.validation.admissionpolicy`. kube-apiserver's policy
controller then type-checks the expressions against the matched kinds' schemas and
writes ``status.observedGeneration`` and ``status.typeChecking``; here the strategy
writes that status with every create or spec change
(`pyctrl._apiserver.admission.plugin.policy.typechecking`). A custom resource is typed
from its CRD's schema, a built-in kind from the OpenAPI definitions the server publishes
(references inlined, as kube-apiserver's DefinitionsSchemaResolver does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from pyctrl._apiserver.admission.plugin.policy.typechecking import type_check
from pyctrl._apiserver.registry.meta import CRDS, meta_of, ro_meta
from pyctrl._apiserver.registry.printing import admission_policy
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import admissionpolicy as _policy
from pyctrl._apiserver.scheme.builtin import go_package, openapi_definitions
from pyctrl._apiserver.scheme.resources import builtin_types

if TYPE_CHECKING:
    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType
    from pyctrl._apiserver.storage.store import Store

__all__ = ["ValidatingAdmissionPolicyStrategy"]

_MAX_DEPTH = 32
_OPAQUE: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _inline(definitions: dict[str, dict[str, Any]], node: Any, seen: tuple[str, ...]) -> Any:
    """A definition with its ``$ref``s replaced by what they name (recursion left opaque)."""
    if isinstance(node, list):
        return [_inline(definitions, item, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        target = definitions.get(name)
        if target is None or name in seen or len(seen) > _MAX_DEPTH:
            return _OPAQUE
        return _inline(definitions, target, (*seen, name))
    if node.get("format") == "int-or-string":
        return {"x-kubernetes-int-or-string": True}
    return {k: _inline(definitions, v, seen) for k, v in node.items() if k != "description"}


_BUILTIN_SCHEMAS: dict[tuple[str, str, str], tuple[str, dict[str, Any]] | None] = {}


def _builtin_schema(group: str, version: str, resource: str) -> tuple[str, dict[str, Any]] | None:
    """A built-in kind's schema, for type checking: ``(kind, schema)`` or None (cached)."""
    key = (group, version, resource)
    if key not in _BUILTIN_SCHEMAS:
        _BUILTIN_SCHEMAS[key] = _find_builtin_schema(group, version, resource)
    return _BUILTIN_SCHEMAS[key]


def _find_builtin_schema(
    group: str, version: str, resource: str
) -> tuple[str, dict[str, Any]] | None:
    for rt in builtin_types():
        if (rt.group, rt.version, rt.plural) == (group, version, resource):
            definitions = openapi_definitions(group, version, rt.kind, v3=False)
            if definitions is None:
                return None
            root = definitions.get(f"{go_package(group, version)}.{rt.kind}")
            return rt.kind, _inline(definitions, root, ())
    return None


_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _object_meta() -> dict[str, Any]:
    """ObjectMeta's schema as the server publishes it (references inlined)."""
    definitions = openapi_definitions("", "v1", "ConfigMap", v3=False) or {}
    found = _inline(definitions, definitions.get(_OBJECT_META), ())
    return found if isinstance(found, dict) else {"type": "object"}


def _version_schema(crd: dict[str, Any], version: str) -> dict[str, Any] | None:
    """A CRD version's schema as its published OpenAPI has it: ``metadata`` is ObjectMeta.

    kube-apiserver's type checker reads the published OpenAPI, where a custom resource's
    ``apiVersion``, ``kind`` and ``metadata``, the full ObjectMeta (labels,
    annotations...), not the name-only view CRD validation rules get.
    """
    for entry in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(entry, dict) and entry.get("name") == version:
            schema = (entry.get("schema") or {}).get("openAPIV3Schema")
            if not isinstance(schema, dict):
                return None
            properties = {
                **(schema.get("properties") or {}),
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": _object_meta(),
            }
            return {**schema, "properties": properties}
    return None


class ValidatingAdmissionPolicyStrategy(Strategy):
    """The rules of ValidatingAdmissionPolicies, and their type-checking status."""

    has_generation = True
    printer = admission_policy("Validations", "validations")
    initial_status = {}  # noqa: RUF012 - read only, copied on use

    @classmethod
    def for_store(cls, store: Store) -> Self:
        """The strategy of the server whose store is ``store``."""
        return cls(store)

    def __init__(self, store: Store) -> None:
        self.store = store

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_ValidatingAdmissionPolicy``."""
        _policy.default_policy(obj, mutating=False)

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """The metadata rules, then the spec's."""
        return super().validate_create(rt, obj) + _policy.validate_validating_policy(obj)

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """The status the policy controller writes: observed generation, type checking."""
        self._set_status(obj)

    def prepare_for_update(
        self, rt: ResourceType, new: dict[str, Any], existing: dict[str, Any], subresource: str
    ) -> None:
        """A spec change is type-checked again (a ``/status`` write is kept as sent)."""
        if subresource:
            return
        if meta_of(new).get("generation") != ro_meta(existing).get("generation"):
            self._set_status(new)
        else:
            new["status"] = existing.get("status") or {}

    def _set_status(self, obj: dict[str, Any]) -> None:
        warnings = type_check(obj, self._resolve, self._resolve_kind)
        type_checking: dict[str, Any] = {"expressionWarnings": warnings} if warnings else {}
        obj["status"] = {
            "observedGeneration": meta_of(obj).get("generation", 1),
            "typeChecking": type_checking,
        }

    def _crds(self) -> list[dict[str, Any]]:
        return self.store.items(CRDS, None)

    def _resolve(
        self, group: str, version: str, resource: str
    ) -> tuple[str, dict[str, Any]] | None:
        builtin = _builtin_schema(group, version, resource)
        if builtin is not None:
            return builtin
        for crd in self._crds():
            spec = crd.get("spec") or {}
            names = spec.get("names") or {}
            if spec.get("group") == group and names.get("plural") == resource:
                schema = _version_schema(crd, version)
                return (str(names.get("kind")), schema) if schema is not None else None
        return None

    def _resolve_kind(self, api_version: str, kind: str) -> dict[str, Any] | None:
        group, _, version = api_version.rpartition("/")
        definitions = openapi_definitions(group, version, kind, v3=False)
        if definitions is not None:
            root = definitions.get(f"{go_package(group, version)}.{kind}")
            return _inline(definitions, root, ()) if isinstance(root, dict) else None
        for crd in self._crds():
            spec = crd.get("spec") or {}
            if spec.get("group") == group and (spec.get("names") or {}).get("kind") == kind:
                return _version_schema(crd, version)
        return None
