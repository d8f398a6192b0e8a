"""Storage-version migration against an API server: 1,000 objects moved from v1alpha1 to v1.

They run against whatever `Environment()` starts: the embedded server, or the real
CRD-only server when ``KUBEBUILDER_ASSETS`` names its build.
"""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

import pytest

from pyctrl.client import Client
from pyctrl.clock import FakeClock
from pyctrl.crd import StorageVersionMigrator, breaking_changes, migrate_storage_version
from pyctrl.envtest import Environment
from pyctrl.errors import InvalidError
from pyctrl.meta import GroupVersionKind
from pyctrl.resource import Unstructured
from pyctrl.testing import eventually

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

GROUP = "migrate.example.com"
NAME = f"widgets.{GROUP}"
CRD_GVK = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
SCHEMA = {
    "openAPIV3Schema": {
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
    }
}


def _version(name: str, *, storage: bool) -> dict[str, Any]:
    return {"name": name, "served": True, "storage": storage, "schema": copy.deepcopy(SCHEMA)}


def _crd(*versions: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": list(versions),
        },
    }


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    """A client of a server with the Widget CRD stored at v1alpha1."""
    async with (
        Environment(crds=[_crd(_version("v1alpha1", storage=True))]) as env,
        Client.from_config(env.config) as started,
    ):
        yield started


async def _create(client: Client, count: int) -> None:
    gvk = GroupVersionKind(GROUP, "v1alpha1", "Widget")
    semaphore = asyncio.Semaphore(100)

    async def one(i: int) -> None:
        async with semaphore:
            await client.create(Unstructured.new(gvk, f"w-{i:04d}", "default", spec={"size": i}))

    async with asyncio.TaskGroup() as group:
        for i in range(count):
            group.create_task(one(i))


async def _crd_now(client: Client) -> Unstructured:
    return await client.get(Unstructured, NAME, gvk=CRD_GVK)


async def _switch_storage_to_v1(client: Client) -> None:
    crd = await _crd_now(client)
    crd.object["spec"]["versions"] = [
        _version("v1", storage=True),
        _version("v1alpha1", storage=False),
    ]
    await client.update(crd)

    async def both_stored() -> bool:
        stored = (await _crd_now(client)).object.get("status", {}).get("storedVersions")
        return bool(stored == ["v1alpha1", "v1"])

    await eventually(both_stored, message="storedVersions == [v1alpha1, v1]")


async def _drop_v1alpha1(client: Client) -> None:
    crd = await _crd_now(client)
    crd.object["spec"]["versions"] = [_version("v1", storage=True)]
    await client.update(crd)


async def test_migration_prunes_stored_versions_so_the_old_version_can_go(client: Client) -> None:
    """After migrating 1,000 objects, storedVersions is [v1] and v1alpha1 may be dropped."""
    await _create(client, 1000)
    await _switch_storage_to_v1(client)
    installed = (await _crd_now(client)).object
    dropped = _crd(_version("v1", storage=True))
    assert [c.rule for c in breaking_changes(installed, dropped)] == ["removed-stored-version"]
    with pytest.raises(InvalidError, match=r"status\.storedVersions\[0\]"):
        await _drop_v1alpha1(client)

    pages: list[int] = []
    result = await migrate_storage_version(
        client, NAME, page_size=250, workers=16, on_page=lambda done, _t: pages.append(done)
    )
    assert (result.storage_version, result.migrated, result.skipped) == ("v1", 1000, 0)
    assert pages == [250, 500, 750, 1000]
    assert result.stored_versions == ("v1",)
    migrated = (await _crd_now(client)).object
    assert migrated["status"]["storedVersions"] == ["v1"]
    annotations = migrated["metadata"].get("annotations", {})
    assert StorageVersionMigrator.progress_annotation not in annotations
    # Only the served v1alpha1 goes away now, a change the author accepts explicitly.
    assert [c.rule for c in breaking_changes(migrated, dropped)] == ["removed-served-version"]
    assert breaking_changes(migrated, dropped, allow=["removed-served-version"]) == []

    await _drop_v1alpha1(client)
    listed = await client.list(Unstructured, gvk=GroupVersionKind(GROUP, "v1", "Widget"))
    assert len(listed.items) == 1000
    assert sorted(obj.get_nested("spec", "size") for obj in listed.items) == list(range(1000))


class _KilledError(Exception):
    """Stands for the operator process ending mid-migration."""


async def test_a_migration_cut_short_resumes_from_its_last_page(client: Client) -> None:
    """A migration that stops after one page resumes from the recorded continue token."""
    await _create(client, 30)
    await _switch_storage_to_v1(client)

    def stop_after_first_page(done: int, token: str | None) -> None:
        if token is not None:
            raise _KilledError  # the operator stops mid-way

    with pytest.raises(_KilledError):
        await migrate_storage_version(client, NAME, page_size=10, on_page=stop_after_first_page)
    progress = (await _crd_now(client)).annotations[StorageVersionMigrator.progress_annotation]
    assert '"storageVersion": "v1"' in progress
    resumed = await migrate_storage_version(client, NAME, page_size=10)
    assert resumed.migrated == 20
    assert resumed.stored_versions == ("v1",)


async def test_writes_are_spaced_by_the_rate_limit(client: Client) -> None:
    """With qps=2 the third object is written only once the clock has moved a second."""
    await _create(client, 3)
    await _switch_storage_to_v1(client)
    clock = FakeClock()
    done: list[int] = []

    async def migrated(count: int) -> bool:
        return bool(done) and done[-1] == count

    async with asyncio.TaskGroup() as group:
        task = group.create_task(
            migrate_storage_version(
                client, NAME, page_size=1, qps=2, clock=clock, on_page=lambda n, _t: done.append(n)
            )
        )
        await eventually(lambda: migrated(1))
        assert not task.done()
        clock.advance(0.5)
        await eventually(lambda: migrated(2))
        assert not task.done()
        clock.advance(0.5)
    assert task.result().migrated == 3


async def test_migrator_runnable_migrates_only_what_needs_it(client: Client) -> None:
    """The leader-only runnable migrates a CRD with old stored versions and skips the rest."""
    await _create(client, 5)
    migrator = StorageVersionMigrator(client, [NAME], qps=None)
    assert migrator.need_leader_election is True
    await migrator.start()
    assert migrator.results == []  # v1alpha1 is the storage version: nothing to do
    await _switch_storage_to_v1(client)
    await migrator.start()
    (result,) = migrator.results
    assert (result.migrated, result.stored_versions) == (5, ("v1",))
