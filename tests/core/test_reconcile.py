"""pyctrl.reconcile: requests, results and the Reconciler protocol."""

from __future__ import annotations

from datetime import timedelta

import pytest

from pyctrl.reconcile import Func, Reconciler, Request, Result


def test_request_prints_as_namespace_slash_name() -> None:
    """A request prints as ns/name, or just name when cluster-scoped."""
    assert str(Request("default", "web")) == "default/web"
    assert str(Request("", "node-1")) == "node-1"


def test_request_is_hashable_and_ordered() -> None:
    """Requests work as dict keys and sort by namespace then name."""
    keys = {Request("b", "x"): 1, Request("a", "y"): 2, Request("a", "x"): 3}
    assert sorted(keys) == [Request("a", "x"), Request("a", "y"), Request("b", "x")]
    assert keys[Request("a", "y")] == 2


def test_request_parse_round_trips() -> None:
    """Request.parse reads what str() writes and refuses malformed keys."""
    assert Request.parse("ns/name") == Request("ns", "name")
    assert Request.parse("name") == Request("", "name")
    for bad in ("", "ns/", "/name"):
        with pytest.raises(ValueError, match="invalid request key"):
            Request.parse(bad)


def test_result_accepts_timedelta_and_rejects_negative() -> None:
    """requeue_after takes seconds or a timedelta; a negative delay is an error."""
    assert Result(requeue_after=timedelta(minutes=1)).requeue_after == 60.0
    assert Result(requeue_after=2).requeue_after == 2.0
    assert Result().is_zero
    assert not Result(requeue=True).is_zero
    with pytest.raises(ValueError, match="negative"):
        Result(requeue_after=-1)


async def test_func_adapts_a_coroutine_function() -> None:
    """Func wraps a coroutine function into a Reconciler."""
    seen: list[Request] = []

    async def reconcile(request: Request) -> Result:
        seen.append(request)
        return Result(requeue=True)

    reconciler: Reconciler = Func(reconcile)
    assert isinstance(reconciler, Reconciler)
    assert await reconciler.reconcile(Request("ns", "a")) == Result(requeue=True)
    assert seen == [Request("ns", "a")]
