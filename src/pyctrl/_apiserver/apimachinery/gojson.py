"""Go's ``encoding/json`` error text, as kube-apiserver's decoders report it.

kube-apiserver finds the kind of a request body with ``json.Unmarshal`` into a small
struct (apimachinery's ``SimpleMetaFactory.Interpret``), so a body that is not JSON is
refused with Go's scanner error (``invalid character 'x' looking for beginning of
value``, ``unexpected end of JSON input``), and JSON that is not an object with Go's
``UnmarshalTypeError``. `syntax_error` runs a port of Go's scanner state machine
(``encoding/json/scanner.go``) and returns the first error it reports; `kind_type_error`
is the error of a JSON value that is not an object.
"""

from __future__ import annotations

from collections.abc import Callable

from pyctrl._apimachinery.gofmt import quote_char

__all__ = ["kind_type_error", "syntax_error"]

_SPACE = frozenset(b" \t\r\n")
_DIGITS = frozenset(b"0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES = frozenset(b'bfnrt\\/"')

# The anonymous struct Interpret decodes into, as Go's reflect prints its type.
_FIND_KIND = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)

_OBJECT_KEY, _OBJECT_VALUE, _ARRAY_VALUE = 0, 1, 2


class _SyntaxError(Exception):
    pass


_Step = Callable[[int], None]


class _Scanner:
    """A port of Go's ``encoding/json`` scanner: one step function per state."""

    def __init__(self) -> None:
        self.step: _Step = self.begin_value
        self.parse: list[int] = []
        self.end_top = False

    @staticmethod
    def fail(c: int, context: str) -> None:
        raise _SyntaxError(f"invalid character {quote_char(c)} {context}")

    def begin_value_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x5D:  # ]
            self.end_value(c)
            return
        self.begin_value(c)

    def begin_value(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x7B:  # {
            self.step = self.begin_string_or_empty
            self.parse.append(_OBJECT_KEY)
        elif c == 0x5B:  # [
            self.step = self.begin_value_or_empty
            self.parse.append(_ARRAY_VALUE)
        elif c == 0x22:
            self.step = self.in_string
        elif c == 0x2D:  # -
            self.step = self.neg
        elif c == 0x30:
            self.step = self.zero
        elif 0x31 <= c <= 0x39:
            self.step = self.one
        elif c in (0x74, 0x66, 0x6E):  # t f n
            word = {0x74: b"true", 0x66: b"false", 0x6E: b"null"}[c]
            self.step = self._literal(word, 1)
        else:
            self.fail(c, "looking for beginning of value")

    def begin_string_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x7D:  # }
            self.parse[-1] = _OBJECT_VALUE
            self.end_value(c)
            return
        self.begin_string(c)

    def begin_string(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x22:
            self.step = self.in_string
            return
        self.fail(c, "looking for beginning of object key string")

    def end_value(self, c: int) -> None:  # noqa: PLR0911 - encoding/json's scanner stateEndValue, one return per parse state
        if not self.parse:
            self.step = self.end_top_step
            self.end_top = True
            self.end_top_step(c)
            return
        if c in _SPACE:
            self.step = self.end_value
            return
        state = self.parse[-1]
        if state == _OBJECT_KEY:
            if c == 0x3A:  # :
                self.parse[-1] = _OBJECT_VALUE
                self.step = self.begin_value
                return
            self.fail(c, "after object key")
        elif state == _OBJECT_VALUE:
            if c == 0x2C:  # ,
                self.parse[-1] = _OBJECT_KEY
                self.step = self.begin_string
                return
            if c == 0x7D:
                self.pop()
                return
            self.fail(c, "after object key:value pair")
        else:
            if c == 0x2C:
                self.step = self.begin_value
                return
            if c == 0x5D:
                self.pop()
                return
            self.fail(c, "after array element")

    def pop(self) -> None:
        self.parse.pop()
        if not self.parse:
            self.step = self.end_top_step
            self.end_top = True
        else:
            self.step = self.end_value

    def end_top_step(self, c: int) -> None:
        if c not in _SPACE:
            self.fail(c, "after top-level value")

    def in_string(self, c: int) -> None:
        if c == 0x22:
            self.step = self.end_value
        elif c == 0x5C:
            self.step = self.in_string_escape
        elif c < 0x20:
            self.fail(c, "in string literal")

    def in_string_escape(self, c: int) -> None:
        if c in _ESCAPES:
            self.step = self.in_string
        elif c == 0x75:  # u
            self.step = self._hex(4)
        else:
            self.fail(c, "in string escape code")

    def _hex(self, left: int) -> _Step:
        def step(c: int) -> None:
            if c not in _HEX:
                self.fail(c, "in \\u hexadecimal character escape")
            self.step = self.in_string if left == 1 else self._hex(left - 1)

        return step

    def _literal(self, word: bytes, index: int) -> _Step:
        def step(c: int) -> None:
            expected = word[index]
            if c != expected:
                name = word.decode()
                self.fail(c, f"in literal {name} (expecting {quote_char(expected)})")
            self.step = self.end_value if index + 1 == len(word) else self._literal(word, index + 1)

        return step

    def neg(self, c: int) -> None:
        if c == 0x30:
            self.step = self.zero
        elif 0x31 <= c <= 0x39:
            self.step = self.one
        else:
            self.fail(c, "in numeric literal")

    def one(self, c: int) -> None:
        if c in _DIGITS:
            return
        self.zero(c)

    def zero(self, c: int) -> None:
        if c == 0x2E:  # .
            self.step = self.dot
        elif c in (0x65, 0x45):  # e E
            self.step = self.exponent
        else:
            self.end_value(c)

    def dot(self, c: int) -> None:
        if c in _DIGITS:
            self.step = self.dot_digits
            return
        self.fail(c, "after decimal point in numeric literal")

    def dot_digits(self, c: int) -> None:
        if c in _DIGITS:
            return
        if c in (0x65, 0x45):
            self.step = self.exponent
            return
        self.end_value(c)

    def exponent(self, c: int) -> None:
        if c in (0x2B, 0x2D):  # + -
            self.step = self.exponent_sign
            return
        self.exponent_sign(c)

    def exponent_sign(self, c: int) -> None:
        if c in _DIGITS:
            self.step = self.exponent_digits
            return
        self.fail(c, "in exponent of numeric literal")

    def exponent_digits(self, c: int) -> None:
        if c not in _DIGITS:
            self.end_value(c)


def syntax_error(data: bytes) -> str | None:
    """The first error Go's JSON scanner reports for ``data``, None when it is valid JSON."""
    scanner = _Scanner()
    try:
        for c in data:
            scanner.step(c)
        if scanner.end_top:
            return None
        # Go's scanner.eof: a final space ends a pending number or literal.
        scanner.step(0x20)
    except _SyntaxError as exc:
        return str(exc)
    return None if scanner.end_top else "unexpected end of JSON input"


def kind_type_error(value: object) -> str | None:
    """Go's error unmarshalling a JSON value that is not an object into Interpret's struct.

    None for an object or null (which leave the struct empty).
    """
    if value is None or isinstance(value, dict):
        return None
    if isinstance(value, bool):
        what = "bool"
    elif isinstance(value, (int, float)):
        what = "number"
    elif isinstance(value, str):
        what = "string"
    else:
        what = "array"
    return f"json: cannot unmarshal {what} into Go value of type {_FIND_KIND}"
