"""Which changes to a CRD break the objects already stored, or the clients reading them.

The API server accepts almost any new CRD: it does not look at the objects in etcd.
`breaking_changes` compares an old CRD (the one installed, or the one committed) with a
new one and names, per field, what would lose or refuse existing data:

==========================  =============================================================
rule                        what it catches
==========================  =============================================================
``removed-stored-version``  a version in ``status.storedVersions`` (or the old storage
                            version) is gone from ``spec.versions``: objects stored at it
                            could no longer be read (the API server refuses it too)
``removed-served-version``  a served version is gone or no longer served: its clients fail
``scope-changed``           Namespaced <-> Cluster: every stored object becomes unreachable
``removed-field``           a property (or ``x-kubernetes-preserve-unknown-fields``) is
                            gone: the API server prunes the stored values on next write
``type-changed``            a field's type changed: stored values no longer validate
``new-required``            a field became required without a default: updates of existing
                            objects that lack it are refused
``tightened``               ``minimum``/``maximum``/``exclusive*``, ``minLength``/
                            ``maxLength``, ``minItems``/``maxItems``, ``minProperties``/
                            ``maxProperties``, ``enum`` or ``pattern`` made stricter
==========================  =============================================================

Each `Change` names its rule, the version and the field; ``allow`` takes rules
(``"removed-field"``) or a rule at one field (``"removed-field@.spec.legacy"``) that the
author has decided to accept, as a migration plan or a knowing break.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Sequence

__all__ = ["RULES", "Change", "breaking_changes"]

RULES: Final = (
    "removed-stored-version",
    "removed-served-version",
    "scope-changed",
    "removed-field",
    "type-changed",
    "new-required",
    "tightened",
)
"""The rules `breaking_changes` checks, by name."""

# (keyword, stricter when the new value is greater?) for numeric bounds.
_LOWER_BOUNDS: Final = ("minimum", "minLength", "minItems", "minProperties")
_UPPER_BOUNDS: Final = ("maximum", "maxLength", "maxItems", "maxProperties")


@dataclass(frozen=True, slots=True)
class Change:
    """One breaking difference between two CRDs (``Change.rules`` lists the rules).

    Attributes:
        rule: One of `RULES`.
        crd: The CRD's name (``<plural>.<group>``).
        version: The version it is in ("" for CRD-wide changes).
        field: The field path from the object's root (``.spec.port``), "" for CRD-wide.
        message: What changed, with the old and new values.
    """

    rule: str
    crd: str
    version: str
    field: str
    message: str

    rules: ClassVar[tuple[str, ...]] = RULES

    def __str__(self) -> str:
        where = " ".join(p for p in (self.crd, self.version, self.field) if p)
        return f"{where}: {self.message} [{self.rule}]"

    def allowed_by(self, allow: Collection[str]) -> bool:
        """Whether ``allow`` names this change's rule, or its rule at its field."""
        return self.rule in allow or f"{self.rule}@{self.field}" in allow


def breaking_changes(
    old: dict[str, Any],
    new: dict[str, Any],
    *,
    stored_versions: Sequence[str] | None = None,
    allow: Collection[str] = (),
) -> list[Change]:
    """The changes from ``old`` to ``new`` that break stored objects or their clients.

    Args:
        old: The CRD as installed (read from the cluster) or as committed.
        new: The CRD about to be applied.
        stored_versions: The versions objects may be stored at; default: the old CRD's
            ``status.storedVersions`` if it has them, else its storage version.
        allow: Rules, or ``rule@field`` entries, not to report.

    Returns:
        The changes, CRD-wide ones first, then per version and field.

    Raises:
        ValueError: ``allow`` names a rule that does not exist.
    """
    unknown = {a.split("@", 1)[0] for a in allow} - set(RULES)
    if unknown:
        raise ValueError(
            f"unknown rule(s) {', '.join(sorted(unknown))}; the rules are {', '.join(RULES)}"
        )
    name = str(new.get("metadata", {}).get("name") or old.get("metadata", {}).get("name", ""))
    changes = list(_crd_changes(name, old, new, stored_versions))
    old_versions = {v["name"]: v for v in old["spec"].get("versions", [])}
    for version in new["spec"].get("versions", []):
        before = old_versions.get(version["name"])
        if before is None:
            continue
        old_schema = (before.get("schema") or {}).get("openAPIV3Schema") or {}
        new_schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
        changes.extend(_SchemaDiff(name, version["name"]).compare(old_schema, new_schema, ""))
    return [c for c in changes if not c.allowed_by(allow)]


def _crd_changes(
    name: str, old: dict[str, Any], new: dict[str, Any], stored: Sequence[str] | None
) -> Iterator[Change]:
    old_scope = old["spec"].get("scope", "Namespaced")
    new_scope = new["spec"].get("scope", "Namespaced")
    if old_scope != new_scope:
        yield Change(
            "scope-changed", name, "", "", f"scope changed from {old_scope} to {new_scope}"
        )
    if stored is None:
        stored = (old.get("status") or {}).get("storedVersions") or [
            v["name"] for v in old["spec"].get("versions", []) if v.get("storage")
        ]
    new_versions = {v["name"]: v for v in new["spec"].get("versions", [])}
    for version in stored:
        if version not in new_versions:
            yield Change(
                "removed-stored-version",
                name,
                version,
                "",
                f"version {version} is removed but objects may be stored at it "
                f"(status.storedVersions: {', '.join(stored)}); migrate them first "
                "(pyctrl crd migrate)",
            )
    for version in old["spec"].get("versions", []):
        if not version.get("served", True) or version["name"] in stored:
            continue
        if not new_versions.get(version["name"], {}).get("served", False):
            yield Change(
                "removed-served-version",
                name,
                version["name"],
                "",
                f"version {version['name']} is no longer served; its clients will fail",
            )


def _kind(schema: dict[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return str(schema.get("type", "any"))


class _SchemaDiff:
    """Compares two schemas of one version, field by field."""

    def __init__(self, crd: str, version: str) -> None:
        self.crd = crd
        self.version = version

    def change(self, rule: str, field: str, message: str) -> Change:
        return Change(rule, self.crd, self.version, field or ".", message)

    def compare(self, old: dict[str, Any], new: dict[str, Any], path: str) -> Iterator[Change]:
        if _kind(old) != _kind(new) and "any" not in (_kind(old), _kind(new)):
            yield self.change(
                "type-changed", path, f"type changed from {_kind(old)} to {_kind(new)}"
            )
            return
        yield from self._bounds(old, new, path)
        if old.get("x-kubernetes-preserve-unknown-fields") and not new.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            yield self.change(
                "removed-field",
                path,
                "unknown fields are no longer preserved: the API server will prune them",
            )
        yield from self._properties(old, new, path)
        for key, suffix in (("items", "[*]"), ("additionalProperties", "[*]")):
            if isinstance(old.get(key), dict) and isinstance(new.get(key), dict):
                yield from self.compare(old[key], new[key], path + suffix)

    def _properties(self, old: dict[str, Any], new: dict[str, Any], path: str) -> Iterator[Change]:
        old_props: dict[str, Any] = old.get("properties") or {}
        new_props: dict[str, Any] = new.get("properties") or {}
        keeps_unknown = bool(new.get("x-kubernetes-preserve-unknown-fields"))
        for key, prop in old_props.items():
            child = f"{path}.{key}"
            if key not in new_props:
                if not keeps_unknown:
                    yield self.change(
                        "removed-field", child, "field removed: stored values will be pruned"
                    )
                continue
            yield from self.compare(prop, new_props[key], child)
        old_required = set(old.get("required") or ())
        for key in new.get("required") or ():
            if key in old_required:
                continue
            if "default" in new_props.get(key, {}):
                continue
            yield self.change(
                "new-required",
                f"{path}.{key}",
                "field is now required (and has no default): existing objects without "
                "it can no longer be updated",
            )

    def _bounds(self, old: dict[str, Any], new: dict[str, Any], path: str) -> Iterator[Change]:
        for key in _LOWER_BOUNDS:
            if key in new and (key not in old or new[key] > old[key]):
                yield self._tightened(path, key, old.get(key), new[key])
        for key in _UPPER_BOUNDS:
            if key in new and (key not in old or new[key] < old[key]):
                yield self._tightened(path, key, old.get(key), new[key])
        for flag in ("exclusiveMinimum", "exclusiveMaximum"):
            if new.get(flag) is True and old.get(flag) is not True:
                yield self._tightened(path, flag, old.get(flag), True)
        if "enum" in new:
            removed = [v for v in old.get("enum", ()) if v not in new["enum"]]
            if "enum" not in old or removed:
                what = f"values {removed} removed" if removed else "values restricted"
                yield self.change("tightened", path, f"enum {what}: now {new['enum']}")
        if "pattern" in new and new.get("pattern") != old.get("pattern"):
            yield self._tightened(path, "pattern", old.get("pattern"), new["pattern"])

    def _tightened(self, path: str, key: str, before: Any, after: Any) -> Change:
        was = "unset" if before is None else repr(before)
        return self.change("tightened", path, f"{key} changed from {was} to {after!r}")
