r"""``python -m examples.optionsrecord restore``: put a backed-up object back.

Give it a backup file, or an object's backup directory
(``<backup-dir>/<namespace>/<kind>/<name>``) to take its newest backup::

    python -m examples.optionsrecord restore backups/default/configmap/app-config --list
    python -m examples.optionsrecord restore backups/default/configmap/app-config
    python -m examples.optionsrecord restore \
        backups/default/configmap/app-config/20240626T144100.123456Z.yaml --dry-run

The object is cleaned of what the API server sets for itself (``uid``,
``resourceVersion``, ``generation``, ``creationTimestamp``, ``managedFields``, deletion
marks, ``status``), then created if it is gone, or, if it exists, replaced as a whole
(an update carrying the live object's resourceVersion, so a concurrent change fails
instead of being overwritten). Owner references are kept: restore an owned object
only while its owner exists, or the garbage collector deletes it again.

It talks to the cluster with the caller's credentials (``--kubeconfig``, ``KUBECONFIG``
or in-cluster), never the operator's, which can only read.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from examples.optionsrecord.backup import BackupError, backup_time, load_backup
from pyctrl.client import Client, NoMatchError
from pyctrl.config import get_config
from pyctrl.errors import APIError, ConfigError, NotFoundError
from pyctrl.resource import Unstructured

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "RestoreResult",
    "choose_backup",
    "list_backups",
    "main",
    "parser",
    "restorable",
    "restore",
    "run",
]

# Set by the API server; sending them back would fail or mislead.
_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did.

    Attributes:
        action: ``created`` (the object was gone) or ``updated`` (it was replaced).
        object: The object as the API server returned it.
        source: The backup file used.
        dry_run: Whether the server only checked the write.
    """

    action: Literal["created", "updated"]
    object: Unstructured
    source: Path
    dry_run: bool = False

    def describe(self) -> str:
        """One line for humans: ``configmap/app-config in default updated from ...``."""
        obj = self.object
        where = f" in {obj.namespace}" if obj.namespace else ""
        suffix = " (server dry run)" if self.dry_run else ""
        return f"{obj.kind.lower()}/{obj.name}{where} {self.action} from {self.source}{suffix}"


def restorable(obj: dict[str, Any]) -> Unstructured:
    """The object of a backup, cleaned of server-set fields, ready to create or update."""
    clean = Unstructured.from_dict(obj)
    for key in _SERVER_METADATA:
        clean.metadata.pop(key, None)
    clean.object.pop("status", None)
    return clean


def choose_backup(path: Path) -> Path:
    """The backup file ``path`` names: itself, or the newest in an object's directory.

    Raises:
        BackupError: Nothing there, or a directory without backups.
    """
    if path.is_file():
        return path
    if path.is_dir():
        files = _backups(path)
        if not files:
            raise BackupError(f"{str(path)!r} holds no backups (<timestamp>.yaml files)")
        return files[-1]
    raise BackupError(f"no backup file or directory at {str(path)!r}")


def _backups(directory: Path) -> list[Path]:
    found = []
    for path in directory.glob("*.yaml"):
        try:
            backup_time(path)
        except BackupError:
            continue
        found.append(path)
    return sorted(found, key=lambda p: p.name)


async def restore(client: Client, path: Path, *, dry_run: bool = False) -> RestoreResult:
    """Put the object of backup ``path`` back (see the module docs).

    Raises:
        BackupError: ``path`` is no usable backup.
        pyctrl.errors.APIError: The API server refused the write.
    """
    source = choose_backup(path)
    obj = restorable(load_backup(source))
    try:
        live = await client.api_reader.get(
            Unstructured, obj.name, obj.namespace or None, gvk=obj.gvk
        )
    except NotFoundError:
        created = await client.create(obj, dry_run=dry_run)
        return RestoreResult("created", created, source, dry_run)
    obj.metadata["resourceVersion"] = live.resource_version
    updated = await client.update(obj, dry_run=dry_run)
    return RestoreResult("updated", updated, source, dry_run)


def parser() -> argparse.ArgumentParser:
    """The restore command's flags."""
    parser = argparse.ArgumentParser(
        prog="python -m examples.optionsrecord restore",
        description="Put an object back from an OptionsRecord backup.",
    )
    parser.add_argument(
        "backup",
        type=Path,
        help="a backup file, or an object's backup directory (its newest backup is used)",
    )
    parser.add_argument("--list", action="store_true", help="list the backups; restore nothing")
    parser.add_argument(
        "--dry-run", action="store_true", help="let the API server check the write, keep nothing"
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: KUBECONFIG, in-cluster)")
    parser.add_argument("--context", help="kubeconfig context to use")
    return parser


def list_backups(path: Path) -> int:
    """Print the backups ``path`` holds, newest first; return the exit status."""
    try:
        files = _backups(path) if path.is_dir() else [choose_backup(path)]
        if not files:
            raise BackupError(f"{str(path)!r} holds no backups")
    except BackupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for file in reversed(files):
        print(f"{backup_time(file).isoformat()}  {file}")
    return 0


async def run(args: argparse.Namespace) -> int:
    """Restore as the parsed flags say; return the exit status (messages go to stdout/stderr)."""
    try:
        config = await get_config(kubeconfig=args.kubeconfig, context=args.context)
        async with Client.from_config(config, field_owner="optionsrecord-restore") as client:
            result = await restore(client, args.backup, dry_run=args.dry_run)
    except (BackupError, ConfigError, NoMatchError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except APIError as exc:
        print(f"error: the API server refused the restore: {exc}", file=sys.stderr)
        return 1
    print(result.describe())
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The command's entry point: ``python -m examples.optionsrecord restore ...``."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.list:
        return list_backups(args.backup)
    return asyncio.run(run(args))
