"""The backup directory: one YAML file per kept version of an object, newest last.

Backups live under ``<backup-dir>/<namespace>/<kind>/<name>/<timestamp>.yaml``:

- ``<namespace>`` is the object's namespace, or ``_cluster`` for cluster-scoped objects
  (no namespace name starts with an underscore, so the two never clash);
- ``<kind>`` is the lowercase kind, followed by ``.<group>`` outside the core group, as
  kubectl spells resources: ``configmap``, ``deployment.apps``;
- ``<timestamp>`` is the UTC time the backup was taken, ``20240626T144100.123456Z``, so
  names sort in time order.

Each file holds the object as it was before a change (or its last state before a
deletion) as the cache saw it (managed fields stripped), after a comment header that
says what happened. A file is written to a temporary name and renamed into place, so a
crash never leaves half a backup. After each write the object's history is cut to the
newest ``keep`` files.

`BackupStore` does the file work synchronously; the controller calls it through
`asyncio.to_thread` so that disk latency never stalls the event loop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

import yaml

from pyctrl.meta import GroupVersionKind

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path

    from examples.optionsrecord.api import OptionsRecordSpec

__all__ = [
    "CLUSTER_SCOPE",
    "BackupError",
    "BackupStore",
    "BackupSummary",
    "Event",
    "backup_time",
    "kind_directory",
    "load_backup",
]

CLUSTER_SCOPE = "_cluster"
"""The namespace directory of cluster-scoped objects."""

Event = Literal["update", "delete"]
_TIMESTAMP = "%Y%m%dT%H%M%S.%fZ"
_SUFFIX = ".yaml"


class BackupError(Exception):
    """A backup file is missing, unreadable, or does not hold a Kubernetes object."""


def kind_directory(gvk: GroupVersionKind) -> str:
    """The directory name of a kind: ``configmap``, ``deployment.apps``."""
    kind = gvk.kind.lower()
    return f"{kind}.{gvk.group}" if gvk.group else kind


def _segment(what: str, value: str) -> str:
    # Names come from the API server, but a path must never escape the backup directory.
    if value in ("", ".", "..") or "/" in value or "\0" in value:
        raise ValueError(f"{what} {value!r} cannot name a backup directory")
    return value


def backup_time(path: Path) -> datetime:
    """When the backup in ``path`` was taken, read from its file name.

    Raises:
        BackupError: The name is not a backup file name.
    """
    try:
        return datetime.strptime(path.name.removesuffix(_SUFFIX), _TIMESTAMP).replace(tzinfo=UTC)
    except ValueError:
        raise BackupError(
            f"{path.name!r} is not a backup file name (expected <timestamp>{_SUFFIX}, "
            "e.g. 20240626T144100.123456Z.yaml)"
        ) from None


def _is_backup(path: Path) -> bool:
    return path.suffix == _SUFFIX and not path.name.startswith(".") and path.is_file()


@dataclass(frozen=True)
class BackupSummary:
    """What the store holds for one OptionsRecord.

    Attributes:
        backups: Backup files.
        objects: Objects with at least one backup.
        last_backup: When the newest was taken, or None.
    """

    backups: int = 0
    objects: int = 0
    last_backup: datetime | None = None


@dataclass
class BackupStore:
    """Reads and writes the backup directory (see the module docs).

    Attributes:
        root: The backup directory.
        now: The current UTC time (tests pass a fixed clock).
    """

    root: Path
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))

    def object_directory(self, gvk: GroupVersionKind, namespace: str, name: str) -> Path:
        """The directory of one object's backups."""
        scope = _segment("namespace", namespace) if namespace else CLUSTER_SCOPE
        return self.root / scope / kind_directory(gvk) / _segment("name", name)

    def history(self, gvk: GroupVersionKind, namespace: str, name: str) -> list[Path]:
        """One object's backups, oldest first."""
        return _backups_in(self.object_directory(gvk, namespace, name))

    def write(self, obj: Mapping[str, Any], *, event: Event, keep: int) -> Path:
        """Keep ``obj`` as a backup; cut the object's history to the newest ``keep``.

        Args:
            obj: The object as it was before the change (or before its deletion).
            event: What happened to it: ``update`` or ``delete``.
            keep: How many backups of the object to keep, at least 1.

        Returns:
            The new backup file.
        """
        if keep < 1:
            raise ValueError(f"keep must be at least 1, got {keep}")
        gvk, namespace, name = _identity(obj)
        directory = self.object_directory(gvk, namespace, name)
        directory.mkdir(parents=True, exist_ok=True)
        taken = self.now().astimezone(UTC)
        path = directory / f"{taken.strftime(_TIMESTAMP)}{_SUFFIX}"
        while path.exists():  # two backups in one microsecond: keep both, in order
            taken += timedelta(microseconds=1)
            path = directory / f"{taken.strftime(_TIMESTAMP)}{_SUFFIX}"
        text = _header(obj, gvk, event, taken) + yaml.safe_dump(
            dict(obj), sort_keys=False, allow_unicode=True
        )
        temporary = directory / f".{path.name}.tmp"
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)
        for old in _backups_in(directory)[:-keep]:
            old.unlink(missing_ok=True)
        return path

    def summary(self, spec: OptionsRecordSpec) -> BackupSummary:
        """Count the backups of the objects an OptionsRecord covers."""
        if not self.root.is_dir():
            return BackupSummary()
        kinds = {kind_directory(kind.gvk) for kind in spec.kinds}
        wanted = (set(spec.namespaces) | {CLUSTER_SCOPE}) if spec.namespaces else None
        backups = objects = 0
        last: Path | None = None
        for scope in sorted(self.root.iterdir()):
            if not scope.is_dir() or (wanted is not None and scope.name not in wanted):
                continue
            for kind in kinds:
                for directory in sorted((scope / kind).glob("*")):
                    files = _backups_in(directory)
                    if not files:
                        continue
                    backups += len(files)
                    objects += 1
                    if last is None or files[-1].name > last.name:
                        last = files[-1]
        return BackupSummary(backups, objects, backup_time(last) if last else None)


def _backups_in(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted((p for p in directory.iterdir() if _is_backup(p)), key=lambda p: p.name)


def _identity(obj: Mapping[str, Any]) -> tuple[GroupVersionKind, str, str]:
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise ValueError("object has no metadata")
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    name = metadata.get("name")
    if not api_version or not kind or not name:
        raise ValueError("object has no apiVersion, kind or metadata.name")
    gvk = GroupVersionKind.from_api_version(str(api_version), str(kind))
    return gvk, str(metadata.get("namespace") or ""), str(name)


def _header(obj: Mapping[str, Any], gvk: GroupVersionKind, event: Event, taken: datetime) -> str:
    metadata = obj["metadata"]
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    version = metadata.get("resourceVersion", "?")
    what = (
        "the object as it was before it changed"
        if event == "update"
        else "the object's last state before it was deleted"
    )
    return (
        f"# Backup of {gvk.kind} {where}{metadata['name']} ({gvk.api_version}), "
        f"taken {taken.strftime('%Y-%m-%dT%H:%M:%S.%fZ')}.\n"
        f"# Event: {event}: {what} (resourceVersion {version}).\n"
        "# Put it back with: python -m examples.optionsrecord restore <this file>\n"
    )


def load_backup(path: Path) -> dict[str, Any]:
    """Read a backup file: the object it holds.

    Raises:
        BackupError: The file cannot be read, is not YAML, or holds no Kubernetes object
            (apiVersion, kind and metadata.name are required).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BackupError(f"cannot read backup {str(path)!r}: {exc.strerror or exc}") from None
    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BackupError(f"backup {str(path)!r} is not valid YAML: {exc}") from None
    if not isinstance(obj, dict):
        raise BackupError(f"backup {str(path)!r} does not hold an object")
    metadata = obj.get("metadata")
    fields = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata.name": metadata.get("name") if isinstance(metadata, dict) else None,
    }
    missing = [name for name, value in fields.items() if not isinstance(value, str) or not value]
    if missing:
        raise BackupError(
            f"backup {str(path)!r} is not a Kubernetes object: no {', '.join(missing)}"
        )
    return obj
