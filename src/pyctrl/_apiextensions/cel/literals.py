"""CEL literals: the value and type of a literal token (cel-go's ``parser/unescape.go``)."""

from __future__ import annotations

from typing import Any, Final

from lark import Token

from pyctrl._apiextensions.cel.types import BOOL, BYTES, DOUBLE, INT, NULL, STRING, UINT, T
from pyctrl._apiextensions.cel.values import INT64_MAX, INT64_MIN, UINT64_MAX, Uint

__all__ = ["literal", "tok"]


def tok(node: Any) -> Token:
    """``node`` as a lexer token.

    Raises:
        TypeError: it is a parse tree, not a token.
    """
    if not isinstance(node, Token):
        raise TypeError(f"expected a token, got {node!r}")
    return node


def literal(token: Token) -> tuple[Any, T]:
    """The value and CEL type of a literal token.

    Raises:
        ValueError: an int or uint out of range, or an invalid escape sequence.
    """
    text = str(token)
    kind = token.type
    value: Any
    if kind == "INT_LIT":
        value = (
            int(text, 16) * (-1 if text.startswith("-") else 1)
            if "x" in text.lower()
            else int(text)
        )
        if "x" in text.lower():
            value = int(text.lstrip("-"), 16) * (-1 if text.startswith("-") else 1)
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"invalid int literal: {text}")
        t = INT
    elif kind == "UINT_LIT":
        digits = text[:-1]
        value = Uint(int(digits, 16) if "x" in digits.lower() else int(digits))
        if value > UINT64_MAX:
            raise ValueError(f"invalid uint literal: {text}")
        t = UINT
    elif kind == "FLOAT_LIT":
        value = float(text)
        t = DOUBLE
    elif kind in ("STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"):
        value = _unquote(text)
        t = BYTES if isinstance(value, bytes) else STRING
    elif kind == "BOOL_LIT":
        value = text == "true"
        t = BOOL
    else:
        value = None
        t = NULL
    return value, t


_STRING_ESCAPES: Final = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    '"': '"',
    "'": "'",
    "\\": "\\",
    "`": "`",
    "?": "?",
}


def _unquote(text: str) -> str | bytes:
    is_bytes = text[:1] in "bB"
    if is_bytes:
        text = text[1:]
    raw = text[:1] in "rR"
    if raw:
        text = text[1:]
    quote = text[:3] if text[:3] in ('"""', "'''") else text[:1]
    body = text[len(quote) : len(text) - len(quote)]
    if raw:
        return body.encode() if is_bytes else body
    out: list[str] = []
    out_bytes = bytearray()

    def emit(ch: str, byte: int | None = None) -> None:
        if is_bytes:
            if byte is not None:
                out_bytes.append(byte)
            else:
                out_bytes.extend(ch.encode())
        else:
            out.append(ch)

    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            emit(ch)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in _STRING_ESCAPES:
            emit(_STRING_ESCAPES[nxt])
            i += 2
        elif nxt in "xX":
            value = int(body[i + 2 : i + 4], 16)
            emit(chr(value), value)
            i += 4
        elif nxt == "u":
            emit(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif nxt == "U":
            emit(chr(int(body[i + 2 : i + 10], 16)))
            i += 10
        elif nxt in "01234567":
            value = int(body[i + 1 : i + 4], 8)
            emit(chr(value), value)
            i += 4
        else:
            raise ValueError(f"invalid escape sequence \\{nxt}")
    return bytes(out_bytes) if is_bytes else "".join(out)
