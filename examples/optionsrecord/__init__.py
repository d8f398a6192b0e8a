"""The OptionsRecord backup operator: the seed's safety net for cluster changes.

An `OptionsRecord` names namespaces and kinds. From then on every change to a matching
object keeps the version before the change as a YAML file under the backup directory,
and every deletion the last state, with a bounded history per object; ``python -m
examples.optionsrecord restore`` puts a chosen backup back. It shows watching kinds
chosen at runtime as `pyctrl.resource.Unstructured`, predicates, and event handlers
that act on the previous version of an object.
"""

from __future__ import annotations

from examples.optionsrecord.api import OptionsRecord, OptionsRecordSpec, OptionsRecordStatus
from examples.optionsrecord.backup import BackupStore, load_backup
from examples.optionsrecord.controller import Settings, operator, setup

__all__ = [
    "BackupStore",
    "OptionsRecord",
    "OptionsRecordSpec",
    "OptionsRecordStatus",
    "Settings",
    "load_backup",
    "operator",
    "setup",
]
