"""Sharded list and watch (KEP-5866): ``shardSelector``, ``metadata.shardInfo`` and errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pyctrl.sharding import HASH_SPACE, hash_field
from tests.envtest.conformance.test_server_watch import watch

if TYPE_CHECKING:
    from pyctrl.envtest import Environment
    from tests.envtest.conftest import Kube

pytestmark = pytest.mark.embedded_only  # the ShardedListAndWatch gate is alpha in 1.36

LOWER = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')"
UPPER = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"


def lower_half(obj: dict[str, Any]) -> bool:
    return hash_field(obj["metadata"]["uid"]) < HASH_SPACE // 2


async def _seed(kube: Kube, ns: str, count: int = 12) -> tuple[str, list[dict[str, Any]]]:
    path = f"/api/v1/namespaces/{ns}/configmaps"
    made = [await kube.create_ok(path, {"metadata": {"name": f"c{i}"}}) for i in range(count)]
    return path, made


async def test_list_returns_only_the_objects_whose_uid_hash_is_in_range(
    kube: Kube, ns: str
) -> None:
    """A sharded list keeps the objects whose FNV-1a hash of the uid is in [start, end)."""
    path, made = await _seed(kube, ns)
    lower = await kube.get_ok(path, params={"shardSelector": LOWER})
    upper = await kube.get_ok(path, params={"shardSelector": UPPER})
    names = {o["metadata"]["name"] for o in made if lower_half(o)}
    assert {o["metadata"]["name"] for o in lower["items"]} == names
    assert {o["metadata"]["name"] for o in upper["items"]} == {
        o["metadata"]["name"] for o in made
    } - names


async def test_list_echoes_the_selector_in_shard_info(kube: Kube, ns: str) -> None:
    """The list's metadata.shardInfo.selector is the selector of the request, as sent."""
    path, _ = await _seed(kube, ns, 2)
    body = await kube.get_ok(path, params={"shardSelector": LOWER})
    assert body["metadata"]["shardInfo"] == {"selector": LOWER}
    plain = await kube.get_ok(path)
    assert "shardInfo" not in plain["metadata"]


async def test_ranges_or_ed_together_cover_their_union(kube: Kube, ns: str) -> None:
    """``||`` joins ranges: the two halves together return every object."""
    path, made = await _seed(kube, ns)
    body = await kube.get_ok(path, params={"shardSelector": f"{LOWER} || {UPPER}"})
    assert len(body["items"]) == len(made)


async def test_namespace_field_puts_a_namespace_in_one_shard(kube: Kube, ns: str) -> None:
    """Sharding on object.metadata.namespace keeps or drops a namespace's objects together."""
    path, made = await _seed(kube, ns, 4)
    inside = hash_field(ns) < HASH_SPACE // 2
    selector = LOWER.replace("metadata.uid", "metadata.namespace")
    body = await kube.get_ok(path, params={"shardSelector": selector})
    assert len(body["items"]) == (len(made) if inside else 0)


async def test_watch_sends_only_events_of_objects_in_range(kube: Kube, ns: str) -> None:
    """A sharded watch delivers the events of in-range objects and nothing of the others."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    created = await kube.create_ok(path, {"metadata": {"name": "start"}})
    async with watch(
        kube, path, resourceVersion=created["metadata"]["resourceVersion"], shardSelector=LOWER
    ) as stream:
        made = [await kube.create_ok(path, {"metadata": {"name": f"w{i}"}}) for i in range(12)]
        wanted = [o["metadata"]["name"] for o in made if lower_half(o)]
        got = [(await stream.next_non_bookmark())["object"]["metadata"]["name"] for _ in wanted]
        await kube.create_ok(path, {"metadata": {"name": "last"}})
    assert got == wanted


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (
            "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
            'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" '
            '(did you mean "0x0000000000000000"?)',
        ),
        (
            "shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
            'unsupported field path "object.metadata.name"; '
            "supported: object.metadata.uid, object.metadata.namespace",
        ),
        (
            "shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
            "shard range start 0x8000000000000000 must be less than end 0x0000000000000000",
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000')",
            "shardRange() requires exactly 3 arguments, got 2",
        ),
        (
            "hashRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')",
            'unsupported function "hashRange"; only shardRange() and || are allowed',
        ),
        (
            f"{LOWER} && {UPPER}",
            'unsupported function "_&&_"; only shardRange() and || are allowed',
        ),
        (
            f"{LOWER} || {LOWER.replace('metadata.uid', 'metadata.namespace')}",
            "all shard ranges must use the same field, "
            'got "object.metadata.uid" and "object.metadata.namespace"',
        ),
        (
            "shardRange(object.metadata.uid, '0x0000000000000000', '0xG000000000000000')",
            'hexEnd: invalid hex character "G" in "0xG000000000000000"',
        ),
    ],
)
async def test_malformed_selector_is_400_naming_the_problem(
    kube: Kube, ns: str, selector: str, message: str
) -> None:
    """A malformed shardSelector is a BadRequest whose message says what is wrong."""
    for params in ({"shardSelector": selector}, {"shardSelector": selector, "watch": "true"}):
        status, body, _ = await kube.get(f"/api/v1/namespaces/{ns}/configmaps", params=params)
        assert status == 400
        assert body["reason"] == "BadRequest"
        assert body["message"] == f"invalid shard selector: {message}"


async def test_with_the_gate_off_the_selector_is_ignored(
    env: Environment, kube: Kube, ns: str
) -> None:
    """A server without ShardedListAndWatch sends everything and no shardInfo (pre-1.36)."""
    assert env.server is not None
    env.server.sharded_list_and_watch = False
    path, made = await _seed(kube, ns, 6)
    body = await kube.get_ok(path, params={"shardSelector": LOWER})
    assert len(body["items"]) == len(made)
    assert "shardInfo" not in body["metadata"]
    status, _, _ = await kube.get(path, params={"shardSelector": "nonsense("})
    assert status == 200
