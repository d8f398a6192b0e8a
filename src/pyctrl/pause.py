"""Pausing one object: an annotation makes its controller leave it alone.

Set ``pyctrl.dev/paused: "true"`` on an object and the controllers built for its type
(``controller_managed_by(m).for_(T)``) stop reconciling it: while you fix something by
hand, migrate it, or debug it, as Strimzi, Crossplane and Metal3 each let you::

    kubectl annotate mysrv web pyctrl.dev/paused=true     # hands off
    kubectl annotate mysrv web pyctrl.dev/paused-         # reconciled at once

How it works (on by default; the builder's ``paused_annotation(None)`` turns it off):

- the `NotPaused` predicate on the ``for_`` watch drops the updates of an object paused
  before and after them (edits while paused wake nothing); the update that pauses it,
  the one that removes the annotation (which reconciles the object at once), creates
  (the operator's start included) and deletes pass;
- `SkipPaused` wraps the reconciler: a request whose cached object is paused is not
  handed to your code, whatever queued it (an owned object, a timer, a requeue); it
  records a ``Paused`` Normal event on the object instead (the recorder folds repeats
  into one Event with a count) and logs ``reconcile skipped: object paused``.

Only the value ``"true"`` (in any case) pauses; other values are ignored. Daemons
(`pyctrl.daemon`) keep running: stop them from your reconciler if they must pause too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from pyctrl.errors import NotFoundError
from pyctrl.log import get_logger
from pyctrl.resource import ObjectAccessor, accessor

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
    from pyctrl.reconcile import ObjectReader, ObjectReconciler, Reconciler, Request, Result

__all__ = ["PAUSED_ANNOTATION", "NotPaused", "SkipPaused", "is_paused"]

PAUSED_ANNOTATION = "pyctrl.dev/paused"
"""The annotation that pauses an object's reconciles when its value is ``"true"``."""

_log = get_logger("pyctrl.pause")


def is_paused(obj: Any, annotation: str = PAUSED_ANNOTATION) -> bool:
    """Whether ``obj`` carries ``annotation: "true"`` (any case)."""
    if obj is None:
        return False
    return _pauses(accessor(obj), annotation)


def _pauses(meta: ObjectAccessor, annotation: str) -> bool:
    value = (meta.annotations or {}).get(annotation)
    return isinstance(value, str) and value.lower() == "true"


class NotPaused:
    """A predicate: drops the updates of an object paused before and after them.

    The update that pauses an object passes (its reconcile records that it is paused), as
    does the one that resumes it; creates, deletes and generic events pass, so the start
    of the operator records once that each paused object is paused.
    """

    def __init__(self, annotation: str = PAUSED_ANNOTATION) -> None:
        self.annotation = annotation

    def create(self, event: CreateEvent[Any]) -> bool:
        """Always pass."""
        return True

    def update(self, event: UpdateEvent[Any]) -> bool:
        """Pass unless the object was paused before and still is."""
        return not (
            _pauses(event.meta_old, self.annotation) and _pauses(event.meta_new, self.annotation)
        )

    def delete(self, event: DeleteEvent[Any]) -> bool:
        """Always pass."""
        return True

    def generic(self, event: GenericEvent[Any]) -> bool:
        """Always pass."""
        return True

    def __repr__(self) -> str:
        return f"NotPaused({self.annotation!r})"


class SkipPaused:
    """Wraps a reconciler: requests of paused objects are skipped (see the module docs).

    Args:
        reader: Reads the request's object (the manager's cache).
        type_: The reconciled type.
        reconciler: The wrapped reconciler: a `pyctrl.reconcile.Reconciler`, or with
            ``hand_object`` an `pyctrl.reconcile.ObjectReconciler`.
        record: ``record(obj, reason, message)`` records a Normal event on the object.
        annotation: The pausing annotation.
        hand_object: Hand the object read for the check to ``reconcile_object`` (and skip
            a request whose object is gone), so that each reconcile reads it once: what the
            builder does for an ObjectReconciler.
    """

    def __init__(
        self,
        reader: ObjectReader,
        type_: type[Any],
        reconciler: Reconciler | ObjectReconciler[Any],
        record: Callable[[Any, str, str], None],
        annotation: str = PAUSED_ANNOTATION,
        *,
        hand_object: bool = False,
    ) -> None:
        self._reader, self._type, self._reconciler = reader, type_, reconciler
        self._record, self.annotation = record, annotation
        self._hand_object = hand_object

    async def reconcile(self, request: Request) -> Result | None:
        """Skip a paused object; reconcile any other (a gone one included)."""
        try:
            obj = await self._reader.get(self._type, request.name, request.namespace or None)
        except NotFoundError:
            obj = None
        if is_paused(obj, self.annotation):
            _log.info("reconcile skipped: object paused", annotation=self.annotation)
            self._record(
                obj,
                "Paused",
                f"reconciliation paused by the annotation {self.annotation}=true; "
                "remove it to resume",
            )
            return None
        if self._hand_object:
            if obj is None:
                return None  # gone: nothing to reconcile (as `pyctrl.reconcile.as_reconciler`)
            return await cast("ObjectReconciler[Any]", self._reconciler).reconcile_object(obj)
        return await cast("Reconciler", self._reconciler).reconcile(request)

    def __repr__(self) -> str:
        return f"SkipPaused({self._reconciler!r})"
