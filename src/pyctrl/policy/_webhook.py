"""A policy's rules served from a webhook: `ValidatingPolicy.validator`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl.policy._types import Evaluation, PolicyError
from pyctrl.scheme import default_scheme
from pyctrl.webhook import InvalidObjectError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from pyctrl.policy._policy import ValidatingPolicy

__all__ = ["PolicyValidator"]


class PolicyValidator:
    """A `pyctrl.webhook.Validator` checking a policy's typed rules in Python.

    Args:
        policy: The policy; each of its validations needs its Python ``check``.
        params: Gives the param object as JSON for each request (a policy with params);
            e.g. a function reading it from the manager's cache.
    """

    def __init__(
        self,
        policy: ValidatingPolicy,
        params: Callable[[], Mapping[str, Any] | None] | None = None,
    ) -> None:
        missing = [i for i, v in enumerate(policy.validations) if v.check is None]
        if missing:
            raise PolicyError(
                f'policy "{policy.name}" validations{missing}: written in CEL, with no '
                "Python check to run in a webhook (use the typed helpers, or pass check=)"
            )
        self.policy = policy
        self.params = params
        self.warn = "Warn" in policy.bindings[0].validation_actions

    def _verdict(self, ev: Evaluation) -> list[str] | None:
        failed = []
        for validation in self.policy.validations:
            assert validation.check is not None
            if not validation.check(ev):
                failed.append(validation.message or f"failed expression: {validation.expression}")
        if not failed:
            return None
        if self.warn:
            return failed
        raise InvalidObjectError("; ".join(failed))

    def _json(self, obj: Any) -> dict[str, Any]:
        return default_scheme().to_dict(obj)

    def _evaluation(self, obj: Any, old: Any, operation: str) -> Evaluation:
        return Evaluation(
            object=None if obj is None else self._json(obj),
            old_object=None if old is None else self._json(old),
            params=self.params() if self.params is not None else None,
            operation=operation,
        )

    async def validate_create(self, obj: Any) -> list[str] | None:
        """Check a create."""
        if "CREATE" not in self.policy.operations:
            return None
        return self._verdict(self._evaluation(obj, None, "CREATE"))

    async def validate_update(self, old: Any, new: Any) -> list[str] | None:
        """Check an update."""
        if "UPDATE" not in self.policy.operations:
            return None
        return self._verdict(self._evaluation(new, old, "UPDATE"))

    async def validate_delete(self, obj: Any) -> list[str] | None:
        """Check a delete."""
        if "DELETE" not in self.policy.operations:
            return None
        return self._verdict(self._evaluation(None, obj, "DELETE"))
