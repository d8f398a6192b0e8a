"""An incremental decoder of Kubernetes list responses (``{"metadata": ..., "items": [...]}``).

A list answered in one response (``resourceVersion=0``, from the API server's watch
cache) can hold every object of a type. Decoding it whole holds the body and every
decoded object at once; `ListDecoder` is fed the body chunk by chunk as it arrives and
hands back each item as soon as it is complete, keeping only the undecoded tail of the
body. The envelope's other members (``metadata``) are kept; their order does not matter.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

__all__ = ["ListDecoder", "MalformedListError"]

_WS = re.compile(r"[ \t\n\r]*")
# States: where the decoder stands in the envelope.
_START, _MEMBERS, _AFTER_MEMBER, _ITEMS, _AFTER_ITEM, _END = range(6)
_FIRST = 1 << 3  # flag: the first member / item (no comma before it)


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
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._json = json.JSONDecoder()
        self._buffer = ""
        self._pos = 0
        self._consumed = 0  # characters dropped from the buffer's front
        self._state = _START
        self._final = False
        self.metadata: dict[str, Any] = {}
        """The list's ``metadata`` once it has been read (it usually comes first)."""
        self.items_seen = 0
        """How many items were decoded so far."""

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        """Add the next bytes of the body; return the items they completed."""
        try:
            text = self._utf8.decode(chunk)
        except UnicodeDecodeError as exc:
            raise self._error(len(self._buffer), f"not UTF-8 ({exc.reason})") from None
        self._consumed += self._pos
        self._buffer = self._buffer[self._pos :] + text
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
            f"malformed list of {self._what} at character {self._consumed + pos}: {message}"
        )

    def _skip(self, pos: int) -> int:
        end = _WS.match(self._buffer, pos)
        pos = end.end() if end is not None else pos
        if pos >= len(self._buffer):
            raise _MoreError
        return pos

    def _value(self, pos: int) -> tuple[Any, int]:
        """Decode the JSON value at ``pos``; the character after it must be buffered too."""
        try:
            value, end = self._json.raw_decode(self._buffer, pos)
        except json.JSONDecodeError as exc:
            if not self._final:
                raise _MoreError from None
            raise self._error(exc.pos, exc.msg) from None
        # A number cut by the chunk's end decodes as a shorter number: wait for what follows.
        return value, self._skip(end)

    def _expect(self, pos: int, allowed: str, what: str) -> str:
        char = self._buffer[pos]
        if char not in allowed:
            raise self._error(pos, f"expected {what}, found {char!r}")
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
            self._expect(pos, "{", "a JSON object")
            return self._commit(pos + 1, _MEMBERS | _FIRST)
        if state & ~_FIRST == _MEMBERS:
            return self._member(pos, first=bool(state & _FIRST))
        if state == _AFTER_MEMBER:
            char = self._expect(pos, ",}", "',' or '}' after a member")
            return self._commit(pos + 1, _MEMBERS if char == "," else _END)
        if state & ~_FIRST == _ITEMS:
            if state & _FIRST and self._buffer[pos] == "]":
                return self._commit(pos + 1, _AFTER_MEMBER)
            item, end = self._value(pos)
            if not isinstance(item, dict):
                raise self._error(pos, f"an item is a {type(item).__name__}, not an object")
            out.append(item)
            self.items_seen += 1
            return self._commit(end, _AFTER_ITEM)
        char = self._expect(pos, ",]", "',' or ']' after an item")
        return self._commit(pos + 1, _ITEMS if char == "," else _AFTER_MEMBER)

    def _member(self, pos: int, *, first: bool) -> bool:
        if first and self._buffer[pos] == "}":
            return self._commit(pos + 1, _END)
        self._expect(pos, '"', "a member name")
        key, colon = self._value(pos)
        self._expect(colon, ":", "':' after a member name")
        start = self._skip(colon + 1)
        if key == "items":
            if self._buffer[start] == "n" and len(self._buffer) < start + 4 and not self._final:
                raise _MoreError
            if self._buffer.startswith("null", start):
                return self._commit(start + 4, _AFTER_MEMBER)
            self._expect(start, "[", "an array of items")
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
