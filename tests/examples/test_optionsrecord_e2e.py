"""The OptionsRecord operator end to end: kubectl, the operator and the restore command.

The operator runs in-process against the embedded API server, writing backups under a
temporary directory; the restore command runs as a real ``python -m
examples.optionsrecord restore`` process with the environment's kubeconfig.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from examples.optionsrecord import operator
from examples.optionsrecord.backup import BackupError, BackupStore, load_backup

from pyctrl.meta import GroupVersionKind
from pyctrl.testing import eventually

from .conftest import EXAMPLES, REPO, operator_running

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from pathlib import Path

    from pyctrl.envtest import Environment
    from pyctrl.manager import Manager

    from .conftest import Kubectl

OPTIONSRECORD = EXAMPLES / "optionsrecord"
SAMPLES = OPTIONSRECORD / "samples"
CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")
DEPLOYMENT = GroupVersionKind("apps", "v1", "Deployment")


@pytest.fixture
def crds() -> Sequence[Any]:
    return [OPTIONSRECORD / "config" / "crd"]


@pytest.fixture
def store(tmp_path: Path) -> BackupStore:
    return BackupStore(tmp_path / "backups")


@pytest.fixture
async def manager(env: Environment, store: BackupStore) -> AsyncIterator[Manager]:
    flags = (f"--backup-dir={store.root}", "--max-history=10", "--retry-period=0.2")
    async with operator_running(operator, env, *flags) as running:
        yield running


async def record_ready(kubectl: Kubectl, name: str) -> dict[str, Any]:
    """Wait until OptionsRecord ``name`` reports Ready=True; return it."""
    latest: dict[str, Any] = {}

    async def ready() -> bool:
        nonlocal latest
        latest = await kubectl.json("optionsrecord", name)
        conditions = (latest.get("status") or {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    await eventually(ready)
    return latest


async def apply_sample_record(kubectl: Kubectl) -> None:
    await kubectl("apply", "-f", str(SAMPLES / "backup_v1_optionsrecord.yaml"))
    await record_ready(kubectl, "default-apps")


async def wait_for_backups(
    store: BackupStore, gvk: GroupVersionKind, name: str, count: int
) -> list[Path]:
    """Wait until object ``default/name`` has ``count`` backups; return them, oldest first."""

    async def written() -> bool:
        return len(store.history(gvk, "default", name)) >= count

    await eventually(written)
    return store.history(gvk, "default", name)


async def restore(env: Environment, *args: str) -> tuple[int, str, str]:
    """Run ``python -m examples.optionsrecord restore <args>`` against the environment."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "examples.optionsrecord",
        "restore",
        f"--kubeconfig={env.kubeconfig_path}",
        *args,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(30):
        out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def configmap_data(kubectl: Kubectl, name: str) -> dict[str, str] | None:
    run = await kubectl("get", "configmap", name, "-o", "json", check=False)
    if run.code != 0:
        assert "NotFound" in run.err, run.err
        return None
    return dict(json.loads(run.out).get("data") or {})


async def test_changes_and_deletion_are_backed_up_and_counted(
    manager: Manager, kubectl: Kubectl, store: BackupStore
) -> None:
    """Each change keeps the previous version, a deletion the last state; status counts them."""
    await apply_sample_record(kubectl)
    await kubectl("apply", "-f", str(SAMPLES / "app_config.yaml"))
    await kubectl(
        "patch", "configmap", "app-config", "--type=merge", "-p", '{"data":{"greeting":"bonjour"}}'
    )
    (first,) = await wait_for_backups(store, CONFIGMAP, "app-config", 1)
    assert load_backup(first)["data"] == {"greeting": "hello", "replicas": "2"}
    await kubectl("delete", "configmap", "app-config")
    history = await wait_for_backups(store, CONFIGMAP, "app-config", 2)
    assert history[0] == first
    assert load_backup(history[1])["data"] == {"greeting": "bonjour", "replicas": "2"}
    assert "Event: delete" in history[1].read_text()

    async def counted() -> bool:
        status = (await kubectl.json("optionsrecord", "default-apps")).get("status") or {}
        return status.get("backups") == 2 and status.get("objects") == 1

    await eventually(counted)
    status = (await kubectl.json("optionsrecord", "default-apps"))["status"]
    assert status["lastBackupTime"].endswith("Z")
    assert status["watchedKinds"] == ["v1/ConfigMap", "apps/v1/Deployment"]


async def test_restore_brings_back_a_deleted_object_and_rolls_back_a_change(
    env: Environment, manager: Manager, kubectl: Kubectl, store: BackupStore
) -> None:
    """The restore command re-creates a deleted object, then puts an older version back."""
    await apply_sample_record(kubectl)
    await kubectl("apply", "-f", str(SAMPLES / "app_config.yaml"))
    await kubectl(
        "patch", "configmap", "app-config", "--type=merge", "-p", '{"data":{"greeting":"bonjour"}}'
    )
    await wait_for_backups(store, CONFIGMAP, "app-config", 1)
    await kubectl("delete", "configmap", "app-config")
    first, last = await wait_for_backups(store, CONFIGMAP, "app-config", 2)

    code, out, err = await restore(env, str(last.parent))  # the newest: the deleted state
    assert code == 0, err
    assert out.strip() == f"configmap/app-config in default created from {last}"
    assert await configmap_data(kubectl, "app-config") == {"greeting": "bonjour", "replicas": "2"}

    code, out, err = await restore(env, str(first), "--dry-run")
    assert code == 0, err
    assert out.strip().endswith("(server dry run)")
    assert await configmap_data(kubectl, "app-config") == {"greeting": "bonjour", "replicas": "2"}

    code, out, err = await restore(env, str(first))  # the version before the change
    assert code == 0, err
    assert "updated" in out
    assert await configmap_data(kubectl, "app-config") == {"greeting": "hello", "replicas": "2"}
    live = await kubectl.json("configmap", "app-config", "--show-managed-fields")
    assert live["metadata"]["managedFields"][-1]["manager"] == "optionsrecord-restore"


async def test_restore_reports_a_bad_backup_without_touching_the_cluster(
    env: Environment, tmp_path: Path
) -> None:
    """A file that is not a backup makes restore exit 1 with the reason."""
    bogus = tmp_path / "20240101T000000.000000Z.yaml"
    bogus.write_text(yaml.safe_dump({"kind": "ConfigMap"}))
    code, _out, err = await restore(env, str(bogus))
    assert code == 1
    assert "is not a Kubernetes object: no apiVersion, metadata.name" in err


async def test_history_is_bounded_by_the_records_limit(
    manager: Manager, kubectl: Kubectl, store: BackupStore
) -> None:
    """With historyLimit 5, seven changes leave the five newest previous versions."""
    await apply_sample_record(kubectl)
    await kubectl("apply", "-f", str(SAMPLES / "app_config.yaml"))
    for version in range(1, 8):
        patch = json.dumps({"data": {"version": str(version)}})
        await kubectl("patch", "configmap", "app-config", "--type=merge", "-p", patch)

    def versions() -> list[str | None]:
        history = store.history(CONFIGMAP, "default", "app-config")
        return [load_backup(p)["data"].get("version") for p in history]

    async def five_newest_kept() -> bool:
        # The operator writes a backup, then prunes the oldest: wait for both, and for a
        # listing that no pruning overtook between listing and reading.
        try:
            return versions() == ["2", "3", "4", "5", "6"]
        except BackupError:
            return False

    await eventually(five_newest_kept)
    assert versions() == ["2", "3", "4", "5", "6"]


async def test_filters_skip_status_only_changes_excluded_objects_and_other_namespaces(
    manager: Manager, kubectl: Kubectl, store: BackupStore
) -> None:
    """Status-only updates, excluded objects and uncovered namespaces leave no backup."""
    await apply_sample_record(kubectl)
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }
    await kubectl("apply", "-f", "-", stdin=deployment)
    excluded = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "scratch", "labels": {"backup.example.com/exclude": "true"}},
        "data": {"a": "1"},
    }
    await kubectl("apply", "-f", "-", stdin=excluded)
    await kubectl("create", "namespace", "elsewhere")
    await kubectl("create", "configmap", "outside", "-n", "elsewhere", "--from-literal=a=1")
    # Changes that must not be kept, then one that must: events reach the handler in
    # order per kind, so once the last is kept the others have been seen and dropped.
    await kubectl(
        "patch", "deployment", "web", "--subresource=status", "--type=merge",
        "-p", '{"status":{"observedGeneration":1,"replicas":1}}',
    )  # fmt: skip
    await kubectl("patch", "configmap", "scratch", "--type=merge", "-p", '{"data":{"a":"2"}}')
    await kubectl(
        "patch", "configmap", "outside", "-n", "elsewhere", "--type=merge",
        "-p", '{"data":{"a":"2"}}',
    )  # fmt: skip
    await kubectl("scale", "deployment", "web", "--replicas=3")
    await kubectl("create", "configmap", "sentinel", "--from-literal=a=1")
    await kubectl("patch", "configmap", "sentinel", "--type=merge", "-p", '{"data":{"a":"2"}}')

    (kept,) = await wait_for_backups(store, DEPLOYMENT, "web", 1)
    assert load_backup(kept)["spec"]["replicas"] == 1
    await wait_for_backups(store, CONFIGMAP, "sentinel", 1)
    assert store.history(CONFIGMAP, "default", "scratch") == []
    assert store.history(CONFIGMAP, "elsewhere", "outside") == []
    assert len(store.history(DEPLOYMENT, "default", "web")) == 1


async def test_a_kind_served_later_is_watched_once_its_crd_appears(
    manager: Manager, kubectl: Kubectl, store: BackupStore
) -> None:
    """A record naming an unknown kind is not Ready; once the CRD is installed it is watched."""
    record = {
        "apiVersion": "backup.example.com/v1",
        "kind": "OptionsRecord",
        "metadata": {"name": "gadgets"},
        "spec": {"kinds": [{"apiVersion": "toys.example.com/v1", "kind": "Gadget"}]},
    }
    await kubectl("apply", "-f", "-", stdin=record)

    async def not_served() -> bool:
        status = (await kubectl.json("optionsrecord", "gadgets")).get("status") or {}
        ready: dict[str, Any] = {c["type"]: c for c in status.get("conditions", [])}.get(
            "Ready", {}
        )
        return bool(ready.get("status") == "False" and ready.get("reason") == "KindNotServed")

    await eventually(not_served)
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.toys.example.com"},
        "spec": {
            "group": "toys.example.com",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    await kubectl("apply", "-f", "-", stdin=crd)
    await kubectl(
        "wait", "--for=condition=Established", "crd/gadgets.toys.example.com", "--timeout=20s"
    )
    await record_ready(kubectl, "gadgets")
    gadget = {
        "apiVersion": "toys.example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "spinner", "namespace": "default"},
        "spec": {"speed": 1},
    }
    await kubectl("apply", "-f", "-", stdin=gadget)
    await kubectl("delete", "gadget", "spinner")
    gvk = GroupVersionKind("toys.example.com", "v1", "Gadget")
    (kept,) = await wait_for_backups(store, gvk, "spinner", 1)
    assert kept.relative_to(store.root).parts[:3] == (
        "default",
        "gadget.toys.example.com",
        "spinner",
    )
    assert load_backup(kept)["spec"] == {"speed": 1}


async def test_a_backup_that_cannot_be_written_makes_the_record_not_ready(
    env: Environment, kubectl: Kubectl, tmp_path: Path
) -> None:
    """When the backup directory cannot be written, Ready turns False with the reason."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    flags = (f"--backup-dir={blocker / 'backups'}", "--retry-period=0.2")
    async with operator_running(operator, env, *flags):
        await apply_sample_record(kubectl)
        await kubectl("apply", "-f", str(SAMPLES / "app_config.yaml"))
        await kubectl(
            "patch", "configmap", "app-config", "--type=merge", "-p", '{"data":{"a":"b"}}'
        )

        async def failing() -> bool:
            status = (await kubectl.json("optionsrecord", "default-apps")).get("status") or {}
            ready: dict[str, Any] = {c["type"]: c for c in status.get("conditions", [])}.get(
                "Ready", {}
            )
            return bool(ready.get("status") == "False" and ready.get("reason") == "BackupFailed")

        await eventually(failing)
        record = await kubectl.json("optionsrecord", "default-apps")
        (ready,) = record["status"]["conditions"]
        assert ready["message"].startswith("cannot back up ConfigMap default/app-config: ")
        assert record["status"]["backups"] == 0
