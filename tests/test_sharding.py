"""Shard selectors and slots (KEP-5866): hashing, parsing, slot ranges, the held set."""

from __future__ import annotations

import random

import pytest
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta, V1OwnerReference

from pyctrl.clock import FakeClock
from pyctrl.event import CreateEvent, UpdateEvent
from pyctrl.shardelection import OwnerFilter, ShardingOptions
from pyctrl.sharding import (
    FIELD_NAMESPACE,
    HASH_SPACE,
    ShardRange,
    ShardSelector,
    ShardSelectorError,
    SlotAssignment,
    hash_field,
    parse,
    selector_for_slots,
    slot_bounds,
    slot_of,
)


def test_hash_is_fnv1a_64() -> None:
    """hash_field is FNV-1a 64 over the UTF-8 bytes (the published test vectors)."""
    assert hash_field("") == 0xCBF29CE484222325
    assert hash_field("a") == 0xAF63DC4C8601EC8C
    assert hash_field("foobar") == 0x85944171F73967E8


def test_parse_reads_ranges_or_ed_and_prints_them_back() -> None:
    """parse reads shardRange() calls joined by || (parentheses allowed); str() round-trips."""
    text = (
        "(shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000')) || "
        "shardRange(object.metadata.uid, \"0x8000000000000000\", '0x10000000000000000')"
    )
    selector = parse(text)
    assert selector.ranges == (
        ShardRange("object.metadata.uid", 0, HASH_SPACE // 4),
        ShardRange("object.metadata.uid", HASH_SPACE // 2, HASH_SPACE),
    )
    assert parse(str(selector)) == selector


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty shard selector is not allowed"),
        ("shardRange(", "CEL parse error"),
        ("shardRange(object.metadata.uid, '0x0000000000000000', 5)", "hexEnd must be a string"),
        ("shardRange('x', '0x0000000000000000', '0x1000000000000000')", "first argument"),
        ("shardRange(object.metadata.uid, '0000000000000000', '0x1000000000000000')", "'0x'"),
        ("shardRange(object.metadata.uid, '0x0000000000000000', '0x20000000000000000')", "2^64"),
        ("true", "unexpected expression kind"),
    ],
)
def test_parse_refuses_malformed_selectors(text: str, message: str) -> None:
    """Each malformed selector is refused with a message naming the problem."""
    with pytest.raises(ShardSelectorError, match=message.replace("(", r"\(").replace("^", r"\^")):
        parse(text)


def test_selector_matches_by_the_hash_of_the_field() -> None:
    """An object matches when the hash of its uid (or namespace) is in a range."""
    obj = {"metadata": {"uid": "u-1", "namespace": "team-a"}}
    h = hash_field("u-1")
    assert ShardSelector((ShardRange("object.metadata.uid", h, h + 1),)).matches(obj)
    assert not ShardSelector((ShardRange("object.metadata.uid", h + 1, HASH_SPACE),)).matches(obj)
    n = hash_field("team-a")
    assert ShardSelector((ShardRange(FIELD_NAMESPACE, n, n + 1),)).matches(obj)


def test_slots_partition_the_hash_space() -> None:
    """Slot ranges tile [0, 2**64) and slot_of finds the slot whose range holds a hash."""
    slots = 7
    bounds = [slot_bounds(s, slots) for s in range(slots)]
    assert bounds[0][0] == 0
    assert bounds[-1][1] == HASH_SPACE
    assert all(bounds[i][1] == bounds[i + 1][0] for i in range(slots - 1))
    rng = random.Random(5)
    for _ in range(500):
        h = rng.randrange(HASH_SPACE)
        start, end = bounds[slot_of(h, slots)]
        assert start <= h < end


def test_selector_for_slots_merges_neighbours() -> None:
    """Adjacent slots become one range; every slot is the whole space; none is None."""
    selector = selector_for_slots([0, 1, 3], 4)
    assert selector is not None
    assert [(r.start, r.end) for r in selector.ranges] == [
        (0, HASH_SPACE // 2),
        (3 * HASH_SPACE // 4, HASH_SPACE),
    ]
    whole = selector_for_slots(range(4), 4)
    assert whole is not None
    assert str(whole) == (
        "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"
    )
    assert selector_for_slots([], 4) is None


def test_a_slot_is_owned_only_while_valid_and_not_draining() -> None:
    """The held set follows the monotonic clock: a slot past its validity is not owned."""
    clock = FakeClock()
    assignment = SlotAssignment(4, clock=clock)
    changes: list[int] = []
    assignment.add_listener(lambda: changes.append(assignment.version))
    assignment.update({0: 5.0, 1: 10.0}, draining=[1])
    assert assignment.held() == {0}
    assert assignment.owns_slot(0)
    assert not assignment.owns_slot(1)
    assignment.update({0: 6.0, 1: 10.0}, draining=[1])  # a renewal: nobody is told
    assert changes == [1]
    clock.advance(6.0)
    assert not assignment.owns_slot(0)
    assert assignment.held() == frozenset()


def test_owner_filter_passes_children_of_owners_in_held_slots() -> None:
    """An owned object's event passes only if its controller owner's uid is held here."""
    assignment = SlotAssignment(2)
    mine, theirs = "owner-mine", "owner-theirs"
    while assignment.slot_of_value(mine) == assignment.slot_of_value(theirs):
        theirs += "x"
    assignment.update({assignment.slot_of_value(mine): float("inf")})

    def child(uid: str) -> V1ConfigMap:
        ref = V1OwnerReference(api_version="v1", kind="Widget", name="w", uid=uid, controller=True)
        return V1ConfigMap(metadata=V1ObjectMeta(name="c", namespace="d", owner_references=[ref]))

    keep = OwnerFilter(assignment)
    assert keep.create(CreateEvent(child(mine)))
    assert not keep.create(CreateEvent(child(theirs)))
    assert keep.update(UpdateEvent(child(theirs), child(mine)))
    assert keep.create(CreateEvent(V1ConfigMap(metadata=V1ObjectMeta(name="orphan"))))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "Bad_Name"}, "lowercase"),
        ({"name": "ok", "slots": 0}, "slots"),
        ({"name": "ok", "lease_duration": 5, "renew_deadline": 5}, "greater than renew_deadline"),
        ({"name": "ok", "renew_deadline": 2, "retry_period": 2}, "retry_period"),
    ],
)
def test_sharding_options_refuse_impossible_settings(
    kwargs: dict[str, object], message: str
) -> None:
    """ShardingOptions names the setting that cannot work."""
    with pytest.raises(ValueError, match=message):
        ShardingOptions(**kwargs)  # type: ignore[arg-type]
