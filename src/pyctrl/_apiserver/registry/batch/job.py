"""Jobs (kube-apiserver's pkg/registry/batch/job/strategy.go).

A created Job without ``manualSelector`` gets the ``controller-uid`` selector and
template labels from its uid; an update keeps the selector.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.field import Cause, field_not_supported, field_required
from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.registry import defaults as _defaults
from pyctrl._apiserver.registry.meta import deep_copy, meta_of
from pyctrl._apiserver.registry.printing import (
    AGE,
    CONTAINERS,
    NAME,
    STRING,
    Cells,
    Printer,
    get,
    human_duration,
    parse_time,
    workload_cells,
)
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import meta as _meta
from pyctrl._apiserver.registry.validation.core import containers

if TYPE_CHECKING:
    from datetime import datetime

    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["JobStrategy"]


def _job_status(obj: dict[str, Any]) -> str:
    conditions = get(obj, "status", "conditions", default=[]) or []
    for cond_type, text in (
        ("Failed", "Failed"),
        ("Complete", "Complete"),
        ("Suspended", "Suspended"),
        ("FailureTarget", "FailureTarget"),
        ("SuccessCriteriaMet", "SuccessCriteriaMet"),
    ):
        for cond in conditions:
            if cond.get("type") == cond_type and cond.get("status") == "True":
                return text
    if ro_meta(obj).get("deletionTimestamp"):
        return "Terminating"
    return "Running"


def _job(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    completions = spec.get("completions")
    succeeded = int(status.get("succeeded") or 0)
    if completions is not None:
        done = f"{succeeded}/{completions}"
    else:
        parallelism = int(spec.get("parallelism") or 0)
        done = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    start = parse_time(status.get("startTime"))
    end = parse_time(status.get("completionTime"))
    duration = "" if start is None else human_duration(((end or now) - start).total_seconds())
    return [
        ro_meta(obj).get("name", ""),
        _job_status(obj),
        done,
        duration,
        *workload_cells(obj, now),
    ]


def set_defaults(obj: dict[str, Any]) -> None:
    """``SetDefaults_Job`` (the generated selector is added by the job strategy)."""
    spec = obj.setdefault("spec", {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimitPerIndex") is not None:
        spec.setdefault("backoffLimit", 2147483647)
    spec.setdefault("backoffLimit", 6)
    _labels_from_template(obj)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, dict):
        for rule in policy.get("rules") or []:
            for pattern in (rule or {}).get("onPodConditions") or []:
                if isinstance(pattern, dict):
                    pattern.setdefault("status", "True")
    spec.setdefault(
        "podReplacementPolicy", "Failed" if policy is not None else "TerminatingOrFailed"
    )
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    _defaults.template(obj)


def _default_selector(obj: dict[str, Any], uid: str) -> None:
    """The job strategy's generated selector and template labels (unless manualSelector)."""
    spec = obj.setdefault("spec", {})
    if spec.get("manualSelector"):
        return
    meta = obj.setdefault("metadata", {})
    name = meta.get("name", "")
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template = spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    # Labels the Job took from its template are the same Go map in kube-apiserver, so they
    # get the generated labels too; a Job read back without labels takes them all as well.
    shared = not meta.get("labels") or meta.get("labels") == labels
    labels.setdefault("batch.kubernetes.io/controller-uid", uid)
    labels.setdefault("batch.kubernetes.io/job-name", name)
    labels.setdefault("controller-uid", uid)
    labels.setdefault("job-name", name)
    if shared:
        meta["labels"] = dict(labels)


def _labels_from_template(obj: dict[str, Any]) -> None:
    """A Job without labels takes its pod template's labels."""
    template = (obj.get("spec") or {}).get("template")
    template_meta = template.get("metadata") if isinstance(template, dict) else None
    labels = template_meta.get("labels") if isinstance(template_meta, dict) else None
    meta = obj.setdefault("metadata", {})
    if isinstance(labels, dict) and not meta.get("labels"):
        meta["labels"] = dict(labels)


def validate_job(obj: dict[str, Any]) -> list[Cause]:
    """A subset of ``ValidateJob``: metadata, the template's containers and restart policy."""
    causes = _meta.object_meta(obj, "subdomain", namespaced=True, kube=True)
    template = (obj.get("spec") or {}).get("template")
    if not isinstance(template, dict):
        return [*causes, field_required("spec.template")]
    tspec = template.get("spec") or {}
    causes.extend(containers(tspec, "spec.template.spec"))
    policy = tspec.get("restartPolicy")
    if policy not in ("OnFailure", "Never"):
        causes.append(
            field_not_supported("spec.template.spec.restartPolicy", policy, ["OnFailure", "Never"])
        )
    return causes


class JobStrategy(Strategy):
    """The rules of Jobs."""

    has_generation = True
    default_gc_policy = "Orphan"
    initial_status = {}  # noqa: RUF012 - read only, copied on use

    printer = Printer(
        (
            NAME,
            ("Status", STRING, 0),
            ("Completions", STRING, 0),
            ("Duration", STRING, 0),
            AGE,
            *CONTAINERS,
            ("Selector", STRING, 1),
        ),
        _job,
    )

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """``SetDefaults_Job``."""
        set_defaults(obj)

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``ValidateJob``."""
        return validate_job(obj)

    def prepare_for_create(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """The selector (and template labels) generated from the new uid."""
        _default_selector(obj, meta_of(obj)["uid"])

    def prepare_for_update(
        self, rt: ResourceType, new: dict[str, Any], existing: dict[str, Any], subresource: str
    ) -> None:
        """Keep the selector an update leaves out."""
        spec = new.setdefault("spec", {})
        old_spec = existing.get("spec") or {}
        if "selector" not in spec and "selector" in old_spec:
            spec["selector"] = deep_copy(old_spec["selector"])
