"""CronJobs (kube-apiserver's pkg/registry/batch/cronjob).

``SetDefaults_CronJob``: concurrency policy, suspend and history limits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.printing import (
    AGE,
    CONTAINERS,
    INTEGER,
    NAME,
    STRING,
    Cells,
    Printer,
    age,
    containers,
    get,
    selector_text,
)
from pyctrl._apiserver.registry.rest import Strategy

if TYPE_CHECKING:
    from datetime import datetime

    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["CronJobStrategy"]


def _cronjob(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    tmpl = get(obj, "spec", "jobTemplate", "spec", "template", "spec", default={}) or {}
    names, images = containers(tmpl)
    last = status.get("lastScheduleTime")
    return [
        ro_meta(obj).get("name", ""),
        spec.get("schedule", ""),
        spec.get("timeZone") or "<none>",
        "True" if spec.get("suspend") else "False",
        len(status.get("active") or []),
        age(last, now) if last else "<none>",
        age(ro_meta(obj).get("creationTimestamp"), now),
        names,
        images,
        selector_text(get(obj, "spec", "jobTemplate", "spec", "selector")),
    ]


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_CronJob``."""
    spec = obj.setdefault("spec", {})
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    tmpl = (spec.get("jobTemplate") or {}).get("spec")
    if isinstance(tmpl, dict):
        template = tmpl.get("template")
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            _defaults.pod_spec(template["spec"])


class CronJobStrategy(Strategy):
    """The rules of CronJobs."""

    has_generation = True
    initial_status = {}  # noqa: RUF012 - read only, copied on use

    printer = Printer(
        (
            NAME,
            ("Schedule", STRING, 0),
            ("Timezone", STRING, 0),
            ("Suspend", "boolean", 0),
            ("Active", INTEGER, 0),
            ("Last Schedule", STRING, 0),
            AGE,
            *CONTAINERS,
            ("Selector", STRING, 1),
        ),
        _cronjob,
    )

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_CronJob``."""
        set_defaults(obj)
