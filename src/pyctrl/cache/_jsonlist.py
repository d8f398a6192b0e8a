"""An incremental decoder of Kubernetes list responses (``{"metadata": ..., "items": [...]}``).

A list answered in one response (``resourceVersion=0``, from the API server's watch
cache) can hold every object of a type. Decoding it whole holds the body and every
decoded object at once; `ListDecoder` is fed the body chunk by chunk as it arrives and
hands back each item as soon as it is complete, keeping only the undecoded tail of the
body. The envelope's other members (``metadata``) are kept; their order does not matter.

Items are decoded by orjson, as fast as the whole body would be: the decoder looks for
the end of an item as a ``}`` followed by ``,`` or ``]`` where the item's braces balance,
and hands that slice to `orjson.loads`. A JSON object ends where its parse ends, so a
slice that parses is the whole item. A slice that does not (a brace inside a string
miscounted, a number orjson does not take) is decoded by the standard library's decoder
instead, which also names what is wrong with a malformed body.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["ListDecoder", "MalformedListError"]

_WS = re.compile(rb"[ \t\n\r]*")
# Where an item may end: a closing brace followed by the comma or bracket after the item.
_CLOSE = re.compile(rb"\}[ \t\n\r]*[,\]]")
# States: where the decoder stands in the envelope.
_START, _MEMBERS, _AFTER_MEMBER, _ITEMS, _AFTER_ITEM, _END = range(6)
_FIRST = 1 << 3  # flag: the first member / item (no comma before it)
_OPEN_BRACE, _COMMA = ord("{"), ord(",")
_BLANK = b" \t\n\r"
# An item whose braces have not balanced after this many bytes has braces in its strings:
# the standard decoder takes it (no object the API server stores is this large).
_FAST_LIMIT = 8 << 20
_WINDOW = 1 << 16  # bytes the standard decoder is first given for one value


class MalformedListError(ValueError):
    """The list response is not a JSON object with an ``items`` array of objects."""


class _MoreError(Exception):
    """The buffer ends before the next token does: wait for more data."""


class ListDecoder:
    """Feed it a list response's bytes; it returns the items decoded so far.

    Args:
        what: What is listed, for error messages (``example.com/v1/Item``).
    """

    def __init__(self, what: str) -> None:
        self._what = what
        self._json = json.JSONDecoder()
        self._buffer = bytearray()
        self._pos = 0
        self._consumed = 0  # bytes dropped from the buffer's front
        self._state = _START
        self._final = False
        # The item being read: bytes scanned from its start, and its braces' balance.
        self._scanned = 0
        self._balance = 0
        self._last = 0  # the size of the last item found by the quick search
        self.metadata: dict[str, Any] = {}
        """The list's ``metadata`` once it has been read (it usually comes first)."""
        self.items_seen = 0
        """How many items were decoded so far."""

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """Add the next bytes of the body; return the items they completed."""
        self._consumed += self._pos
        del self._buffer[: self._pos]
        self._buffer += chunk
        self._pos = 0
        return self._run()

    def close(self) -> list[dict[str, Any]]:
        """The body has ended: return the last items; raise if the list is incomplete."""
        self._final = True
        items = self._run()
        if self._state != _END:
            raise self._error(len(self._buffer), "the list ends before its closing '}'")
        return items

    def _run(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        try:
            while self._step(out):
                pass
        except _MoreError:
            if self._final:
                raise self._error(len(self._buffer), "the list ends early") from None
        return out

    def _error(self, pos: int, message: str) -> MalformedListError:
        return MalformedListError(
            f"malformed list of {self._what} at byte {self._consumed + pos}: {message}"
        )

    def _skip(self, pos: int) -> int:
        if pos < len(self._buffer) and self._buffer[pos] not in _BLANK:
            return pos
        end = _WS.match(self._buffer, pos)
        pos = end.end() if end is not None else pos
        if pos >= len(self._buffer):
            raise _MoreError
        return pos

    def _text(self, pos: int, size: int) -> str:
        """Up to ``size`` bytes from ``pos`` as text, less a UTF-8 character cut at the end."""
        raw = bytes(self._buffer[pos : pos + size])
        try:
            return raw.decode()
        except UnicodeDecodeError as exc:
            if exc.end == len(raw) and exc.reason == "unexpected end of data":
                return raw[: exc.start].decode()
            raise self._error(pos + exc.start, f"not UTF-8 ({exc.reason})") from None

    def _value(self, pos: int) -> tuple[Any, int]:
        """Decode the JSON value at ``pos``; the character after it must be buffered too."""
        size = _WINDOW
        while True:
            text = self._text(pos, size)
            try:
                value, end = self._json.raw_decode(text)
                break
            except json.JSONDecodeError as exc:
                if pos + size < len(self._buffer):
                    size *= 2  # the value may go on past what was decoded
                elif not self._final:
                    raise _MoreError from None
                else:
                    failed = pos + len(text[: exc.pos].encode())
                    raise self._error(failed, exc.msg) from None
        # A number cut by the chunk's end decodes as a shorter number: wait for what follows.
        return value, self._skip(pos + len(text[:end].encode()))

    def _item(self, pos: int) -> tuple[Any, int]:
        """Decode the item at ``pos``: orjson on the slice up to its closing brace."""
        buffer = self._buffer
        if buffer[pos] != _OPEN_BRACE:
            return self._value(pos)
        # An API server's items all begin alike ('{"metadata":' or '{"apiVersion":'):
        # the likely end of this one is where the next begins.
        # The search is bounded by the size of the items seen so far, so that a list whose
        # items begin differently is not searched to its end for each item.
        colon = buffer.find(b":", pos, pos + 64)
        limit = pos + max(_WINDOW, 8 * self._last)
        end = buffer.find(b"}," + buffer[pos : colon + 1], pos, limit) + 1 if colon > 0 else 0
        if end and buffer.count(b"{", pos, end) == buffer.count(b"}", pos, end):
            try:
                item = orjson.loads(buffer[pos:end])
            except orjson.JSONDecodeError:
                pass
            else:
                self._last = end - pos
                return item, end
        return self._scan(pos)

    def _scan(self, pos: int) -> tuple[Any, int]:
        """Find the item's end brace by brace, resuming where the last chunk ended."""
        buffer = self._buffer
        scanned, balance = pos + self._scanned, self._balance
        for close in _CLOSE.finditer(buffer, scanned):
            end = close.start() + 1
            balance += buffer.count(b"{", scanned, end) - buffer.count(b"}", scanned, end)
            scanned = end
            if balance > 0 and end - pos < _FAST_LIMIT:
                continue
            if balance == 0:
                try:
                    return orjson.loads(buffer[pos:end]), end
                except orjson.JSONDecodeError:
                    pass
            return self._value(pos)  # braces in strings, or what orjson refuses
        self._scanned, self._balance = scanned - pos, balance
        if self._final:
            return self._value(pos)
        raise _MoreError

    def _expect(self, pos: int, allowed: bytes, what: str) -> int:
        char = self._buffer[pos]
        if char not in allowed:
            raise self._error(pos, f"expected {what}, found {chr(char)!r}")
        return char

    def _step(self, out: list[dict[str, Any]]) -> bool:  # noqa: PLR0911 - one branch per state
        state = self._state
        if state == _END:
            blank = _WS.match(self._buffer, self._pos)
            if blank is not None and blank.end() < len(self._buffer):
                raise self._error(blank.end(), "data after the list")
            return False
        pos = self._skip(self._pos)
        if state == _START:
            self._expect(pos, b"{", "a JSON object")
            return self._commit(pos + 1, _MEMBERS | _FIRST)
        if state & ~_FIRST == _MEMBERS:
            return self._member(pos, first=bool(state & _FIRST))
        if state == _AFTER_MEMBER:
            char = self._expect(pos, b",}", "',' or '}' after a member")
            return self._commit(pos + 1, _MEMBERS if char == ord(",") else _END)
        if state & ~_FIRST == _ITEMS:
            if state & _FIRST and self._buffer[pos] == ord("]"):
                return self._commit(pos + 1, _AFTER_MEMBER)
            return self._items(pos, out)
        char = self._expect(pos, b",]", "',' or ']' after an item")
        return self._commit(pos + 1, _ITEMS if char == ord(",") else _AFTER_MEMBER)

    def _items(self, pos: int, out: list[dict[str, Any]]) -> bool:
        """Decode items from ``pos`` for as long as commas follow them."""
        buffer = self._buffer
        while True:
            item, end = self._item(pos)
            if not isinstance(item, dict):
                raise self._error(pos, f"an item is a {type(item).__name__}, not an object")
            out.append(item)
            self.items_seen += 1
            self._scanned = self._balance = 0
            if end >= len(buffer) or buffer[end] != _COMMA:
                return self._commit(end, _AFTER_ITEM)
            self._commit(end + 1, _ITEMS)
            pos = self._skip(end + 1)

    def _member(self, pos: int, *, first: bool) -> bool:
        buffer = self._buffer
        if first and buffer[pos] == ord("}"):
            return self._commit(pos + 1, _END)
        self._expect(pos, b'"', "a member name")
        key, colon = self._value(pos)
        self._expect(colon, b":", "':' after a member name")
        start = self._skip(colon + 1)
        if key == "items":
            if buffer[start] == ord("n") and len(buffer) < start + 4 and not self._final:
                raise _MoreError
            if buffer.startswith(b"null", start):
                return self._commit(start + 4, _AFTER_MEMBER)
            self._expect(start, b"[", "an array of items")
            return self._commit(start + 1, _ITEMS | _FIRST)
        value, end = self._value(start)
        if key == "metadata":
            if not isinstance(value, dict):
                raise self._error(start, "metadata is not an object")
            self.metadata = value
        return self._commit(end, _AFTER_MEMBER)

    def _commit(self, pos: int, state: int) -> bool:
        self._pos, self._state = pos, state
        return True
