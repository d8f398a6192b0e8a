"""Hostile bodies (deep nesting, YAML alias bombs, oversized objects) never hurt the server.

kube-apiserver decodes YAML with go-yaml (``sigs.k8s.io/yaml``): the first document only,
refusing excessive aliasing (CVE-2019-11253) and unknown or self-containing anchors with
400; etcd refuses writes over 1.5 MiB, which kube-apiserver passes on as a 500 saying
``etcdserver: request is too large``. The embedded server does the same, and bounds
nesting at what it can store (246 levels) for YAML as for JSON.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyctrl._apiserver.apimachinery.errors import StatusError
from pyctrl._apiserver.endpoints import yamlcodec as _yaml
from pyctrl._apiserver.storage.store import check_nesting
from tests.envtest.conftest import unique

if TYPE_CHECKING:
    from pyctrl.envtest import Environment
    from tests.envtest.conftest import Kube

YAML = "application/yaml"
APPLY = "application/apply-patch+yaml"


def laughs(levels: int, fanout: int) -> str:
    """A "billion laughs" document: each level an anchored list of ``fanout`` aliases."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * fanout)}]"]
    for level in range(1, levels + 1):
        refs = ", ".join([f"*a{level - 1}"] * fanout)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + "\n"


def configmap_yaml(name: str, extra: str = "") -> bytes:
    return f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{extra}".encode()


def nested_flow(depth: int) -> str:
    return "[" * depth + "]" * depth


# --- the decoder ---------------------------------------------------------------------------


def test_first_document_only_and_anchors_do_not_cross_documents() -> None:
    """Only the first document is read; an anchor of a later one is unknown in the first."""
    assert _yaml.load("a: &x 1\nb: *x\n---\nc: *x\n") == {"a": 1, "b": 1}
    assert _yaml.load("a: 1\n---\n{{{ not yaml") == {"a": 1}
    with pytest.raises(yaml.YAMLError, match="yaml: unknown anchor 'x' referenced"):
        _yaml.load("a: *x\n---\nb: &x 1\n")
    assert _yaml.load("") is None


def test_an_anchor_containing_itself_is_refused() -> None:
    """An alias inside the node its anchor names is refused, not built as a cycle."""
    with pytest.raises(yaml.YAMLError, match="yaml: anchor 'x' value contains itself"):
        _yaml.load("a: &x {b: *x}\n")


def test_alias_expansion_is_bounded_as_go_yaml_bounds_it() -> None:
    """Moderate aliasing decodes; a document that is mostly alias expansion is refused."""
    # 1,359 decodes, 97% of them through an alias: under go-yaml's 99%.
    accepted = _yaml.load(laughs(levels=2, fanout=10))
    assert len(accepted["a2"]) == 10
    # 13,575 decodes, 99.6% of them through an alias.
    with pytest.raises(yaml.YAMLError, match="yaml: document contains excessive aliasing"):
        _yaml.load(laughs(levels=3, fanout=10))
    with pytest.raises(yaml.YAMLError, match="excessive aliasing"):
        _yaml.load(laughs(levels=9, fanout=9))


def test_nesting_is_bounded_without_exhausting_the_stack() -> None:
    """256 levels decode (flow or block style); one more is refused with a YAMLError."""
    value = _yaml.load(nested_flow(_yaml.MAX_DEPTH))
    for _ in range(_yaml.MAX_DEPTH - 1):
        value = value[0] if value else value
    assert value == []
    block = "".join("  " * i + "- \n" for i in range(200)) + "  " * 200 + "x\n"
    assert _yaml.load(block) is not None
    with pytest.raises(yaml.YAMLError, match="exceeded max depth of 256"):
        _yaml.load(nested_flow(_yaml.MAX_DEPTH + 1))
    # PyYAML flattens merge keys recursively: a long chain is refused, never a crash.
    merges = "a: " + "{<<: " * 250 + "{b: 1}" + "}" * 250
    try:
        assert _yaml.load(merges) == {"a": {"b": 1}}
    except yaml.YAMLError as exc:
        assert "exceeded max depth" in str(exc)  # noqa: PT017 - either outcome is right


@st.composite
def hostile_yaml(draw: st.DrawFn) -> str:
    """Documents mixing deep nesting, anchors, aliases (even dangling) and extra documents."""
    anchors: list[str] = []

    def value(depth: int) -> str:
        choice = draw(st.integers(0, 5 if depth < 40 else 1))
        if choice == 0:
            return draw(st.sampled_from(["1", "x", "null", "'q'", "true", "[]", "{}"]))
        if choice == 1 and anchors:
            return "*" + draw(st.sampled_from([*anchors, "dangling"]))
        if choice == 2:
            return nested_flow(draw(st.sampled_from([0, 3, 240, 250, 300])))
        anchor = ""
        if draw(st.booleans()):
            anchor = f"&n{len(anchors)} "
        items = [value(depth + 1) for _ in range(draw(st.integers(0, 4)))]
        if anchor:
            anchors.append(anchor[1:-1])
        if choice == 3:
            return anchor + "[" + ", ".join(items) + "]"
        return anchor + "{" + ", ".join(f"k{i}: {v}" for i, v in enumerate(items)) + "}"

    documents = [f"doc: {value(0)}" for _ in range(draw(st.integers(1, 3)))]
    return "\n---\n".join(documents) + "\n"


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_yaml())
def test_fuzzed_yaml_is_stored_encodable_or_refused_with_400(text: str) -> None:
    """Any document decodes or raises YAMLError; what decodes is encodable or refused with 400."""
    try:
        value = _yaml.load(text)
    except yaml.YAMLError:
        return
    try:
        check_nesting(value)
    except StatusError as exc:
        assert exc.code == 400  # noqa: PT017 - the refusal is one of two right outcomes
        return
    orjson.dumps({"items": [{"object": value}]})


# --- the server ----------------------------------------------------------------------------


@pytest.mark.embedded_only
async def test_deep_yaml_create_apply_and_delete_bodies_are_400_like_json(
    kube: Kube, ns: str
) -> None:
    """YAML nested 250 or 1,100 levels is a 400 for create, apply and delete, as JSON is."""
    base = f"/api/v1/namespaces/{ns}/configmaps"
    deep, fine = nested_flow(1100), nested_flow(250)
    status, body, _ = await kube.request(
        "POST", base, raw=configmap_yaml("deep", f"x: {deep}\n"), content_type=YAML
    )
    assert (status, body["reason"]) == (400, "BadRequest"), body
    assert "exceeded max depth of 256" in body["message"]
    json_deep = ("{" + '"a":{' * 1100 + "}" * 1101).encode()
    status, body, _ = await kube.post(base, None, raw=json_deep)
    assert (status, body["reason"]) == (400, "BadRequest"), body
    status, body, _ = await kube.request(
        "POST", base, raw=configmap_yaml("fine", f"x: {fine}\n"), content_type=YAML
    )
    assert (status, body["reason"]) == (400, "BadRequest"), body
    assert "nested more than 246 levels" in body["message"]
    await kube.create_ok(base, {"metadata": {"name": "fine"}})
    status, body, _ = await kube.request(
        "PATCH",
        f"{base}/applied",
        raw=configmap_yaml("applied", f"data: {deep}\n"),
        content_type=APPLY,
        params={"fieldManager": "test"},
    )
    assert (status, body["reason"]) == (400, "BadRequest"), body
    status, body, _ = await kube.request(
        "DELETE", f"{base}/fine", raw=f"propagationPolicy: {deep}\n".encode(), content_type=YAML
    )
    assert (status, body["reason"]) == (400, "BadRequest"), body


@pytest.mark.needs_builtin_kinds
async def test_yaml_alias_bomb_is_refused_before_it_expands(kube: Kube, ns: str) -> None:
    """A small body of nested aliases is refused as excessive aliasing, on create and apply."""
    base = f"/api/v1/namespaces/{ns}/configmaps"
    bomb = configmap_yaml("bomb", "data:\n  x: y\n" + laughs(levels=9, fanout=9))
    assert len(bomb) < 1000
    status, body, _ = await kube.request("POST", base, raw=bomb, content_type=YAML)
    assert (status, body["reason"]) == (400, "BadRequest"), body
    assert "yaml: document contains excessive aliasing" in body["message"]
    status, body, _ = await kube.request(
        "PATCH", f"{base}/bomb", raw=bomb, content_type=APPLY, params={"fieldManager": "test"}
    )
    assert status == 400, body
    assert "excessive aliasing" in body["message"]
    status, _, _ = await kube.get(f"{base}/bomb")
    assert status == 404


def _preserving_crd(group: str) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"blobs.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "blobs", "singular": "blob", "kind": "Blob"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


@pytest.mark.embedded_only
async def test_objects_over_etcds_request_limit_are_refused_as_etcd_does(
    env: Environment, kube: Kube, ns: str
) -> None:
    """A create or update storing more than 1.5 MiB fails with etcd's 'request is too large'."""
    group = f"{unique('g')}.example.com"
    await env.install_crds([_preserving_crd(group)])
    base = f"/apis/{group}/v1/namespaces/{ns}/blobs"
    # Aliasing below go-yaml's limit still multiplies a 40 kB body into ~2 MB of JSON.
    words = ", ".join(f"word-number-{i:08d}" for i in range(1000))
    refs = ", ".join(["*w"] * 90)

    def blob(name: str, extra: str = "") -> bytes:
        return (
            f"apiVersion: {group}/v1\nkind: Blob\nmetadata:\n  name: {name}\n{extra}"
            f"spec:\n  words: &w [{words}]\n  copies: [{refs}]\n"
        ).encode()

    body = blob("big")
    assert len(body) < 50_000
    status, reply, _ = await kube.request("POST", base, raw=body, content_type=YAML)
    assert status == 500, reply
    assert reply["message"] == "etcdserver: request is too large"
    assert reply.get("reason", "") == ""
    small = await kube.create_ok(
        base, {"apiVersion": f"{group}/v1", "kind": "Blob", "metadata": {"name": "small"}}
    )
    version = small["metadata"]["resourceVersion"]
    status, reply, _ = await kube.request(
        "PUT",
        f"{base}/small",
        raw=blob("small", f"  resourceVersion: '{version}'\n"),
        content_type=YAML,
    )
    assert (status, reply["message"]) == (500, "etcdserver: request is too large"), reply
    status, listed, _ = await kube.get(base)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["small"]
    assert "spec" not in listed["items"][0]


@pytest.mark.embedded_only
async def test_an_object_too_deep_to_encode_is_refused_and_lists_keep_working(
    env: Environment, kube: Kube, ns: str
) -> None:
    """A custom resource nested 250 levels is a 400, not a stored object that breaks lists."""
    group = f"{unique('g')}.example.com"
    await env.install_crds([_preserving_crd(group)])
    base = f"/apis/{group}/v1/namespaces/{ns}/blobs"
    deep = ('{"a":' * 250 + "1" + "}" * 250).encode()
    body = b'{"apiVersion":"%s/v1","kind":"Blob","metadata":{"name":"deep"},"spec":%s}' % (
        group.encode(),
        deep,
    )
    status, reply, _ = await kube.post(base, None, raw=body)
    assert (status, reply["reason"]) == (400, "BadRequest"), reply
    await kube.create_ok(
        base, {"apiVersion": f"{group}/v1", "kind": "Blob", "metadata": {"name": "ok"}}
    )
    status, patched, _ = await kube.request(
        "PATCH",
        f"{base}/ok",
        raw=b'{"spec":' + deep + b"}",
        content_type="application/merge-patch+json",
    )
    assert status == 400, patched
    listed = await kube.get_ok(base)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["ok"]
