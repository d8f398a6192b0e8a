"""Shard selectors (KEP-5866): hash ranges over an object's uid or namespace.

Kubernetes 1.36 added server-side sharded list and watch (alpha, feature gate
``ShardedListAndWatch``). A list or watch may carry a ``shardSelector`` such as::

    shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')

and the API server then sends only the objects whose 64-bit FNV-1a hash of that field's
string falls in ``[start, end)``. Ranges may be OR-ed with ``||``; every range must hash
the same field (``object.metadata.uid`` or ``object.metadata.namespace``); bounds are
``'0x'`` and exactly 16 lowercase hex digits, except the exclusive upper bound of the
whole space, ``'0x10000000000000000'`` (2**64). A server that applied the selector
echoes it in the list's ``metadata.shardInfo.selector``; one that does not (older
servers, gate off) ignores the parameter, and the client must filter by itself.

This module is pyctrl's ``k8s.io/apimachinery/pkg/sharding`` and
``k8s.io/apiserver/pkg/sharding``: `hash_field`, `ShardRange`, `ShardSelector`
(`ShardSelector.matches`, and ``str()`` for the wire form), `parse` with the API
server's error texts, and the slot arithmetic pyctrl's sharded controllers use: the
hash space is cut into a fixed number of equal *slots*; `slot_of` says which slot a
hash falls in and `selector_for_slots` builds the selector for a set of slots (adjacent
slots merged into one range). `SlotAssignment` is the live set of slots one replica
holds, read by its informers and controllers (see `pyctrl.shardelection`).
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyctrl.clock import Clock, RealClock

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = [
    "FIELD_NAMESPACE",
    "FIELD_UID",
    "HASH_SPACE",
    "ShardRange",
    "ShardSelector",
    "ShardSelectorError",
    "SlotAssignment",
    "field_value",
    "hash_field",
    "parse",
    "selector_for_slots",
    "slot_bounds",
    "slot_of",
]

FIELD_UID = "object.metadata.uid"
"""Shard on the object's uid: each object lands in one shard on its own."""
FIELD_NAMESPACE = "object.metadata.namespace"
"""Shard on the namespace: a namespace's objects all land in the same shard."""
HASH_SPACE = 1 << 64
"""The size of the hash space; also the largest exclusive end bound."""

_FIELDS = (FIELD_UID, FIELD_NAMESPACE)
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = HASH_SPACE - 1
_FULL_END = "0x10000000000000000"


class ShardSelectorError(ValueError):
    """A shard selector could not be parsed; the message says what was wrong."""


def hash_field(value: str) -> int:
    """The 64-bit FNV-1a hash of ``value``'s UTF-8 bytes (Go's ``hash/fnv.New64a``)."""
    h = _FNV_OFFSET
    for byte in value.encode():
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


def field_value(obj: Mapping[str, Any], field: str) -> str:
    """The string a selector hashes for ``obj`` (decoded JSON): its uid or its namespace.

    Raises:
        ShardSelectorError: ``field`` is not a supported field path.
    """
    metadata = obj.get("metadata") or {}
    if field == FIELD_UID:
        return str(metadata.get("uid") or "")
    if field == FIELD_NAMESPACE:
        return str(metadata.get("namespace") or "")
    raise ShardSelectorError(f"unsupported field path: {_q(field)}")


def _q(text: str) -> str:
    """Go's ``%q``: a double-quoted string."""
    return json.dumps(text)


def _hex(value: int) -> str:
    return _FULL_END if value == HASH_SPACE else f"0x{value:016x}"


@dataclass(frozen=True, slots=True)
class ShardRange:
    """One ``shardRange(field, start, end)``: hashes in ``[start, end)``.

    Attributes:
        field: ``object.metadata.uid`` or ``object.metadata.namespace``.
        start: Inclusive lower bound.
        end: Exclusive upper bound (at most 2**64).
    """

    field: str
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.field not in _FIELDS:
            raise ShardSelectorError(
                f"unsupported field path {_q(self.field)}; supported: {', '.join(_FIELDS)}"
            )
        if not 0 <= self.start < self.end <= HASH_SPACE:
            raise ShardSelectorError(
                f"shard range start {_hex(self.start)} must be less than end {_hex(self.end)}"
            )

    def contains(self, hash_: int) -> bool:
        """Whether ``hash_`` falls in the range."""
        return self.start <= hash_ < self.end

    def __str__(self) -> str:
        return f"shardRange({self.field}, '{_hex(self.start)}', '{_hex(self.end)}')"


@dataclass(frozen=True, slots=True)
class ShardSelector:
    """Ranges OR-ed together, all over the same field (non-empty).

    ``str()`` gives the wire form, which `parse` reads back.
    """

    ranges: tuple[ShardRange, ...]

    def __post_init__(self) -> None:
        if not self.ranges:
            raise ShardSelectorError(
                "empty shard selector is not allowed; omit the parameter for unfiltered lists"
            )
        first = self.ranges[0].field
        for other in self.ranges[1:]:
            if other.field != first:
                raise ShardSelectorError(
                    f"all shard ranges must use the same field, got {_q(first)} and "
                    f"{_q(other.field)}"
                )

    @property
    def field(self) -> str:
        """The field every range hashes."""
        return self.ranges[0].field

    def matches_hash(self, hash_: int) -> bool:
        """Whether ``hash_`` falls in one of the ranges."""
        return any(r.start <= hash_ < r.end for r in self.ranges)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` (decoded JSON) is in the shard."""
        return self.matches_hash(hash_field(field_value(obj, self.field)))

    def __str__(self) -> str:
        return " || ".join(str(r) for r in self.ranges)


# parsing ------------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<or>\|\|) | (?P<and>&&) | (?P<lparen>\() | (?P<rparen>\)) | (?P<comma>,)
      | (?P<dot>\.)
      | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<number>\d+(?:\.\d+)?)
      | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<other>\S)
    )""",
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _tokens(expr: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None or m.end() == pos:
            break
        kind = m.lastgroup or "other"
        if kind == "other":
            raise ShardSelectorError(
                f"CEL parse error: Syntax error: token recognition error at: '{m.group(kind)}'"
            )
        out.append(_Tok(kind, m.group(kind), m.start(kind)))
        pos = m.end()
    return out


# The AST: ("call", name, args) | ("path", "a.b.c") | ("literal", kind, value)
_Node = tuple[Any, ...]


class _Parser:
    """A parser for the part of CEL a shard selector may use.

    kube-apiserver parses the expression with cel-go and then walks the tree; this parser
    builds the same tree for calls, ``||``, ``&&``, field selections and literals, and
    leaves the judging to the same walk.
    """

    def __init__(self, expr: str) -> None:
        self.toks = _tokens(expr)
        self.i = 0

    def peek(self, kind: str) -> bool:
        return self.i < len(self.toks) and self.toks[self.i].kind == kind

    def take(self, kind: str, what: str) -> _Tok:
        if not self.peek(kind):
            got = self.toks[self.i].text if self.i < len(self.toks) else "<EOF>"
            raise ShardSelectorError(
                f"CEL parse error: Syntax error: mismatched input '{got}' expecting {what}"
            )
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def parse(self) -> _Node:
        node = self.disjunction()
        if self.i < len(self.toks):
            raise ShardSelectorError(
                f"CEL parse error: Syntax error: extraneous input '{self.toks[self.i].text}' "
                "expecting <EOF>"
            )
        return node

    def disjunction(self) -> _Node:
        node = self.conjunction()
        while self.peek("or"):
            self.i += 1
            node = ("call", "_||_", (node, self.conjunction()))
        return node

    def conjunction(self) -> _Node:
        node = self.primary()
        while self.peek("and"):
            self.i += 1
            node = ("call", "_&&_", (node, self.primary()))
        return node

    def primary(self) -> _Node:
        if self.peek("lparen"):
            self.i += 1
            node = self.disjunction()
            self.take("rparen", "')'")
            return node
        if self.peek("string"):
            return ("literal", "string", _unquote(self.take("string", "a string").text))
        if self.peek("number"):
            return ("literal", "number", self.take("number", "a number").text)
        name = self.take("ident", "an expression").text
        if self.peek("lparen"):
            self.i += 1
            args: list[_Node] = []
            if not self.peek("rparen"):
                args.append(self.disjunction())
                while self.peek("comma"):
                    self.i += 1
                    args.append(self.disjunction())
            self.take("rparen", "')'")
            return ("call", name, tuple(args))
        path = name
        while self.peek("dot"):
            self.i += 1
            path += "." + self.take("ident", "a field name").text
        return ("path", path)


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


_KIND_NAMES = {"call": "call", "path": "select", "literal": "literal"}


def _walk(node: _Node) -> list[ShardRange]:
    if node[0] != "call":
        raise ShardSelectorError(
            f"unexpected expression kind {_KIND_NAMES[node[0]]}; "
            "expected shardRange() call or || operator"
        )
    name, args = node[1], node[2]
    if name == "_||_":
        return _walk(args[0]) + _walk(args[1])
    if name != "shardRange":
        raise ShardSelectorError(
            f'unsupported function "{name}"; only shardRange() and || are allowed'
        )
    if len(args) != 3:
        raise ShardSelectorError(f"shardRange() requires exactly 3 arguments, got {len(args)}")
    if args[0][0] != "path":
        raise ShardSelectorError(
            "shardRange() first argument: expected field path (e.g. object.metadata.uid), "
            f"got expression kind {_KIND_NAMES[args[0][0]]}"
        )
    field = args[0][1]
    if field not in _FIELDS:
        raise ShardSelectorError(
            f'unsupported field path "{field}"; supported: {", ".join(_FIELDS)}'
        )
    start, start_text = _hex_literal(args[1], "hexStart")
    end, end_text = _hex_literal(args[2], "hexEnd")
    if not start < end:
        raise ShardSelectorError(f"shard range start {start_text} must be less than end {end_text}")
    return [ShardRange(field, start, end)]


def _hex_literal(node: _Node, name: str) -> tuple[int, str]:
    if node[0] != "literal":
        raise ShardSelectorError(
            f"{name} must be a string literal (e.g. '0xff'), got expression kind "
            f"{_KIND_NAMES[node[0]]}"
        )
    if node[1] != "string":
        raise ShardSelectorError(f"{name} must be a string literal, got {node[1]}")
    text: str = node[2]
    if not text.startswith("0x"):
        raise ShardSelectorError(f"{name} must have '0x' prefix, got \"{text}\"")
    digits = text[2:]
    if not digits:
        raise ShardSelectorError(f"{name}: hex value is required after '0x'")
    if len(digits) > 17:
        raise ShardSelectorError(
            f'{name}: hex value too long ({len(digits)} chars, max 17): "{digits}"'
        )
    for c in digits:
        if not ("0" <= c <= "9" or "a" <= c <= "f"):
            raise ShardSelectorError(f'{name}: invalid hex character "{c}" in "{text}"')
    if len(digits) == 17:
        if text != _FULL_END:
            raise ShardSelectorError(
                f"{name}: 17-digit hex value must be '{_FULL_END}' (2^64), got \"{text}\""
            )
    elif len(digits) != 16:
        padded = "0x" + "0" * (16 - len(digits)) + digits
        raise ShardSelectorError(
            f'{name} must be a 0x-prefixed 16-digit hex value, got "{text}" '
            f'(did you mean "{padded}"?)'
        )
    return int(digits, 16), text


def parse(expr: str) -> ShardSelector:
    """Parse a ``shardSelector`` as kube-apiserver does (``apiserver/pkg/sharding.Parse``).

    Raises:
        ShardSelectorError: the expression is empty, is not ``shardRange()`` calls joined
            by ``||``, names an unsupported field, mixes fields, or has a malformed or
            empty range. The message is the API server's.
    """
    expr = expr.strip()
    if not expr:
        raise ShardSelectorError(
            "empty shard selector is not allowed; omit the parameter for unfiltered lists"
        )
    return ShardSelector(tuple(_walk(_Parser(expr).parse())))


# slots --------------------------------------------------------------------------------------


def slot_bounds(slot: int, slots: int) -> tuple[int, int]:
    """The hash range ``[start, end)`` of ``slot`` when the space is cut into ``slots``."""
    if not 0 <= slot < slots:
        raise ValueError(f"slot {slot} is outside 0..{slots - 1}")
    return slot * HASH_SPACE // slots, (slot + 1) * HASH_SPACE // slots


def _starts(slots: int) -> list[int]:
    return [slot * HASH_SPACE // slots for slot in range(slots)]


def slot_of(hash_: int, slots: int) -> int:
    """The slot ``hash_`` falls in."""
    return bisect.bisect_right(_starts(slots), hash_) - 1


def selector_for_slots(
    held: Iterable[int], slots: int, field: str = FIELD_UID
) -> ShardSelector | None:
    """The selector matching exactly the ``held`` slots (None for none of them).

    Adjacent slots become one range, so a replica holding every slot sends one range.
    """
    ranges: list[ShardRange] = []
    for slot in sorted(set(held)):
        start, end = slot_bounds(slot, slots)
        if ranges and ranges[-1].end == start:
            ranges[-1] = ShardRange(field, ranges[-1].start, end)
        else:
            ranges.append(ShardRange(field, start, end))
    return ShardSelector(tuple(ranges)) if ranges else None


class SlotAssignment:
    """The slots one replica may work on now: written by its slot elector, read by the rest.

    A slot counts as held only while the Lease that holds it is valid by this process's
    monotonic clock (``valid_until``) and it is not being drained: reading the clock on
    every check means a paused process never acts on a slot after its Lease could have
    expired, even if the timer meant to take the slot away has not fired yet.

    Args:
        slots: How many slots the hash space is cut into.
        field: The field hashed (`FIELD_UID` by default).
        clock: The monotonic clock validity is measured on.
    """

    def __init__(self, slots: int = 64, *, field: str = FIELD_UID, clock: Clock | None = None):
        if not 1 <= slots <= 4096:
            raise ValueError(f"slots must be between 1 and 4096, got {slots}")
        if field not in _FIELDS:
            raise ShardSelectorError(
                f"unsupported field path {field!r}; supported: {', '.join(_FIELDS)}"
            )
        self.slots = slots
        self.field = field
        self.clock: Clock = clock or RealClock()
        self.version = 0
        """Increases whenever the set of held slots changes."""
        self._starts = _starts(slots)
        self._valid: dict[int, float] = {}
        self._held: frozenset[int] = frozenset()
        self._listeners: list[Callable[[], None]] = []

    # reading -------------------------------------------------------------------------------

    def held(self) -> frozenset[int]:
        """The slots held and valid right now."""
        now = self.clock.now()
        return frozenset(s for s in self._held if self._valid.get(s, 0.0) > now)

    def slot_of_value(self, value: str) -> int:
        """The slot of a field value (a uid or a namespace)."""
        return bisect.bisect_right(self._starts, hash_field(value)) - 1

    def slot_of(self, obj: Mapping[str, Any]) -> int:
        """The slot of an object (decoded JSON)."""
        return self.slot_of_value(field_value(obj, self.field))

    def owns_slot(self, slot: int) -> bool:
        """Whether ``slot`` is held, valid and not draining."""
        return slot in self._held and self._valid.get(slot, 0.0) > self.clock.now()

    def owns_value(self, value: str) -> bool:
        """Whether the object whose hashed field is ``value`` belongs to this replica now."""
        return self.owns_slot(self.slot_of_value(value))

    def owns(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj`` (decoded JSON) belongs to this replica now."""
        return self.owns_slot(self.slot_of(obj))

    def valid_until(self, slot: int) -> float:
        """The monotonic time until which ``slot`` may be worked on (0 if not held)."""
        return self._valid.get(slot, 0.0) if slot in self._held else 0.0

    def selector(self) -> ShardSelector | None:
        """The selector for the held slots, or None when none is held."""
        return selector_for_slots(self._held, self.slots, self.field)

    # writing -------------------------------------------------------------------------------

    def update(self, valid: Mapping[int, float], draining: Iterable[int] = ()) -> None:
        """Publish the slots held (slot to valid-until time), less those being drained.

        A slot whose validity has passed is not held. Listeners are called when the set
        of held slots changed; a renewal that only moves the validity forward calls
        nobody. The writer calls it again when a validity runs out.
        """
        out = set(draining)
        now = self.clock.now()
        self._valid = dict(valid)
        held = frozenset(s for s, until in valid.items() if s not in out and until > now)
        if held != self._held:
            self._held = held
            self.version += 1
            for listener in list(self._listeners):
                listener()

    def add_listener(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` whenever the held set changes; returns the remover."""
        self._listeners.append(listener)

        def remove() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return remove
