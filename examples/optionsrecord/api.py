"""The OptionsRecord custom resource: which objects to back up, and how many versions.

An OptionsRecord (the seed's ``OptionsRecordController``) names namespaces and kinds.
From then on, every change to an object of one of those kinds in one of those
namespaces keeps the version before the change as a YAML file, and a deletion keeps
the last state, so that an operator can put an object back after a mistake. The
record's status counts the backups held for it and says whether every kind is watched.

OptionsRecords are cluster-scoped: a record reads objects in the namespaces it names,
so creating one is a cluster administrator's decision, not a namespace user's.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from pyctrl.crd import ListType
from pyctrl.meta import Condition, GroupVersionKind, KubeModel, Time
from pyctrl.resource import CustomResource, PrinterColumn

__all__ = [
    "READY",
    "OptionsRecord",
    "OptionsRecordSpec",
    "OptionsRecordStatus",
    "WatchedKind",
]

READY = "Ready"
"""Condition type: True while every kind is watched and the last backup was written."""

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_API_VERSION = rf"^({_DNS_LABEL}(\.{_DNS_LABEL})*/)?v[0-9]+((alpha|beta)[0-9]+)?$"
_KIND = r"^[A-Z][A-Za-z0-9]*$"
_NAMESPACE = rf"^{_DNS_LABEL}$"


class WatchedKind(KubeModel):
    """WatchedKind names one kind of object to back up.

    Attributes:
        api_version: The group and version, "v1" for the core group, e.g. "apps/v1".
        kind: The kind, e.g. "ConfigMap" or "Deployment".
    """

    api_version: Annotated[str, Field(max_length=253, pattern=_API_VERSION)]
    kind: Annotated[str, Field(max_length=63, pattern=_KIND)]

    @property
    def gvk(self) -> GroupVersionKind:
        """The kind as a GroupVersionKind."""
        return GroupVersionKind.from_api_version(self.api_version, self.kind)

    def __str__(self) -> str:
        return f"{self.api_version}/{self.kind}"


class OptionsRecordSpec(KubeModel):
    """OptionsRecordSpec says which objects to back up.

    Attributes:
        namespaces: Namespaces whose objects are backed up; empty means every namespace.
            Objects of cluster-scoped kinds are backed up whatever this says.
        kinds: The kinds of object to back up.
        history_limit: How many backups to keep per object, newest first; the
            operator's --max-history when unset.
    """

    namespaces: Annotated[
        list[Annotated[str, Field(max_length=63, pattern=_NAMESPACE)]], ListType("set")
    ] = Field(default_factory=list)
    kinds: Annotated[
        list[WatchedKind], ListType("map", keys=("apiVersion", "kind")), Field(min_length=1)
    ]
    history_limit: Annotated[int, Field(ge=1, le=1000)] | None = None

    def covers(self, gvk: GroupVersionKind, namespace: str) -> bool:
        """Whether an object of ``gvk`` in ``namespace`` ("" if cluster-scoped) is backed up."""
        if all(kind.gvk != gvk for kind in self.kinds):
            return False
        return not namespace or not self.namespaces or namespace in self.namespaces


class OptionsRecordStatus(KubeModel):
    """OptionsRecordStatus reports the backups held for the record.

    Attributes:
        backups: How many backup files are held for the objects the record covers.
        objects: How many objects have at least one backup.
        last_backup_time: When the newest of those backups was taken.
        watched_kinds: The kinds being watched, as "apiVersion/Kind".
        observed_generation: The metadata.generation the status was computed from.
        conditions: Ready: every kind is served and watched, and backups are written.
    """

    backups: int = 0
    objects: int = 0
    last_backup_time: Time | None = None
    watched_kinds: list[str] = Field(default_factory=list)
    observed_generation: int = 0
    conditions: list[Condition] = Field(default_factory=list)


class OptionsRecord(
    CustomResource,
    group="backup.example.com",
    version="v1",
    scope="Cluster",
    short_names=("orec",),
    printer_columns=(
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Backups", ".status.backups", "integer"),
        PrinterColumn("Last Backup", ".status.lastBackupTime", "date"),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
    ),
):
    """OptionsRecord keeps the previous versions of the objects it names, as YAML files."""

    spec: OptionsRecordSpec
    status: OptionsRecordStatus = Field(default_factory=OptionsRecordStatus)
