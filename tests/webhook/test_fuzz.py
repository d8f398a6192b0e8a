"""Fuzzing: hostile review bodies never break the webhook server or grow its memory."""

from __future__ import annotations

import asyncio
import base64
import gc
import io
import ssl
import tracemalloc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import jsonpatch
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes_asyncio.client import V1Pod

from pyctrl.meta import GroupVersionKind
from pyctrl.resource import Unstructured
from pyctrl.webhook import (
    AdmissionRequest,
    AdmissionResponse,
    AdmissionReview,
    ConversionReview,
    InvalidObjectError,
    Rule,
    Server,
    WebhookOptions,
    denied,
    mutate_path,
    patch_response,
    register_admission,
    register_defaulter,
    register_validator,
    validate_path,
)

from .conftest import Checks, MySrv, Served, mysrv, review

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from pyctrl.certs import CertificateAuthority

LIMIT = 7 * 1024 * 1024
ROUNDS = 3
"""Traced rounds over the same bodies after a warm-up round; a leak grows with each."""
GROWTH_LIMIT = 512 * 1024
"""Bytes the traced heap may grow over the last rounds: far below one round's traffic."""


@dataclass(frozen=True)
class Case:
    """One request: raw body bytes, a Content-Type, and the status it must get (if known)."""

    body: bytes
    content_type: str = "application/json"
    expected: int | None = None


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


def _json(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Case]:
    return strategy.map(lambda value: Case(orjson.dumps(value)))


def _nested(base: dict[str, Any], depth: int) -> bytes:
    """``base`` with objects nested ``depth`` deep in the object's spec.

    Written by hand: orjson encodes only 255 levels, but decodes up to 1024.
    """
    raw = orjson.dumps(_with_object_field(base, "deep", "DEEP"))
    return raw.replace(b'"DEEP"', b'{"a":' * depth + b"1" + b"}" * depth, 1)


def _byte_level(base: dict[str, Any]) -> st.SearchStrategy[Case]:
    """Bodies broken below the JSON level: truncated, invalid UTF-8, deep, odd types."""
    raw = orjson.dumps(base)
    truncated = st.integers(0, len(raw) - 1).map(lambda n: Case(raw[:n]))
    marker = b'"uid-1"'
    invalid_utf8 = st.sampled_from(
        [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"]
    ).map(lambda bad: Case(raw.replace(marker, b'"' + bad + b'"', 1)))
    deep_arrays = st.sampled_from([100, 1000, 1024, 1025, 100_000]).map(
        lambda depth: Case(b"[" * depth + b"]" * depth)
    )
    deep_objects = st.sampled_from([50, 254, 256, 500, 900, 1020]).map(
        lambda depth: Case(_nested(base, depth))
    )
    content_types = st.builds(
        Case,
        st.just(raw),
        st.sampled_from(
            [
                "text/plain",
                "application/x-www-form-urlencoded",
                "application/json-patch+json",
                "application/yaml",
                "multipart/form-data; boundary=x",
                "application/json; charset=utf-8",
                "",
            ]
        ),
    )
    return truncated | invalid_utf8 | deep_arrays | deep_objects | content_types


def _with_object_field(base: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """``base`` with ``key: value`` added to the spec of its (first) object."""
    request = base["request"]
    if "object" in request:
        obj = request["object"]
        return {**base, "request": {**request, "object": _with_spec(obj, key, value)}}
    first, *rest = request["objects"]
    return {**base, "request": {**request, "objects": [_with_spec(first, key, value), *rest]}}


def _with_spec(obj: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    return {**obj, "spec": {**obj.get("spec", {}), key: value}}


def _near_the_limit(base: dict[str, Any]) -> list[Case]:
    """Bodies padded with one large string to just under, at (served) and just over 7 MiB."""
    overhead = len(orjson.dumps(_with_object_field(base, "pad", "")))
    return [
        Case(
            orjson.dumps(_with_object_field(base, "pad", "x" * (LIMIT - overhead - slack))),
            expected=expected,
        )
        for slack, expected in ((4096, 200), (0, 200), (-1, 413))
    ]


def _admission_cases(base: dict[str, Any] | None = None) -> st.SearchStrategy[Case]:
    base = base or review("CREATE", mysrv(name="a", port=80))
    request_keys = ["uid", "kind", "resource", "operation", "object", "oldObject", "userInfo"]
    top = st.builds(
        lambda k, v: {**base, k: v}, st.sampled_from(["apiVersion", "kind", "request"]), json_values
    )
    inner = st.builds(
        lambda k, v: {**base, "request": {**base["request"], k: v}},
        st.sampled_from([*request_keys, "dryRun"]),
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
    return _json(top | inner | obj | json_values) | _byte_level(base)


def _thermostat(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "climate.example.com/v1",
        "kind": "Thermostat",
        "metadata": {"name": f"t{i}", "namespace": "default"},
        "spec": {"targetCelsius": float(i % 40), "mode": "heat"},
    }


_CONVERSION_BASE: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "ConversionReview",
    "request": {
        "uid": "u",
        "desiredAPIVersion": "climate.example.com/v1alpha1",
        "objects": [_thermostat(0)],
    },
}


def _conversion_cases() -> st.SearchStrategy[Case]:
    base = _CONVERSION_BASE
    top = st.builds(
        lambda k, v: {**base, k: v}, st.sampled_from(["apiVersion", "kind", "request"]), json_values
    )
    inner = st.builds(
        lambda k, v: {**base, "request": {**base["request"], k: v}},
        st.sampled_from(["uid", "desiredAPIVersion", "objects"]),
        json_values,
    )
    objects = st.builds(
        lambda objs: {**base, "request": {**base["request"], "objects": objs}},
        st.lists(json_values, max_size=3),
    )
    # Large lists of good objects, some with one broken object somewhere in them.
    big = st.builds(
        lambda n, broken: {
            **base,
            "request": {
                **base["request"],
                "objects": [
                    {**_thermostat(i), "spec": {"targetCelsius": "hot"}}
                    if i == broken
                    else _thermostat(i)
                    for i in range(n)
                ],
            },
        },
        st.sampled_from([500, 3000]),
        st.integers(-1, 3000),
    )
    # Converting to the objects' own version copies them: nothing re-serializes them on
    # the way, so only encoding the answer meets their depth.
    same = {**base, "request": {**base["request"], "desiredAPIVersion": "climate.example.com/v1"}}
    return _json(top | inner | objects | big) | _byte_level(base) | _byte_level(same)


def _check(case: Case, status: int, answer: bytes, kind: str) -> None:
    assert status in (200, 400, 413), (status, answer[:200])
    assert case.expected in (None, status), (case.expected, status, answer[:200])
    if status != 200:
        return
    assert case.content_type.startswith("application/json")
    sent = orjson.loads(case.body)
    if kind == "AdmissionReview":
        response = AdmissionReview.model_validate_json(answer).response
        assert response is not None
        assert response.uid == sent["request"]["uid"]
        assert response.allowed or (response.status or {}).get("code") in (400, 422, 500)
        if response.patch is not None:
            # The API server applies the patch to the object it sent: it must apply.
            ops = orjson.loads(base64.b64decode(response.patch))
            jsonpatch.apply_patch(sent["request"]["object"], ops)
    else:
        converted = ConversionReview.model_validate_json(answer).response
        assert converted is not None
        request = sent["request"]
        assert converted.uid == request["uid"]
        assert converted.result["status"] in ("Success", "Failure")
        if converted.result["status"] == "Success":
            assert len(converted.converted_objects) == len(request["objects"])
            for obj in converted.converted_objects:
                assert obj["apiVersion"] == request["desiredAPIVersion"]
        else:
            assert converted.converted_objects == []
            assert converted.result["message"]


def _generate(strategy: st.SearchStrategy[Case], examples: int) -> list[Case]:
    cases: list[Case] = []

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(strategy)
    def collect(case: Case) -> None:
        cases.append(case)

    collect()
    return cases


async def _round(
    session: aiohttp.ClientSession,
    served: Served,
    paths: list[str],
    cases: list[Case],
    kind: str,
) -> None:
    for case in cases:
        headers = {"Content-Type": case.content_type} if case.content_type else {}
        for path in paths:
            async with session.post(
                served.url + path, data=io.BytesIO(case.body), headers=headers, ssl=served.ssl
            ) as resp:
                answer = await resp.read()
                _check(case, resp.status, answer, kind)


def _traced_heap() -> int:
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [
            # What the test harness keeps (captured log records, tracemalloc's own).
            tracemalloc.Filter(False, "*/logging/*"),
            tracemalloc.Filter(False, "*/_pytest/*"),
            tracemalloc.Filter(False, tracemalloc.__file__),
        ]
    )
    return sum(stat.size for stat in snapshot.statistics("filename"))


async def _fuzz(
    served: Served,
    paths: list[str],
    cases: list[Case],
    kind: str,
    probe: tuple[str, dict[str, Any]] | None = None,
) -> None:
    async with aiohttp.ClientSession() as session:
        await _round(session, served, paths, cases, kind)  # warm-up: caches, pools
        tracemalloc.start()
        try:
            await _round(session, served, paths, cases, kind)
            first = _traced_heap()
            for _ in range(ROUNDS - 1):
                await _round(session, served, paths, cases, kind)
            growth = _traced_heap() - first
        finally:
            tracemalloc.stop()
    sent = sum(len(case.body) for case in cases)
    assert growth < GROWTH_LIMIT, f"heap grew {growth} bytes over rounds of {sent} bytes"
    path, body = probe or (validate_path(MySrv), review("CREATE", mysrv(name="a")))
    status, _ = await served.post(path, orjson.dumps(body))
    assert status == 200


async def test_hostile_admission_reviews(served: Served) -> None:
    """Every hostile AdmissionReview body gets a 4xx or a valid response; memory stays flat."""
    loop = asyncio.get_running_loop()
    cases = await loop.run_in_executor(None, _generate, _admission_cases(), 200)
    cases += _near_the_limit(review("CREATE", mysrv(name="a")))
    await _fuzz(served, [validate_path(MySrv), mutate_path(MySrv)], cases, "AdmissionReview")


async def test_hostile_conversion_reviews(served: Served) -> None:
    """Every hostile ConversionReview body gets a 4xx or a valid response; memory stays flat."""
    loop = asyncio.get_running_loop()
    cases = await loop.run_in_executor(None, _generate, _conversion_cases(), 150)
    cases += _near_the_limit(_CONVERSION_BASE)
    await _fuzz(served, ["/convert"], cases, "ConversionReview")


class _PodLabels:
    """Defaults a Pod label and refuses a Pod without containers (a built-in kind)."""

    async def default(self, obj: V1Pod) -> None:
        obj.metadata.labels = {**(obj.metadata.labels or {}), "seen": "yes"}

    async def validate_create(self, obj: V1Pod) -> list[str] | None:
        if not obj.spec or not obj.spec.containers:
            raise InvalidObjectError("spec.containers: Required value")
        return ["checked"]

    async def validate_update(self, old: V1Pod, new: V1Pod) -> list[str] | None:
        return await self.validate_create(new)

    async def validate_delete(self, obj: V1Pod) -> list[str] | None:
        return None


class _Keys:
    """An Unstructured ConfigMap: defaults an annotation, refuses a ``bad`` key."""

    async def default(self, obj: Unstructured) -> None:
        obj.set_nested("yes", "metadata", "annotations", "seen")

    async def validate_create(self, obj: Unstructured) -> list[str] | None:
        data = obj.get_nested("data")
        if isinstance(data, dict) and "bad" in data:
            raise InvalidObjectError("data.bad: Forbidden")
        return None

    async def validate_update(self, old: Unstructured, new: Unstructured) -> list[str] | None:
        return await self.validate_create(new)

    async def validate_delete(self, obj: Unstructured) -> list[str] | None:
        return None


class _Raw:
    """A raw handler that reads the object as it comes and patches a label in."""

    async def handle(self, request: AdmissionRequest) -> AdmissionResponse:
        obj = request.object or {}
        if not isinstance(obj.get("metadata"), dict):
            return denied("object has no metadata", code=400, reason="BadRequest")
        return patch_response(obj, {**obj, "metadata": {**obj["metadata"], "labels": {"r": "1"}}})


_CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")
_RAW_RULE = Rule(["CREATE"], [""], ["v1"], ["pods"])


def _pod_review() -> dict[str, Any]:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }
    body = review("CREATE", pod)
    body["request"]["kind"] = {"group": "", "version": "v1", "kind": "Pod"}
    body["request"]["resource"] = {"group": "", "version": "v1", "resource": "pods"}
    return body


def _configmap_review() -> dict[str, Any]:
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
        "data": {"a": "b"},
    }
    body = review("CREATE", cm)
    body["request"]["kind"] = {"group": "", "version": "v1", "kind": "ConfigMap"}
    body["request"]["resource"] = {"group": "", "version": "v1", "resource": "configmaps"}
    return body


@pytest.fixture
async def served_kinds(cert_dir: tuple[Path, CertificateAuthority]) -> AsyncIterator[Served]:
    directory, ca = cert_dir
    server = Server(host="127.0.0.1", port=0, cert_dir=directory)
    register_defaulter(server, V1Pod, _PodLabels())
    register_validator(server, V1Pod, _PodLabels())
    register_defaulter(server, Unstructured, _Keys(), gvk=_CONFIGMAP)
    register_validator(server, Unstructured, _Keys(), gvk=_CONFIGMAP)
    register_admission(
        server, "/raw", _Raw(), options=WebhookOptions(rules=[_RAW_RULE]), mutating=True
    )
    client_ssl = ssl.create_default_context(cadata=ca.cert_pem.decode())
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(server.start())
        async with asyncio.timeout(10):
            await server.wait_started()
        yield Served(
            server, f"https://127.0.0.1:{server.port}", ca, directory, client_ssl, Checks()
        )
        task.cancel()


async def test_hostile_admission_reviews_for_builtin_kind_and_raw_webhooks(
    served_kinds: Served,
) -> None:
    """V1Pod and raw webhooks answer hostile reviews with a 4xx or a well-formed response."""
    loop = asyncio.get_running_loop()
    pods = await loop.run_in_executor(None, _generate, _admission_cases(_pod_review()), 60)
    pod_paths = [mutate_path(V1Pod), validate_path(V1Pod), "/raw"]
    probe = (validate_path(V1Pod), _pod_review())
    await _fuzz(served_kinds, pod_paths, pods, "AdmissionReview", probe)
    # Bodies at and over the 7 MiB limit, once each: the typed Pod decoding is the cost.
    async with aiohttp.ClientSession() as session:
        await _round(
            session, served_kinds, pod_paths, _near_the_limit(_pod_review()), "AdmissionReview"
        )


async def test_hostile_admission_reviews_for_unstructured_webhooks(served_kinds: Served) -> None:
    """Unstructured webhooks answer hostile reviews with a 4xx or a well-formed response."""
    loop = asyncio.get_running_loop()
    maps = await loop.run_in_executor(None, _generate, _admission_cases(_configmap_review()), 60)
    paths = [mutate_path(Unstructured, _CONFIGMAP), validate_path(Unstructured, _CONFIGMAP)]
    probe = (validate_path(Unstructured, _CONFIGMAP), _configmap_review())
    await _fuzz(served_kinds, paths, maps, "AdmissionReview", probe)
