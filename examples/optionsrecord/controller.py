"""The OptionsRecord controller: watch the kinds the records name, back up every change.

One controller does it all:

- it reconciles OptionsRecords (``for_``, generation changes only). The reconciler
  makes sure a watch runs for every kind a record names, found on the API server
  through the REST mapper; a kind the server does not serve is reported in the
  record's ``Ready`` condition and looked for again every ``--retry-period`` seconds,
  without starting an informer that would retry (and fail readiness) forever. It then
  counts the record's backups into its status;
- watches on the named kinds are added while the controller runs
  (`pyctrl.controller.Controller.watch` on a running controller starts the source at
  once). Each is a `pyctrl.source.Kind` over `pyctrl.resource.Unstructured`, so any
  kind works without Python types, filtered by predicates: creates carry no previous
  version and are dropped, resyncs are dropped (`ResourceVersionChanged`), updates
  that change nothing but status or server-kept metadata are dropped
  (`content_changed`), and objects labelled ``backup.example.com/exclude=true`` are
  skipped;
- the event handler, `BackupHandler`, does the backing up, because only the event
  knows the previous version: an update keeps the old object, a deletion the last
  state. It then enqueues the records that cover the object, so their status counts
  the new backup.

Watches, once started, last as long as the process: the cache cannot stop an informer.
A kind no record names any more is still watched until the next restart, but nothing
is backed up for it, as the handler checks the current records for every event.

`operator` is the process (``python -m examples.optionsrecord``) and the source of
the manifests under ``config/``; it adds ``--backup-dir``, ``--max-history`` and
``--retry-period`` to the usual flags, a PersistentVolumeClaim for the backups to the
manager's Deployment, and read access to every kind to its RBAC.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from examples.optionsrecord.api import READY, OptionsRecord
from examples.optionsrecord.backup import BackupStore, Event
from pyctrl.app import Operator, PolicyRule
from pyctrl.builder import controller_managed_by
from pyctrl.client import MergeFrom, NoKindMatchError
from pyctrl.log import get_logger
from pyctrl.meta import Condition, GroupVersionKind, set_status_condition
from pyctrl.predicate import (
    Funcs,
    GenerationChanged,
    Predicate,
    ResourceVersionChanged,
    label_selector,
    not_,
)
from pyctrl.reconcile import Request, Result
from pyctrl.resource import Unstructured
from pyctrl.source import Kind

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from kubernetes_asyncio.client import Configuration

    from pyctrl.config import Config
    from pyctrl.controller import Controller
    from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
    from pyctrl.handler import Queue
    from pyctrl.manager import Manager

__all__ = [
    "EXCLUDE_LABEL",
    "BackupHandler",
    "KindWatches",
    "OptionsRecordOperator",
    "OptionsRecordReconciler",
    "Settings",
    "backup_predicates",
    "content_changed",
    "operator",
    "setup",
]

_log = get_logger("examples.optionsrecord")

EXCLUDE_LABEL = "backup.example.com/exclude"
"""Objects labelled ``backup.example.com/exclude=true`` are never backed up."""

BACKUP_MOUNT = "/var/lib/optionsrecord"
"""Where the manager's Deployment mounts the backup volume."""

# How long a reconcile waits for new watches to list before reporting them unsynced.
_SYNC_WAIT = 10.0
# Metadata the API server keeps for itself: a change there alone is not worth a backup.
_SERVER_METADATA = ("resourceVersion", "generation", "managedFields")


@dataclass(frozen=True)
class Settings:
    """Where backups go and how many are kept (the extra flags).

    Attributes:
        backup_dir: The backup directory (``--backup-dir``).
        max_history: Backups kept per object unless a record says otherwise
            (``--max-history``).
        retry_period: Seconds between looks for kinds the server does not serve yet
            (``--retry-period``).
    """

    backup_dir: Path = Path("backups")
    max_history: int = 10
    retry_period: float = 30.0

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Settings:
        """Read the settings from parsed flags."""
        return cls(
            backup_dir=Path(args.backup_dir),
            max_history=args.max_history,
            retry_period=args.retry_period,
        )


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Add the backup flags to the operator's parser."""
    defaults = Settings()
    group = parser.add_argument_group("backups")
    group.add_argument(
        "--backup-dir",
        default=str(defaults.backup_dir),
        help="directory the backups are written to",
    )
    group.add_argument(
        "--max-history",
        type=_at_least_one,
        default=defaults.max_history,
        help="backups kept per object when an OptionsRecord sets no historyLimit",
    )
    group.add_argument(
        "--retry-period",
        type=_positive,
        default=defaults.retry_period,
        help="seconds between looks for kinds the API server does not serve yet",
    )


# -- predicates -----------------------------------------------------------------------------


def _content(obj: Any) -> dict[str, Any]:
    data = obj.to_dict() if isinstance(obj, Unstructured) else dict(obj)
    data.pop("status", None)
    metadata = dict(data.get("metadata") or {})
    for key in _SERVER_METADATA:
        metadata.pop(key, None)
    data["metadata"] = metadata
    return data


def content_changed() -> Predicate:
    """Updates pass only when something besides status and server-kept metadata changed.

    A Deployment's status changes far more often than its spec; backing up each of
    those would push the versions that matter out of the bounded history.
    """

    def changed(event: UpdateEvent[Any]) -> bool:
        return _content(event.object_old) != _content(event.object_new)

    return Funcs(on_update=changed)


def backup_predicates() -> tuple[Predicate, ...]:
    """The filters of every backup watch (see the module docs)."""
    return (
        Funcs(on_create=lambda _event: False, on_generic=lambda _event: False),
        ResourceVersionChanged(),
        content_changed(),
        not_(label_selector(f"{EXCLUDE_LABEL}=true")),
    )


# -- the event handler that writes backups -----------------------------------------------------


@dataclass
class BackupJournal:
    """The outcome of each record's last backup write, for its ``Ready`` condition.

    Attributes:
        errors: Why the last write for a record (by name) failed; absent if it succeeded.
    """

    errors: dict[str, str] = field(default_factory=dict)

    def record(self, records: Sequence[OptionsRecord], error: str | None) -> None:
        """Note the outcome of a write for the ``records`` covering the object."""
        for record in records:
            name = record.metadata.name or ""
            if error is None:
                self.errors.pop(name, None)
            else:
                self.errors[name] = error

    def error_for(self, record: OptionsRecord) -> str | None:
        """Why the record's last write failed, or None."""
        return self.errors.get(record.metadata.name or "")


class BackupHandler:
    """An event handler that writes backups, then enqueues the records covering the object.

    Args:
        records: Returns the current OptionsRecords (from the cache).
        store: The backup directory.
        settings: The default history limit.
        journal: Where write failures are reported.
    """

    def __init__(
        self,
        records: Callable[[], Awaitable[list[OptionsRecord]]],
        store: BackupStore,
        settings: Settings,
        journal: BackupJournal,
    ) -> None:
        self._records = records
        self._store = store
        self._settings = settings
        self._journal = journal

    async def create(self, event: CreateEvent[Any], queue: Queue) -> None:
        """A new object has no previous version: nothing to keep."""

    async def update(self, event: UpdateEvent[Any], queue: Queue) -> None:
        """Keep the version before the change."""
        await self._backup(event.object_old, "update", queue)

    async def delete(self, event: DeleteEvent[Any], queue: Queue) -> None:
        """Keep the last state of the deleted object."""
        await self._backup(event.object, "delete", queue)

    async def generic(self, event: GenericEvent[Any], queue: Queue) -> None:
        """Generic events carry no change: nothing to keep."""

    async def _backup(self, obj: Unstructured, event: Event, queue: Queue) -> None:
        covering = [
            record for record in await self._records() if record.spec.covers(obj.gvk, obj.namespace)
        ]
        if not covering:
            return
        keep = max(record.spec.history_limit or self._settings.max_history for record in covering)
        try:
            path = await asyncio.to_thread(self._store.write, obj.to_dict(), event=event, keep=keep)
        except (OSError, ValueError) as exc:
            error = f"cannot back up {obj.kind} {_key(obj)}: {exc}"
            self._journal.record(covering, error)
            _log.error("backup failed", error=error)
        else:
            self._journal.record(covering, None)
            _log.info(
                "backed up", kind=obj.kind, object=_key(obj), backup_event=event, file=str(path)
            )
        for record in covering:
            queue.add(Request("", record.metadata.name or ""))


def _key(obj: Unstructured) -> str:
    return f"{obj.namespace}/{obj.name}" if obj.namespace else obj.name


# -- watches started at runtime -----------------------------------------------------------------


class KindWatches:
    """Starts one backup watch per kind on the running controller, each at most once.

    Args:
        manager: Its cache provides the informers.
        handler: Receives the events of every watch.
        predicates: Filter the events of every watch.
    """

    def __init__(self, manager: Manager, handler: BackupHandler, predicates: tuple[Predicate, ...]):
        self._cache = manager.cache
        self._handler = handler
        self._predicates = predicates
        self._controller: Controller | None = None
        self._sources: dict[GroupVersionKind, Kind] = {}

    def attach(self, controller: Controller) -> None:
        """Add watches to ``controller`` (the OptionsRecord controller)."""
        self._controller = controller

    @property
    def watched(self) -> frozenset[GroupVersionKind]:
        """The kinds watched so far."""
        return frozenset(self._sources)

    def ensure(self, gvk: GroupVersionKind) -> bool:
        """Watch ``gvk`` unless it is watched already; True if a watch was started."""
        if gvk in self._sources:
            return False
        if self._controller is None:
            raise RuntimeError("KindWatches.attach(controller) must be called before ensure()")
        controller = self._controller

        def start() -> Kind:
            source = Kind(self._cache, Unstructured, self._handler, *self._predicates, gvk=gvk)
            controller.watch(source)
            return source

        # Tasks copy the context they are created in: started from a reconcile, the
        # informer and the watch would log that reconcile's id for ever after.
        self._sources[gvk] = contextvars.Context().run(start)
        _log.info("watching kind for backups", gvk=str(gvk))
        return True

    async def wait_synced(
        self,
        kinds: Sequence[GroupVersionKind],
        timeout: float,  # noqa: ASYNC109 - a bound on the whole wait, reported, not raised
    ) -> list[GroupVersionKind]:
        """Wait until the watches of ``kinds`` have listed; return those still listing."""
        sources = [self._sources[gvk] for gvk in kinds if gvk in self._sources]
        try:
            async with asyncio.timeout(timeout):
                for source in sources:
                    await source.wait_for_sync()
        except TimeoutError:
            pass
        return [gvk for gvk in kinds if gvk in self._sources and not self._synced(gvk)]

    def _synced(self, gvk: GroupVersionKind) -> bool:
        return self._cache.get_informer(Unstructured, gvk=gvk).synced()


# -- the reconciler -------------------------------------------------------------------------------


class OptionsRecordReconciler:
    """Makes sure the record's kinds are watched, and reports its backups in status.

    Args:
        manager: Gives the client and the REST mapper.
        watches: Starts watches.
        store: The backup directory.
        journal: The outcome of the last backup write.
        settings: The retry period.
    """

    def __init__(
        self,
        manager: Manager,
        watches: KindWatches,
        store: BackupStore,
        journal: BackupJournal,
        settings: Settings,
    ) -> None:
        self._client = manager.client
        self._mapper = manager.mapper
        self._watches = watches
        self._store = store
        self._journal = journal
        self._settings = settings

    async def reconcile_object(self, record: OptionsRecord) -> Result:
        """Reconcile one OptionsRecord."""
        missing: list[str] = []
        served: list[GroupVersionKind] = []
        for kind in record.spec.kinds:
            try:
                await self._mapper.mapping_for(kind.gvk)
            except NoKindMatchError:
                missing.append(str(kind))
                continue
            self._watches.ensure(kind.gvk)
            served.append(kind.gvk)
        # Ready must mean "changes from now on are kept": wait for the first lists.
        listing = await self._watches.wait_synced(served, _SYNC_WAIT)
        summary = await asyncio.to_thread(self._store.summary, record.spec)
        original = record.model_copy(deep=True)
        status = record.status
        status.backups = summary.backups
        status.objects = summary.objects
        # Status keeps whole seconds (metav1.Time): compare like with like.
        last = summary.last_backup
        status.last_backup_time = last.replace(microsecond=0) if last else None
        status.watched_kinds = [str(k) for k in record.spec.kinds if str(k) not in missing]
        status.observed_generation = record.metadata.generation or 0
        set_status_condition(status.conditions, self._ready(record, missing, listing))
        if status != original.status:
            await self._client.status().patch(record, MergeFrom(original))
        if missing or listing:
            return Result(requeue_after=self._settings.retry_period)
        return Result()

    def _ready(
        self, record: OptionsRecord, missing: list[str], listing: list[GroupVersionKind]
    ) -> Condition:
        if missing:
            return Condition(
                type=READY,
                status="False",
                reason="KindNotServed",
                message=f"the API server does not serve {', '.join(missing)}; "
                f"looking again every {self._settings.retry_period:g}s",
            )
        if listing:
            kinds = ", ".join(f"{gvk.api_version}/{gvk.kind}" for gvk in listing)
            return Condition(
                type=READY,
                status="False",
                reason="WatchNotSynced",
                message=f"still listing {kinds}: changes are not backed up until it is done",
            )
        error = self._journal.error_for(record)
        if error is not None:
            return Condition(type=READY, status="False", reason="BackupFailed", message=error)
        spec = record.spec
        where = ", ".join(spec.namespaces) if spec.namespaces else "every namespace"
        return Condition(
            type=READY,
            status="True",
            reason="Watching",
            message=f"backing up {len(spec.kinds)} kind(s) in {where}",
        )


# -- wiring -----------------------------------------------------------------------------------


async def setup(manager: Manager, settings: Settings | None = None) -> None:
    """Register the OptionsRecord controller (and its runtime watches) on ``manager``."""
    settings = settings or Settings()
    store = BackupStore(settings.backup_dir)
    journal = BackupJournal()
    cache = manager.cache

    async def records() -> list[OptionsRecord]:
        return (await cache.list(OptionsRecord)).items

    handler = BackupHandler(records, store, settings, journal)
    watches = KindWatches(manager, handler, backup_predicates())
    controller = (
        controller_managed_by(manager)
        .for_(OptionsRecord, GenerationChanged())
        .complete(OptionsRecordReconciler(manager, watches, store, journal, settings))
    )
    watches.attach(controller)


@dataclass
class OptionsRecordOperator(Operator):
    """The `pyctrl.app.Operator`, with the backup flags and a volume for the backups."""

    def parser(self) -> argparse.ArgumentParser:
        """The usual flags plus the backup flags (see `Settings`)."""
        parser = super().parser()
        add_flags(parser)
        parser.epilog = "To put a backup back: python -m examples.optionsrecord restore --help"
        return parser

    async def create_manager(
        self, config: Config | Configuration, args: argparse.Namespace | None = None
    ) -> Manager:
        """Build the Manager from flags and run `setup` with the `Settings` they give."""
        args = args or self.parser().parse_args([])
        settings = Settings.from_args(args)

        async def configured(manager: Manager) -> None:
            await setup(manager, settings)

        return await Operator.create_manager(
            dataclasses.replace(self, setup=configured), config, args
        )

    async def manifests(self) -> dict[str, list[dict[str, Any]]]:
        """The generated manifests, with a PersistentVolumeClaim mounted for the backups."""
        files = await super().manifests()
        objects = files["manager/manager.yaml"]
        deployment = next(o for o in objects if o["kind"] == "Deployment")
        pod = deployment["spec"]["template"]["spec"]
        container = pod["containers"][0]
        container["args"].append(f"--backup-dir={BACKUP_MOUNT}/backups")
        container.setdefault("volumeMounts", []).append(
            {"name": "backups", "mountPath": BACKUP_MOUNT}
        )
        pod.setdefault("volumes", []).append(
            {"name": "backups", "persistentVolumeClaim": {"claimName": f"{self.name}-backups"}}
        )
        # The volume belongs to the image's non-root user; one writer at a time.
        pod["securityContext"]["fsGroup"] = 65532
        deployment["spec"]["strategy"] = {"type": "Recreate"}
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": f"{self.name}-backups", "namespace": self.namespace},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
        )
        return files


async def _setup_with_defaults(manager: Manager) -> None:
    await setup(manager)


operator = OptionsRecordOperator(
    name="optionsrecord",
    types=[OptionsRecord],
    setup=_setup_with_defaults,
    # The kinds to back up are chosen at runtime, in OptionsRecords: the operator must
    # be able to read (list and watch) any of them. Narrow this to the kinds you name.
    extra_rules=[PolicyRule(("*",), ("*",), ("get", "list", "watch"))],
)
"""The operator: ``operator.main()`` runs it, ``operator.write_manifests(dir)`` writes config/."""
