"""Dependent resources and workflows: declare a primary's children; pyctrl keeps them.

Most reconcilers are one loop written by hand: compute the children a primary object
wants, create or patch each, wait for one to be ready before the next, delete the ones
no longer wanted, and report in the primary's status. JOSDK calls the children
*dependent resources* and the loop a *workflow*; here they are `Dependent` and
`Workflow`::

    config = Dependent(V1ConfigMap, desired=config_map_for)
    app = Dependent(V1Deployment, desired=deployment_for, depends_on=[config])
    svc = Dependent(V1Service, desired=service_for, depends_on=[app],
                    activation=lambda web: web.spec.expose)
    workflow = Workflow([config, app, svc], field_manager="web-operator")

    controller_managed_by(manager).for_(Web).dependents(workflow).complete(reconciler)
    ...
    async def reconcile_object(self, web: Web) -> None:
        await workflow.reconcile(self.client, web)

Each `Workflow.reconcile`:

1. evaluates every dependent's ``activation`` (absent: active) and ``desired`` (an
   object, an apply configuration, or None for "not wanted");
2. in dependency order, applies each active dependent by server-side apply, forced,
   under the workflow's field manager, labelled ``pyctrl.io/workflow: <name>`` and
   ``pyctrl.io/primary-uid: <the primary's uid>``, and controlled by the primary (owner
   reference). A dependent waits (is not applied) until
   every dependent it ``depends_on`` is ready by its ``ready`` check (default
   `pyctrl.status.ready`, kstatus' rules); a failing dependent stops only those that
   depend on it;
3. deletes (prunes) the children the workflow labelled and the primary controls that
   no active dependent wants any more. Finding them takes a list per child type; it is
   skipped when the children wanted are those the last complete pruning of this primary
   left (remembered in memory for the last `PRUNE_MEMORY` primaries), as nothing but
   the workflow labels children for it;
4. writes a ``<Name>Ready`` condition per active dependent and an aggregate ``Ready``
   condition, each with the primary's ``observedGeneration``, to the primary's
   ``status.conditions`` (when they changed);
5. raises the dependents' errors together (`WorkflowError`, an ``ExceptionGroup``), so
   the reconcile is retried.

Nothing is written when nothing changed: before applying, the desired object is compared
with the live one (read through the client, so a manager's cache). When the live object
carries ``managedFields`` the comparison is with the fields the workflow's manager owns
(`pyctrl.client.extract`), as client-go users do; a manager's cache strips them, so
then every desired value must be present in the live object and the
``pyctrl.io/desired-hash`` annotation, a hash of the last applied configuration, must
match (a field dropped from the desired state changes the hash).
"""

from __future__ import annotations

import hashlib
import inspect
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, TypeVar

import orjson

from pyctrl.client import (
    ApplyConfiguration,
    Client,
    MergePatch,
    apply_configuration,
    owned_fields,
)
from pyctrl.controllerutil import set_controller_reference
from pyctrl.errors import NotFoundError
from pyctrl.meta import Condition, remove_status_condition, set_status_condition
from pyctrl.resource import CustomResource, Unstructured, accessor
from pyctrl.status import Readiness, ready

__all__ = [
    "DESIRED_HASH_ANNOTATION",
    "PRIMARY_LABEL",
    "PRUNE_MEMORY",
    "WORKFLOW_LABEL",
    "Dependent",
    "DependentResult",
    "Operation",
    "Outcome",
    "Workflow",
    "WorkflowError",
    "WorkflowResult",
]

WORKFLOW_LABEL = "pyctrl.io/workflow"
"""The label every child of a workflow carries; its value is the workflow's name."""

PRIMARY_LABEL = "pyctrl.io/primary-uid"
"""The label every child of a workflow carries; its value is the primary's uid."""

PRUNE_MEMORY = 4096
"""How many primaries a workflow remembers the last pruning of (see `Workflow`)."""

DESIRED_HASH_ANNOTATION = "pyctrl.io/desired-hash"
"""A hash of the configuration last applied to a child, to notice what was dropped."""

T = TypeVar("T")

Desired = Callable[[Any], Any]
ReadyCheck = Callable[[Any], "Readiness | bool"]


class Outcome(StrEnum):
    """Where one dependent stands after a workflow reconcile."""

    READY = "Ready"
    NOT_READY = "NotReady"
    WAITING = "Waiting"
    FAILED = "Failed"
    INACTIVE = "Inactive"


class Operation(StrEnum):
    """What the workflow wrote for a dependent (controller-runtime's ``OperationResult``)."""

    NONE = "none"
    UNCHANGED = "unchanged"
    CREATED = "created"
    UPDATED = "updated"


class WorkflowError(ExceptionGroup[Exception]):
    """Dependents of a workflow failed; ``result`` is the `WorkflowResult` of the run."""

    result: WorkflowResult


class Dependent(Generic[T]):
    """One child of a primary object: its type, how to compute it, when it is ready.

    Args:
        type_: The child's type: a `pyctrl.resource.CustomResource` or a
            kubernetes-asyncio model such as ``V1Deployment`` (or its apply configuration).
        desired: ``desired(primary)`` (plain or coroutine function) returns the child as
            wanted: an object of ``type_``, its apply configuration, an Unstructured or a
            dict; only what it sets is applied. None means "not wanted" (pruned). The
            name defaults to nothing: set it. The namespace defaults to the primary's.
        name: Names the dependent in conditions (``<name>Ready``) and in ``depends_on``
            errors; default: the kind.
        ready: ``ready(child)`` tells whether dependents of this one may proceed:
            `pyctrl.status.Readiness` or a bool. Default `pyctrl.status.ready`
            (kstatus' rules); None: ready as soon as applied.
        depends_on: Dependents of the same workflow that must be ready first.
        activation: ``activation(primary)``: when false the dependent is not wanted (its
            child is pruned, its condition removed). Default: always active.
    """

    def __init__(
        self,
        type_: type[T],
        *,
        desired: Desired,
        name: str | None = None,
        ready: ReadyCheck | None = ready,
        depends_on: Sequence[Dependent[Any]] = (),
        activation: Callable[[Any], bool] | None = None,
    ) -> None:
        if isinstance(type_, type) and issubclass(type_, ApplyConfiguration):
            type_ = type_.applies_to()
        if not isinstance(type_, type) or type_ in (Unstructured, dict):
            raise TypeError(
                f"Dependent takes a typed class (a CustomResource or a kubernetes-asyncio "
                f"model), not {getattr(type_, '__name__', type(type_).__name__)}"
            )
        self.type = type_
        self.desired = desired
        self.name = name or _kind_name(type_)
        self.ready = ready
        self.depends_on = tuple(depends_on)
        self.activation = activation

    def __repr__(self) -> str:
        return f"Dependent({self.type.__name__}, name={self.name!r})"


def _kind_name(type_: type[Any]) -> str:
    if issubclass(type_, CustomResource):
        return type_.resource_info().kind
    name = type_.__name__
    # V1Deployment, V2HorizontalPodAutoscaler -> the kind.
    return name[2:] if len(name) > 2 and name[0] == "V" and name[1].isdigit() else name


@dataclass
class DependentResult:
    """What a workflow reconcile did with one dependent.

    Attributes:
        name: The dependent's name.
        outcome: Where it stands (`Outcome`).
        operation: What was written (`Operation`): created, updated, unchanged or none.
        object: The child as the server (or the cache) has it; None if not applied.
        readiness: Its readiness when applied.
        reason: CamelCase reason when not ready (``Waiting``, ``ApplyFailed``, kstatus').
        message: What is missing or what failed.
        error: The exception, when it failed.
    """

    name: str
    outcome: Outcome
    operation: Operation = Operation.NONE
    object: Any = None
    readiness: Readiness | None = None
    reason: str = ""
    message: str = ""
    error: Exception | None = None


@dataclass
class WorkflowResult:
    """What a workflow reconcile did: per dependent, what it pruned, and its conditions."""

    dependents: dict[str, DependentResult] = field(default_factory=dict)
    pruned: list[tuple[str, str]] = field(default_factory=list)
    generation: int | None = None

    @property
    def ready(self) -> bool:
        """True when every active dependent is ready."""
        return all(r.outcome in (Outcome.READY, Outcome.INACTIVE) for r in self.dependents.values())

    @property
    def errors(self) -> list[Exception]:
        """The errors of the dependents that failed."""
        return [r.error for r in self.dependents.values() if r.error is not None]

    def __getitem__(self, name: str) -> DependentResult:
        return self.dependents[name]

    def conditions(self) -> list[Condition]:
        """A ``<Name>Ready`` condition per active dependent, then the aggregate ``Ready``."""
        out: list[Condition] = []
        pending: list[str] = []
        for result in self.dependents.values():
            if result.outcome is Outcome.INACTIVE:
                continue
            ok = result.outcome is Outcome.READY
            message = result.message or f"{result.name} is ready"
            out.append(
                Condition(
                    type=f"{result.name}Ready",
                    status="True" if ok else "False",
                    reason="Ready" if ok else result.reason or result.outcome.value,
                    message=message,
                    observed_generation=self.generation,
                )
            )
            if not ok:
                pending.append(f"{result.name}: {result.reason}: {result.message}")
        failed = any(r.outcome is Outcome.FAILED for r in self.dependents.values())
        out.append(
            Condition(
                type="Ready",
                status="False" if pending else "True",
                reason=("DependentFailed" if failed else "DependentNotReady")
                if pending
                else "AllDependentsReady",
                message="; ".join(pending) or "every dependent is ready",
                observed_generation=self.generation,
            )
        )
        return out

    def set_conditions(self, conditions: list[Condition]) -> bool:
        """Set this result's conditions into ``conditions`` (in place); True if changed.

        Conditions of inactive dependents are removed. For a reconciler that writes its
        primary's status itself (``Workflow.reconcile(..., write_status=False)``).
        """
        changed = False
        for result in self.dependents.values():
            if result.outcome is Outcome.INACTIVE:
                changed |= remove_status_condition(conditions, f"{result.name}Ready")
        for condition in self.conditions():
            changed |= set_status_condition(conditions, condition)
        return changed


def _ordered(dependents: Sequence[Dependent[Any]]) -> list[Dependent[Any]]:
    """Dependency order (a dependent after what it depends on), else declaration order."""
    names = [d.name for d in dependents]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(
            f"dependents named {', '.join(duplicates)} more than once: give each a name="
        )
    members = {id(d) for d in dependents}
    for dependent in dependents:
        for needed in dependent.depends_on:
            if id(needed) not in members:
                raise ValueError(
                    f"{dependent.name} depends on {needed.name}, which is not in the workflow"
                )
    order: list[Dependent[Any]] = []
    placed: set[int] = set()
    remaining = list(dependents)
    while remaining:
        ready_now = [d for d in remaining if all(id(n) in placed for n in d.depends_on)]
        if not ready_now:
            cycle = ", ".join(d.name for d in remaining)
            raise ValueError(f"dependents depend on each other in a cycle: {cycle}")
        for dependent in ready_now:
            order.append(dependent)
            placed.add(id(dependent))
        remaining = [d for d in remaining if id(d) not in placed]
    return order


async def _call(function: Callable[[Any], Any], argument: Any) -> Any:
    result = function(argument)
    if inspect.isawaitable(result):
        result = await result
    return result


def _digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()[:20]


def _contains(live: Any, want: Any) -> bool:
    """Every value of ``want`` is in ``live`` (lists of objects: each item in some item)."""
    if isinstance(want, dict):
        return isinstance(live, dict) and all(
            key in live and _contains(live[key], value) for key, value in want.items()
        )
    if isinstance(want, list) and want and all(isinstance(item, dict) for item in want):
        return isinstance(live, list) and all(
            any(_contains(have, item) for have in live) for item in want
        )
    return bool(live == want)


def _up_to_date(body: dict[str, Any], live: dict[str, Any], manager: str) -> bool:
    """Whether applying ``body`` to ``live`` would change nothing the manager owns."""
    if any(
        entry.get("manager") == manager and entry.get("operation") == "Apply"
        for entry in (live.get("metadata") or {}).get("managedFields") or ()
    ):
        return owned_fields(live, manager) == body
    return _contains(live, body)


class Workflow:
    """A primary's dependents, applied in dependency order (see the module docs).

    Args:
        dependents: The dependents; each one's ``depends_on`` must be among them.
        field_manager: The field manager of every apply (and of nothing else).
        name: The value of the ``pyctrl.io/workflow`` label on the children, which
            pruning looks for (default: ``field_manager``; a valid label value).
        conditions: Write the conditions to the primary's status (`reconcile`).

    Raises:
        ValueError: a cycle, a duplicate name, or a ``depends_on`` outside the workflow.
    """

    def __init__(
        self,
        dependents: Sequence[Dependent[Any]],
        *,
        field_manager: str,
        name: str | None = None,
        conditions: bool = True,
    ) -> None:
        if not field_manager:
            raise ValueError("a Workflow needs a field_manager")
        self.dependents = _ordered(dependents)
        self.field_manager = field_manager
        self.name = name or field_manager
        self.conditions = conditions
        # Per primary uid, the children the last complete pruning left (most recent last).
        self._pruned: OrderedDict[str, frozenset[tuple[Any, ...]]] = OrderedDict()

    def owned_types(self) -> list[type[Any]]:
        """The dependents' types, each once, in dependency order (what ``owns()`` needs)."""
        types: list[type[Any]] = []
        for dependent in self.dependents:
            if dependent.type not in types:
                types.append(dependent.type)
        return types

    async def reconcile(
        self, client: Client, primary: Any, *, write_status: bool | None = None
    ) -> WorkflowResult:
        """Apply, wait, prune and report for ``primary``; see the module docs.

        Args:
            client: Reads the children (a manager's client reads its cache) and writes.
            primary: The primary object, as read (with its uid and generation).
            write_status: Write the conditions to the primary's status (default: the
                workflow's ``conditions``).

        Returns:
            What happened to each dependent; ``result.ready`` says whether all are ready.

        Raises:
            WorkflowError: one or more dependents failed (raised after the others ran,
                the pruning and the status write); its ``result`` says what happened.
        """
        result = WorkflowResult(generation=accessor(primary).generation or None)
        desired: dict[str, Any] = {}
        for dependent in self.dependents:
            state = await self._desire(client, primary, dependent)
            if isinstance(state, DependentResult):
                result.dependents[dependent.name] = state
            else:
                desired[dependent.name] = state
        for dependent in self.dependents:
            if dependent.name in desired:
                result.dependents[dependent.name] = await self._reconcile_one(
                    client, dependent, desired[dependent.name], result
                )
        await self._prune(client, primary, desired, result)
        if write_status if write_status is not None else self.conditions:
            await self._write_status(client, primary, result)
        if result.errors:
            error = WorkflowError(f"workflow {self.name}: dependents failed", result.errors)
            error.result = result
            raise error
        return result

    async def _desire(
        self, client: Client, primary: Any, dependent: Dependent[Any]
    ) -> dict[str, Any] | DependentResult:
        """The body to apply, or the result of a dependent that is inactive or failed."""
        try:
            if dependent.activation is not None and not dependent.activation(primary):
                return DependentResult(dependent.name, Outcome.INACTIVE)
            wanted = await _call(dependent.desired, primary)
            if wanted is None:
                return DependentResult(dependent.name, Outcome.INACTIVE)
            body = await self._body(client, primary, wanted)
            kind, expected = client.scheme.gvk_for(body), client.scheme.gvk_for(dependent.type)
            if kind != expected:
                raise TypeError(f"{dependent.name} is a {expected}, but desired gave a {kind}")
            return body
        except Exception as exc:  # reported in its condition, raised after the others ran
            return DependentResult(
                dependent.name, Outcome.FAILED, reason="DesiredFailed", message=str(exc), error=exc
            )

    async def _body(self, client: Client, primary: Any, wanted: Any) -> dict[str, Any]:
        body = apply_configuration(wanted, client.scheme)
        body.pop("status", None)
        metadata = body.setdefault("metadata", {})
        for key in ("resourceVersion", "uid", "creationTimestamp", "generation"):
            metadata.pop(key, None)
        if not metadata.get("name"):
            raise ValueError(f"the desired {body.get('kind')} has no metadata.name")
        mapping = await client.mapper.mapping_for(client.scheme.gvk_for(body))
        if mapping.namespaced and not metadata.get("namespace"):
            metadata["namespace"] = accessor(primary).namespace
        metadata["labels"] = {
            **(metadata.get("labels") or {}),
            WORKFLOW_LABEL: self.name,
            PRIMARY_LABEL: accessor(primary).uid,
        }
        set_controller_reference(primary, body, scheme=client.scheme)
        annotations = metadata.pop("annotations", None) or {}
        annotations.pop(DESIRED_HASH_ANNOTATION, None)
        digest = _digest({**body, "metadata": {**metadata, "annotations": annotations}})
        metadata["annotations"] = {**annotations, DESIRED_HASH_ANNOTATION: digest}
        return body

    async def _reconcile_one(
        self,
        client: Client,
        dependent: Dependent[Any],
        body: dict[str, Any],
        result: WorkflowResult,
    ) -> DependentResult:
        blocked = [
            result.dependents[needed.name]
            for needed in dependent.depends_on
            if result.dependents[needed.name].outcome is not Outcome.READY
        ]
        if blocked:
            waiting = ", ".join(f"{b.name} ({b.reason or b.outcome.value})" for b in blocked)
            return DependentResult(
                dependent.name, Outcome.WAITING, reason="Waiting", message=f"waiting for {waiting}"
            )
        try:
            operation, child, data = await self._apply(client, dependent, body)
            # kstatus' rules read JSON: spare them serialising the child again.
            readiness = _readiness(dependent, data if dependent.ready is ready else child)
        except Exception as exc:  # reported in its condition, raised after the others ran
            return DependentResult(
                dependent.name, Outcome.FAILED, reason="ApplyFailed", message=str(exc), error=exc
            )
        return DependentResult(
            dependent.name,
            Outcome.READY if readiness else Outcome.NOT_READY,
            operation=operation,
            object=child,
            readiness=readiness,
            reason=readiness.reason,
            message=readiness.message,
        )

    async def _apply(
        self, client: Client, dependent: Dependent[Any], body: dict[str, Any]
    ) -> tuple[Operation, Any, dict[str, Any]]:
        """Apply ``body`` unless the live child has it already; the child, typed and as JSON."""
        metadata = body["metadata"]
        try:
            live = await client.get(dependent.type, metadata["name"], metadata.get("namespace"))
        except NotFoundError:
            live = None
        if live is not None:
            data = client.scheme.to_dict(live)
            if _up_to_date(body, data, self.field_manager):
                return Operation.UNCHANGED, live, data
        applied = await client.apply(body, field_manager=self.field_manager, force=True)
        child = client.scheme.from_dict(applied, dependent.type)
        return (Operation.CREATED if live is None else Operation.UPDATED), child, applied

    async def _prune(
        self,
        client: Client,
        primary: Any,
        desired: dict[str, dict[str, Any]],
        result: WorkflowResult,
    ) -> None:
        """Delete the children no active dependent wants (never those of a failed type)."""
        keep: dict[type[Any], set[tuple[str, str]]] = {}
        unsure: set[type[Any]] = set()
        for dependent in self.dependents:
            wanted = keep.setdefault(dependent.type, set())
            if dependent.name in desired:
                metadata = desired[dependent.name]["metadata"]
                wanted.add((metadata.get("namespace") or "", metadata["name"]))
            elif result.dependents[dependent.name].outcome is Outcome.FAILED:
                unsure.add(dependent.type)
        uid = accessor(primary).uid
        wanted_now = frozenset((t, *key) for t, keys in keep.items() for key in keys)
        if not unsure and self._pruned.get(uid) == wanted_now:
            self._pruned.move_to_end(uid)
            return  # pruned for exactly these children already: nothing can have strayed
        namespace = accessor(primary).namespace or None
        selector = {WORKFLOW_LABEL: self.name, PRIMARY_LABEL: uid}
        for type_ in reversed(self.owned_types()):
            if type_ in unsure:
                continue
            listed = await client.list(type_, namespace=namespace, labels=selector)
            for child in listed.items:
                meta = accessor(child)
                controlled = any(r.controller and r.uid == uid for r in meta.owner_references)
                if controlled and (meta.namespace, meta.name) not in keep[type_]:
                    try:
                        await client.delete(child)
                    except NotFoundError:
                        continue
                    result.pruned.append((_kind_name(type_), meta.name))
        if not unsure:
            self._pruned[uid] = wanted_now
            if len(self._pruned) > PRUNE_MEMORY:
                self._pruned.popitem(last=False)

    async def _write_status(self, client: Client, primary: Any, result: WorkflowResult) -> None:
        data = client.scheme.to_dict(primary)
        current = [
            Condition.model_validate(c) for c in (data.get("status") or {}).get("conditions") or ()
        ]
        if not result.set_conditions(current):
            return
        patch = {
            # Optimistic lock: conditions written by another writer meanwhile are not lost.
            "metadata": {"resourceVersion": accessor(primary).resource_version},
            "status": {"conditions": [c.to_dict() for c in current]},
        }
        await client.status().patch(primary, MergePatch(patch))


def _readiness(dependent: Dependent[Any], child: Any) -> Readiness:
    if dependent.ready is None:
        return Readiness("Current", "", "applied")
    answer = dependent.ready(child)
    if isinstance(answer, Readiness):
        return answer
    return Readiness("Current") if answer else Readiness("InProgress", "NotReady", "not ready")
