"""Fuzzing: hostile review bodies never break the webhook server."""

from __future__ import annotations

import asyncio
import resource
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyctrl.webhook import validate_path

from .conftest import MySrv, Served, mysrv, review

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


def _mutations() -> st.SearchStrategy[Any]:
    base = review("CREATE", mysrv(name="a", port=80))
    keys = ["apiVersion", "kind", "request"]
    request_keys = [
        "uid",
        "kind",
        "resource",
        "operation",
        "object",
        "oldObject",
        "userInfo",
        "dryRun",
    ]
    top = st.builds(lambda k, v: {**base, k: v}, st.sampled_from(keys), json_values)
    inner = st.builds(
        lambda k, v: {**base, "request": {**base["request"], k: v}},
        st.sampled_from(request_keys),
        json_values,
    )
    obj = st.builds(
        lambda k, v: {
            **base,
            "request": {**base["request"], "object": {**base["request"]["object"], k: v}},
        },
        st.sampled_from(["apiVersion", "kind", "metadata", "spec"]),
        json_values,
    )
    return top | inner | obj | json_values


def _check(status: int, body: bytes, kind: str) -> None:
    assert status in (200, 400, 413), status
    if status == 200:
        answer = orjson.loads(body)
        assert answer["kind"] == kind
        assert isinstance(answer["response"]["uid"], str)


async def _fuzz(served: Served, path: str, strategy: st.SearchStrategy[Any], kind: str) -> None:
    loop = asyncio.get_running_loop()
    bodies: list[bytes] = []

    @settings(
        max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(strategy)
    def collect(value: Any) -> None:
        bodies.append(orjson.dumps(value))

    await loop.run_in_executor(None, collect)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for body in bodies:
        status, answer = await served.post(path, body)
        _check(status, answer, kind)
    status, _ = await served.post(
        validate_path(MySrv), orjson.dumps(review("CREATE", mysrv(name="a")))
    )
    assert status == 200
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 64 * 1024


async def test_hostile_admission_reviews(served: Served) -> None:
    """Every mutated AdmissionReview gets a 4xx or a well-formed response; the server stays up."""
    await _fuzz(served, validate_path(MySrv), _mutations(), "AdmissionReview")


async def test_hostile_conversion_reviews(served: Served) -> None:
    """Every mutated ConversionReview gets a 4xx or a well-formed response; the server stays up."""
    base: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": "climate.example.com/v1alpha1", "objects": []},
    }
    strategy = (
        st.builds(
            lambda k, v: {**base, k: v},
            st.sampled_from(["apiVersion", "kind", "request"]),
            json_values,
        )
        | st.builds(
            lambda k, v: {**base, "request": {**base["request"], k: v}},
            st.sampled_from(["uid", "desiredAPIVersion", "objects"]),
            json_values,
        )
        | st.builds(
            lambda objs: {**base, "request": {**base["request"], "objects": objs}},
            st.lists(json_values, max_size=3),
        )
    )
    await _fuzz(served, "/convert", strategy, "ConversionReview")
