"""Storage-version migration: rewrite every object at the storage version, then forget the old.

A CRD's ``status.storedVersions`` lists every version objects may still be stored at in
etcd; the API server refuses to drop a version from ``spec.versions`` while it is listed.
Switching the storage version (``storage: true`` on ``v1``) changes nothing in etcd:
each object is re-encoded only when it is next written. kube-storage-version-migrator
closes the gap by writing every object once, unchanged ("no-op updates": the API server
reads the object, converts it, and stores it at the storage version), and then the
stored versions can be pruned. The Kubernetes documentation's procedure for CRDs is the
same: migrate, then patch ``status.storedVersions`` to the storage version alone.

`migrate_storage_version` does it for one CRD: it lists the objects at the storage
version page by page (``limit``/``continue``), updates each with the object just read (a
conflict means someone wrote it meanwhile, which stored it at the storage version too;
a missing object was deleted), waits between writes when a rate is set, records the
continue token of each finished page in an annotation on the CRD so that a migration
cut short resumes where it stopped (starting over when the token has expired), and
finally sets ``status.storedVersions`` to the storage version. `StorageVersionMigrator`
is the same as a leader-only runnable of the Manager; ``pyctrl crd migrate`` runs it once.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final

from pyctrl.errors import ConflictError, GoneError, NotFoundError
from pyctrl.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.client import Client
    from pyctrl.clock import Clock

__all__ = [
    "PROGRESS_ANNOTATION",
    "MigrationResult",
    "StorageVersionMigrator",
    "migrate_storage_version",
]

PROGRESS_ANNOTATION: Final = "pyctrl.dev/storage-version-migration"
"""Annotation on the CRD holding the migration's progress, for resuming."""

_log = get_logger("pyctrl.crd.migrate")


@dataclass(frozen=True, slots=True)
class MigrationResult:
    """What a migration did.

    Attributes:
        crd: The CRD's name.
        storage_version: The version every object is now stored at.
        migrated: Objects rewritten.
        skipped: Objects written or deleted by others meanwhile (already migrated).
        stored_versions: ``status.storedVersions`` afterwards.
    """

    crd: str
    storage_version: str
    migrated: int
    skipped: int
    stored_versions: tuple[str, ...]


def _crd_gvk() -> Any:
    from pyctrl.meta import GroupVersionKind

    return GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")


async def _read_crd(client: Client, name: str) -> Any:
    from pyctrl.resource import Unstructured

    return await client.get(Unstructured, name, gvk=_crd_gvk())


def _storage_version(crd: Any) -> str:
    versions = [v["name"] for v in crd.object["spec"]["versions"] if v.get("storage")]
    if len(versions) != 1:
        raise ValueError(f"CRD {crd.name} has no single storage version: {versions}")
    return str(versions[0])


def _resume_token(crd: Any, storage: str) -> str | None:
    raw = crd.annotations.get(PROGRESS_ANNOTATION)
    if not raw:
        return None
    try:
        progress = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(progress, dict) or progress.get("storageVersion") != storage:
        return None
    token = progress.get("continue")
    return token if isinstance(token, str) and token else None


async def _record(client: Client, crd: Any, progress: dict[str, str] | None) -> None:
    from pyctrl.client import MergePatch

    value = None if progress is None else json.dumps(progress, sort_keys=True)
    await client.patch(crd, MergePatch({"metadata": {"annotations": {PROGRESS_ANNOTATION: value}}}))


class _Pacer:
    """Spaces writes ``1 / qps`` seconds apart (no waiting without a rate)."""

    def __init__(self, qps: float | None, clock: Clock) -> None:
        if qps is not None and qps <= 0:
            raise ValueError(f"qps must be positive, not {qps}")
        self.interval = 0.0 if qps is None else 1.0 / qps
        self.clock = clock
        self.next = clock.now()

    async def wait(self) -> None:
        if not self.interval:
            return
        await self.clock.sleep_until(self.next)
        self.next = max(self.next, self.clock.now()) + self.interval


async def _rewrite(client: Client, items: list[Any], pacer: _Pacer, workers: int) -> int:
    """Write each object back unchanged; return how many were rewritten by us."""
    queue = list(reversed(items))
    rewritten = 0

    async def worker() -> None:
        nonlocal rewritten
        while queue:
            obj = queue.pop()
            await pacer.wait()
            try:
                await client.update(obj)
                rewritten += 1
            except (ConflictError, NotFoundError):
                pass  # written or deleted by someone else: stored at the new version already

    async with asyncio.TaskGroup() as group:
        for _ in range(min(workers, len(items))):
            group.create_task(worker())
    return rewritten


async def migrate_storage_version(
    client: Client,
    crd_name: str,
    *,
    page_size: int = 500,
    qps: float | None = None,
    workers: int = 1,
    clock: Clock | None = None,
    on_page: Callable[[int, str | None], None] | None = None,
) -> MigrationResult:
    """Rewrite every object of a CRD at its storage version, then prune storedVersions.

    Args:
        client: A client of the cluster.
        crd_name: The CRD (``<plural>.<group>``).
        page_size: Objects per list page.
        qps: At most this many writes per second; None for no limit.
        workers: Writes in flight at once within a page (kube-storage-version-migrator
            runs several workers too); the rate limit holds across them.
        clock: Time for the rate limit (tests pass a `pyctrl.clock.FakeClock`).
        on_page: Called after each page with the objects migrated so far and the
            continue token (None after the last page).

    Returns:
        What was done.

    Raises:
        ValueError: The CRD has no single storage version, or ``page_size``/``qps`` are
            not positive.
        pyctrl.errors.APIError: The API server refused a request (other than a conflict
            or a missing object while rewriting).
    """
    from pyctrl.clock import RealClock
    from pyctrl.meta import GroupVersionKind
    from pyctrl.resource import Unstructured

    if page_size <= 0 or workers <= 0:
        raise ValueError(f"page_size and workers must be positive, not {page_size}, {workers}")
    pacer = _Pacer(qps, clock or RealClock())
    crd = await _read_crd(client, crd_name)
    storage = _storage_version(crd)
    spec = crd.object["spec"]
    gvk = GroupVersionKind(spec["group"], storage, spec["names"]["kind"])
    token = _resume_token(crd, storage)
    if token:
        _log.info("resuming storage version migration", crd=crd_name, version=storage)
    migrated = skipped = 0
    while True:
        try:
            page = await client.list(Unstructured, limit=page_size, continue_=token, gvk=gvk)
        except GoneError:
            # The continue token expired (etcd compacted): start over; rewriting an object
            # twice is harmless.
            _log.info("continue token expired, listing again", crd=crd_name)
            token = None
            continue
        done = await _rewrite(client, page.items, pacer, workers)
        migrated += done
        skipped += len(page.items) - done
        token = page.continue_ or None
        crd = await _read_crd(client, crd_name)
        await _record(
            client, crd, {"storageVersion": storage, "continue": token} if token else None
        )
        if on_page is not None:
            on_page(migrated, token)
        if token is None:
            break
    crd = await _read_crd(client, crd_name)
    if _storage_version(crd) != storage:
        raise RuntimeError(
            f"the storage version of {crd_name} changed from {storage} to "
            f"{_storage_version(crd)} during the migration; run it again"
        )
    crd.object.setdefault("status", {})["storedVersions"] = [storage]
    updated = await client.status().update(crd)
    stored = tuple(updated.object.get("status", {}).get("storedVersions", ()))
    _log.info(
        "storage version migration done",
        crd=crd_name,
        version=storage,
        migrated=migrated,
        skipped=skipped,
    )
    return MigrationResult(crd_name, storage, migrated, skipped, stored)


class StorageVersionMigrator:
    """A leader-only Manager runnable that migrates CRDs to their storage versions.

    Add it to a Manager (``manager.add(StorageVersionMigrator(client, ["mysrvs.example.com"]))``)
    in the release that switches the storage version; once it has run, the next release
    may drop the old version (``pyctrl crd check`` says when that is safe). It migrates
    each CRD whose ``status.storedVersions`` holds more than the storage version, then
    returns: a runnable that finishes is fine for the Manager.

    Args:
        client: The Manager's client.
        crds: CRD names to migrate.
        page_size: Objects per list page.
        qps: Writes per second at most; None for no limit.
    """

    need_leader_election = True
    progress_annotation: ClassVar[str] = PROGRESS_ANNOTATION
    """The annotation on the CRD that records how far a migration got."""

    def __init__(
        self,
        client: Client,
        crds: list[str],
        *,
        page_size: int = 500,
        qps: float | None = 50.0,
    ) -> None:
        self.client = client
        self.crds = list(crds)
        self.page_size = page_size
        self.qps = qps
        self.results: list[MigrationResult] = []

    async def start(self) -> None:
        """Migrate each CRD that needs it, one after the other."""
        for name in self.crds:
            crd = await _read_crd(self.client, name)
            stored = crd.object.get("status", {}).get("storedVersions", [])
            if list(stored) == [_storage_version(crd)]:
                continue
            self.results.append(
                await migrate_storage_version(
                    self.client, name, page_size=self.page_size, qps=self.qps
                )
            )
