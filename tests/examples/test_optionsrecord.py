"""The OptionsRecord example without an API server: backups on disk, filters, flags, files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from examples.optionsrecord.__main__ import main as cli
from examples.optionsrecord.api import OptionsRecord, OptionsRecordSpec, WatchedKind
from examples.optionsrecord.backup import (
    BackupError,
    BackupStore,
    backup_time,
    kind_directory,
    load_backup,
)
from examples.optionsrecord.controller import (
    EXCLUDE_LABEL,
    BackupHandler,
    BackupJournal,
    Settings,
    backup_predicates,
    operator,
)
from examples.optionsrecord.restore import choose_backup, restorable

from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
from pyctrl.meta import GroupVersionKind, ObjectMeta
from pyctrl.reconcile import Request
from pyctrl.resource import Unstructured

from .conftest import EXAMPLES

if TYPE_CHECKING:
    from pathlib import Path

    from pyctrl.workqueue import Trigger

OPTIONSRECORD = EXAMPLES / "optionsrecord"
CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")
DEPLOYMENT = GroupVersionKind("apps", "v1", "Deployment")


def configmap(
    name: str = "app-config",
    namespace: str = "default",
    rv: str = "1",
    labels: dict[str, str] | None = None,
    **data: str,
) -> Unstructured:
    metadata: dict[str, Any] = {"name": name, "resourceVersion": rv, "uid": "u-1"}
    if namespace:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    return Unstructured(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}
    )


class Ticker:
    """A UTC clock that moves one second per reading."""

    def __init__(self) -> None:
        self.now = datetime(2024, 6, 26, 14, 41, 0, 123456, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> BackupStore:
    return BackupStore(tmp_path / "backups", now=Ticker())


def record(name: str, *, namespaces: list[str], limit: int | None = None) -> OptionsRecord:
    return OptionsRecord(
        metadata=ObjectMeta(name=name),
        spec=OptionsRecordSpec(
            namespaces=namespaces,
            kinds=[WatchedKind(api_version="v1", kind="ConfigMap")],
            history_limit=limit,
        ),
    )


# -- the backup directory ----------------------------------------------------------------------


def test_backup_is_written_per_namespace_kind_and_name(store: BackupStore) -> None:
    """A backup lands in <dir>/<namespace>/<kind>/<name>/<timestamp>.yaml and reads back."""
    obj = configmap(greeting="hello")
    path = store.write(obj.to_dict(), event="update", keep=5)
    assert path.relative_to(store.root).parts == (
        "default",
        "configmap",
        "app-config",
        "20240626T144101.123456Z.yaml",
    )
    assert load_backup(path) == obj.to_dict()
    assert backup_time(path) == datetime(2024, 6, 26, 14, 41, 1, 123456, tzinfo=UTC)


def test_backup_file_opens_with_a_header_saying_what_happened(store: BackupStore) -> None:
    """The header names the object, the event and the way to restore it."""
    text = store.write(configmap(rv="42").to_dict(), event="delete", keep=5).read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert header[0].startswith("# Backup of ConfigMap default/app-config (v1), taken 2024-06-26")
    assert "delete" in header[1]
    assert "resourceVersion 42" in header[1]
    assert "python -m examples.optionsrecord restore" in header[2]


def test_cluster_scoped_and_grouped_kinds_get_their_own_directories(store: BackupStore) -> None:
    """Cluster-scoped objects go under _cluster; kinds outside the core group carry it."""
    assert kind_directory(DEPLOYMENT) == "deployment.apps"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "viewer"},
    }
    path = store.write(role, event="update", keep=1)
    assert path.relative_to(store.root).parts[:3] == (
        "_cluster",
        "clusterrole.rbac.authorization.k8s.io",
        "viewer",
    )


def test_history_keeps_only_the_newest_backups(store: BackupStore) -> None:
    """After each write, only the newest ``keep`` backups of the object remain."""
    for version in range(1, 8):
        store.write(configmap(rv=str(version)).to_dict(), event="update", keep=3)
    history = store.history(CONFIGMAP, "default", "app-config")
    assert [load_backup(p)["metadata"]["resourceVersion"] for p in history] == ["5", "6", "7"]
    assert sorted(p.name for p in history[0].parent.iterdir()) == [p.name for p in history]


def test_two_backups_in_one_microsecond_are_both_kept_in_order(tmp_path: Path) -> None:
    """A clock that does not move still gives distinct, ordered file names."""
    instant = datetime(2024, 1, 1, tzinfo=UTC)
    store = BackupStore(tmp_path, now=lambda: instant)
    first = store.write(configmap(rv="1").to_dict(), event="update", keep=5)
    second = store.write(configmap(rv="2").to_dict(), event="update", keep=5)
    assert first.name < second.name
    history = store.history(CONFIGMAP, "default", "app-config")
    assert [load_backup(p)["metadata"]["resourceVersion"] for p in history] == ["1", "2"]


@pytest.mark.parametrize("name", ["..", "a/b", "."])
def test_names_that_would_escape_the_directory_are_refused(store: BackupStore, name: str) -> None:
    """An object name that is not a single path segment is refused."""
    with pytest.raises(ValueError, match="cannot name a backup directory"):
        store.write(configmap(name=name).to_dict(), event="update", keep=1)


def test_summary_counts_the_backups_a_record_covers(store: BackupStore) -> None:
    """A record counts backups of its kinds in its namespaces, and the newest time."""
    store.write(configmap("a").to_dict(), event="update", keep=5)
    store.write(configmap("a").to_dict(), event="update", keep=5)
    newest = store.write(configmap("b").to_dict(), event="delete", keep=5)
    store.write(configmap("c", namespace="other").to_dict(), event="update", keep=5)
    deploy = configmap("d").to_dict() | {"apiVersion": "apps/v1", "kind": "Deployment"}
    store.write(deploy, event="update", keep=5)
    summary = store.summary(record("r", namespaces=["default"]).spec)
    assert (summary.backups, summary.objects) == (3, 2)
    assert summary.last_backup == backup_time(newest)
    everywhere = store.summary(record("r", namespaces=[]).spec)
    assert (everywhere.backups, everywhere.objects) == (4, 3)


def test_summary_of_an_empty_directory_is_zero(tmp_path: Path) -> None:
    """Before any backup (the directory does not even exist) the summary is empty."""
    summary = BackupStore(tmp_path / "nothing").summary(record("r", namespaces=[]).spec)
    assert (summary.backups, summary.objects, summary.last_backup) == (0, 0, None)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: [", "not valid YAML"),
        ("- just\n- a list\n", "does not hold an object"),
        ("apiVersion: v1\nmetadata: {name: x}\n", "no kind"),
        ("apiVersion: v1\nkind: ConfigMap\n", "no metadata.name"),
    ],
)
def test_unusable_backup_files_are_refused_with_the_reason(
    tmp_path: Path, text: str, problem: str
) -> None:
    """A file that holds no Kubernetes object is refused, naming the file and the problem."""
    path = tmp_path / "20240101T000000.000000Z.yaml"
    path.write_text(text)
    with pytest.raises(BackupError, match=problem) as caught:
        load_backup(path)
    assert str(path) in str(caught.value)


# -- the record's scope --------------------------------------------------------------------------


def test_record_covers_its_kinds_in_its_namespaces() -> None:
    """A record covers its kinds in its namespaces, all namespaces when none are listed."""
    spec = record("r", namespaces=["default"]).spec
    assert spec.covers(CONFIGMAP, "default")
    assert not spec.covers(CONFIGMAP, "kube-system")
    assert not spec.covers(DEPLOYMENT, "default")
    assert record("r", namespaces=[]).spec.covers(CONFIGMAP, "kube-system")


def test_cluster_scoped_objects_are_covered_whatever_the_namespaces() -> None:
    """Namespaces do not restrict objects that have none."""
    spec = OptionsRecordSpec(
        namespaces=["default"],
        kinds=[WatchedKind(api_version="rbac.authorization.k8s.io/v1", kind="ClusterRole")],
    )
    assert spec.covers(GroupVersionKind("rbac.authorization.k8s.io", "v1", "ClusterRole"), "")


# -- predicates ------------------------------------------------------------------------------


def passes(event: Any) -> bool:
    predicates = backup_predicates()
    match event:
        case CreateEvent():
            return all(p.create(event) for p in predicates)
        case UpdateEvent():
            return all(p.update(event) for p in predicates)
        case DeleteEvent():
            return all(p.delete(event) for p in predicates)
        case GenericEvent():
            return all(p.generic(event) for p in predicates)
    raise AssertionError(event)


def test_a_change_of_content_passes() -> None:
    """An update that changes data passes the backup filters."""
    assert passes(UpdateEvent(configmap(rv="1", a="1"), configmap(rv="2", a="2")))


def test_deletes_pass_and_creates_do_not() -> None:
    """A create has no previous version to keep; a delete has a last state."""
    assert passes(DeleteEvent(configmap()))
    assert not passes(CreateEvent(configmap()))
    assert not passes(GenericEvent(configmap()))


def test_resyncs_are_dropped() -> None:
    """A resync (same resourceVersion) is not a change."""
    assert not passes(UpdateEvent(configmap(rv="1", a="1"), configmap(rv="1", a="1")))


def test_status_and_server_metadata_changes_are_dropped() -> None:
    """An update of status, resourceVersion or managed fields alone keeps nothing."""
    old = configmap(rv="1", a="1")
    new = configmap(rv="2", a="1")
    new.object["status"] = {"observedGeneration": 3}
    new.metadata["managedFields"] = [{"manager": "kubectl"}]
    new.metadata["generation"] = 3
    assert not passes(UpdateEvent(old, new))


def test_excluded_objects_are_dropped() -> None:
    """Objects labelled backup.example.com/exclude=true are never backed up."""
    labels = {EXCLUDE_LABEL: "true"}
    old = configmap(rv="1", labels=labels, a="1")
    new = configmap(rv="2", labels=labels, a="2")
    assert not passes(UpdateEvent(old, new))
    assert not passes(DeleteEvent(new))


# -- the event handler -------------------------------------------------------------------------


class Queue:
    def __init__(self) -> None:
        self.added: list[Request] = []

    def add(self, item: Request, *, priority: int = 0, trigger: Trigger | None = None) -> None:
        self.added.append(item)


def handler(store: BackupStore, *records: OptionsRecord, max_history: int = 10) -> BackupHandler:
    async def current() -> list[OptionsRecord]:
        return list(records)

    return BackupHandler(current, store, Settings(max_history=max_history), BackupJournal())


async def test_update_keeps_the_previous_version_and_wakes_the_records(
    store: BackupStore,
) -> None:
    """On an update the old object is written, and every covering record is enqueued."""
    queue = Queue()
    records = (record("a", namespaces=["default"]), record("b", namespaces=[]))
    await handler(store, *records).update(
        UpdateEvent(configmap(rv="1", greeting="hello"), configmap(rv="2", greeting="bonjour")),
        queue,
    )
    (path,) = store.history(CONFIGMAP, "default", "app-config")
    assert load_backup(path)["data"] == {"greeting": "hello"}
    assert queue.added == [Request("", "a"), Request("", "b")]


async def test_delete_keeps_the_last_state(store: BackupStore) -> None:
    """On a delete the object's last state is written."""
    await handler(store, record("a", namespaces=[])).delete(
        DeleteEvent(configmap(rv="7", greeting="last")), Queue()
    )
    (path,) = store.history(CONFIGMAP, "default", "app-config")
    assert load_backup(path)["data"] == {"greeting": "last"}
    assert "Event: delete" in path.read_text()


async def test_objects_no_record_covers_are_not_backed_up(store: BackupStore) -> None:
    """A change in a namespace no record names writes nothing and wakes nobody."""
    queue = Queue()
    await handler(store, record("a", namespaces=["prod"])).update(
        UpdateEvent(configmap(rv="1"), configmap(rv="2")), queue
    )
    assert not store.root.exists()
    assert queue.added == []


async def test_the_most_generous_covering_record_sets_the_history(store: BackupStore) -> None:
    """With two covering records the larger historyLimit wins; unset means --max-history."""
    records = (record("a", namespaces=[], limit=2), record("b", namespaces=[], limit=3))
    for version in range(1, 6):
        old, new = configmap(rv=str(version)), configmap(rv=str(version + 1))
        await handler(store, *records).update(UpdateEvent(old, new), Queue())
    assert len(store.history(CONFIGMAP, "default", "app-config")) == 3
    for version in range(6, 12):
        old, new = configmap(rv=str(version)), configmap(rv=str(version + 1))
        await handler(store, record("c", namespaces=[]), max_history=4).update(
            UpdateEvent(old, new), Queue()
        )
    assert len(store.history(CONFIGMAP, "default", "app-config")) == 4


async def test_a_failed_write_is_reported_not_raised(tmp_path: Path) -> None:
    """When the disk refuses a backup, the journal says why and the records are still woken."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    journal = BackupJournal()
    queue = Queue()

    async def current() -> list[OptionsRecord]:
        return [record("a", namespaces=[])]

    await BackupHandler(current, BackupStore(blocker), Settings(), journal).update(
        UpdateEvent(configmap(rv="1"), configmap(rv="2")), queue
    )
    error = journal.error_for(record("a", namespaces=[]))
    assert error is not None
    assert error.startswith("cannot back up ConfigMap default/app-config")
    assert queue.added == [Request("", "a")]


def test_a_later_successful_write_clears_only_the_covering_records_errors() -> None:
    """A success clears the error of the records it covers; other records keep theirs."""
    journal = BackupJournal()
    a, b = record("a", namespaces=[]), record("b", namespaces=["prod"])
    journal.record([a, b], "disk full")
    journal.record([a], None)
    assert journal.error_for(a) is None
    assert journal.error_for(b) == "disk full"


# -- restore helpers ----------------------------------------------------------------------------


def test_restorable_strips_what_the_server_sets() -> None:
    """uid, resourceVersion, timestamps, managed fields and status go; labels and owners stay."""
    obj = configmap(labels={"app": "web"}, greeting="hi").to_dict()
    obj["metadata"] |= {
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "generation": 2,
        "managedFields": [{"manager": "kubectl"}],
        "deletionTimestamp": "2024-01-02T00:00:00Z",
        "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "x"}],
    }
    obj["status"] = {"phase": "Done"}
    clean = restorable(obj).to_dict()
    assert clean == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "app-config",
            "namespace": "default",
            "labels": {"app": "web"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "x"}],
        },
        "data": {"greeting": "hi"},
    }


def test_a_directory_means_its_newest_backup(store: BackupStore) -> None:
    """Given an object's directory, restore picks the newest backup in it."""
    store.write(configmap(rv="1").to_dict(), event="update", keep=5)
    newest = store.write(configmap(rv="2").to_dict(), event="update", keep=5)
    assert choose_backup(newest.parent) == newest


def test_choosing_from_nothing_says_what_is_missing(tmp_path: Path) -> None:
    """A missing path or a directory without backups is refused with a clear message."""
    with pytest.raises(BackupError, match="no backup file or directory"):
        choose_backup(tmp_path / "missing")
    with pytest.raises(BackupError, match="holds no backups"):
        choose_backup(tmp_path)


def test_restore_list_prints_backups_newest_first(
    store: BackupStore, capsys: pytest.CaptureFixture[str]
) -> None:
    """``restore --list DIR`` (through __main__) lists the object's backups, newest first."""
    first = store.write(configmap(rv="1").to_dict(), event="update", keep=5)
    second = store.write(configmap(rv="2").to_dict(), event="update", keep=5)
    assert cli(["restore", "--list", str(first.parent)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[-1] for line in lines] == [str(second), str(first)]


def test_restore_of_a_missing_backup_fails_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``restore`` of a path that holds nothing exits 1 and says why on stderr."""
    assert cli(["restore", "--list", str(tmp_path / "missing")]) == 1
    assert "no backup file or directory" in capsys.readouterr().err


# -- flags and checked-in files -------------------------------------------------------------------


def test_flags_become_settings(tmp_path: Path) -> None:
    """--backup-dir, --max-history and --retry-period reach the settings setup() gets."""
    args = operator.parser().parse_args(
        [f"--backup-dir={tmp_path}", "--max-history=3", "--retry-period=0.5"]
    )
    assert Settings.from_args(args) == Settings(
        backup_dir=tmp_path, max_history=3, retry_period=0.5
    )


def test_zero_history_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """--max-history=0 fails flag parsing, naming the flag."""
    with pytest.raises(SystemExit):
        operator.parser().parse_args(["--max-history=0"])
    err = capsys.readouterr().err
    assert "--max-history" in err
    assert "must be at least 1" in err


async def test_checked_in_manifests_are_current() -> None:
    """config/ holds exactly what the Python types generate (regenerate if this fails)."""
    rendered = await operator.render_manifests()
    config = OPTIONSRECORD / "config"
    on_disk = {str(path.relative_to(config)): path.read_text() for path in config.rglob("*.yaml")}
    assert on_disk == rendered, (
        "examples/optionsrecord/config is stale: run "
        "pyctrl generate examples.optionsrecord:operator --out examples/optionsrecord/config"
    )


async def test_role_reads_any_kind_but_writes_only_its_records() -> None:
    """RBAC: read-only on every kind (runtime watches); writes only to OptionsRecords."""
    rules = (await operator.manifests())["rbac/role.yaml"][0]["rules"]
    broad = [r for r in rules if r["apiGroups"] == ["*"]]
    assert broad == [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]
    writers = [r for r in rules if set(r["verbs"]) & {"create", "update", "patch", "delete"}]
    assert {res for r in writers for res in r["resources"]} <= {
        "optionsrecords",
        "optionsrecords/status",
        "optionsrecords/finalizers",
        "events",
    }


async def test_manager_deployment_mounts_a_volume_for_the_backups() -> None:
    """The Deployment writes backups to a PersistentVolumeClaim, replaced not rolled."""
    objects = (await operator.manifests())["manager/manager.yaml"]
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    claim = next(o for o in objects if o["kind"] == "PersistentVolumeClaim")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "--backup-dir=/var/lib/optionsrecord/backups" in container["args"]
    assert container["volumeMounts"] == [{"name": "backups", "mountPath": "/var/lib/optionsrecord"}]
    assert pod["volumes"] == [
        {"name": "backups", "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
    ]
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}


def test_sample_record_is_valid() -> None:
    """The sample OptionsRecord parses, names ConfigMaps and Deployments in default."""
    sample = yaml.safe_load(
        (OPTIONSRECORD / "samples" / "backup_v1_optionsrecord.yaml").read_text()
    )
    spec = OptionsRecord.model_validate(sample).spec
    assert spec.covers(CONFIGMAP, "default")
    assert spec.covers(DEPLOYMENT, "default")
    assert not spec.covers(CONFIGMAP, "kube-system")
