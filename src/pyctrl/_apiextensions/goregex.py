r"""Go (RE2) regular expressions on Python's ``re``.

Schemas' ``pattern`` and CEL's ``matches`` use RE2 syntax; `compile_go_regex` translates
the RE2-only parts (POSIX classes, ``\\p{...}`` Unicode classes, ``\\z``) and caches the result.
"""

from __future__ import annotations

import re
from typing import Final

# ---------------------------------------------------------------------------------------
# Regular expressions: Go RE2 syntax on Python's re.
# ---------------------------------------------------------------------------------------

_POSIX_CLASSES: Final = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}


# Unicode classes approximated by code point ranges (Python's re has no \p{...}).
_LETTERS: Final = (
    "A-Za-z\u00aa\u00b5\u00ba\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u03ff"
    "\u0400-\u052f\u0531-\u058f\u05d0-\u05ea\u0620-\u064a\u0900-\u0dff\u0e01-\u0e30"
    "\u1e00-\u1fff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3\uf900-\ufaff"
)
_UNICODE_CLASSES: Final = {
    "L": _LETTERS,
    "Lu": "A-Z\u00c0-\u00d6\u00d8-\u00de\u0391-\u03a9\u0410-\u042f",
    "Ll": "a-z\u00df-\u00f6\u00f8-\u00ff\u03b1-\u03c9\u0430-\u044f",
    "N": "0-9\u00b2\u00b3\u00b9\u00bc-\u00be\u0660-\u0669\u06f0-\u06f9\u0966-\u096f",
    "Nd": "0-9\u0660-\u0669\u06f0-\u06f9\u0966-\u096f\uff10-\uff19",
    "S": "$+<->^`|~\u00a2-\u00a9\u00ac\u00ae-\u00b1\u00b4\u00d7\u00f7\u2100-\u214f"
    "\u20a0-\u20cf\u2190-\u23ff\u2500-\u27bf\U0001f300-\U0001faff",
}


def _unicode_class_name(pattern: str, i: int) -> tuple[str, int]:
    """The name of the Unicode class escape at ``i`` (``pL`` or ``p{Name}``) and its length."""
    if pattern.startswith("{", i + 2):
        end = pattern.find("}", i + 3)
        if end < 0:
            return "", len(pattern) - i
        return pattern[i + 3 : end], end + 1 - i
    return pattern[i + 2 : i + 3], 3


class _RegexError(ValueError):
    """A pattern Go's regexp package would refuse."""


def _translate_escape(pattern: str, i: int, in_class: bool, out: list[str]) -> int:
    r"""Translate the escape at ``i`` (``\z``, ``\p{...}``...); the index after it."""
    if i + 1 >= len(pattern):
        raise _RegexError("trailing backslash at end of expression: ``")
    nxt = pattern[i + 1]
    if nxt.isdigit() and nxt != "0":
        raise _RegexError(f"invalid escape sequence: `\\{nxt}`")
    if nxt == "z":
        out.append("\\Z")
    elif nxt == "Z":
        raise _RegexError("invalid escape sequence: `\\Z`")
    elif nxt in "pP":
        name, length = _unicode_class_name(pattern, i)
        ranges = _UNICODE_CLASSES.get(name)
        if ranges is None:
            raise _RegexError(f"invalid character class range: `{pattern[i : i + length]}`")
        if nxt == "P" and in_class:
            raise _RegexError(
                f"unsupported negated class inside brackets: `{pattern[i : i + length]}`"
            )
        if in_class:
            out.append(ranges)
        else:
            out.append(f"[{'^' if nxt == 'P' else ''}{ranges}]")
        return i + length
    else:
        out.append(pattern[i : i + 2])
    return i + 2


def _translate_posix_class(pattern: str, i: int, out: list[str]) -> int | None:
    """Translate ``[:name:]`` at ``i`` inside brackets; the index after it, None if none."""
    end = pattern.find(":]", i + 2)
    if end <= 0:
        return None
    name = pattern[i + 2 : end]
    cls = _POSIX_CLASSES.get(name.lstrip("^"))
    if cls is None or name.startswith("^"):
        raise _RegexError(f"invalid character class range: `[:{name}:]`")
    out.append(cls)
    return end + 2


def _open_class(pattern: str, i: int, out: list[str]) -> int:
    """Open a bracket class at ``i``; a ``]`` right after the opening is a literal."""
    if pattern.startswith("[^", i):
        out.append("[^")
        i += 2
    else:
        out.append("[")
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        out.append("\\]")
        i += 1
    return i


def _sets_multiline(pattern: str, i: int) -> bool:
    """Refuse the Perl groups RE2 lacks at ``(?``; whether its flags turn on ``m``."""
    for bad in ("(?=", "(?!", "(?<=", "(?<!", "(?>", "(?#"):
        if pattern.startswith(bad, i):
            raise _RegexError(f"invalid or unsupported Perl syntax: `{bad}`")
    flags = re.match(r"\(\?([imsU-]+)\)", pattern[i:])
    return bool(flags and "m" in flags.group(1).split("-")[0])


def _translate_go_regex(pattern: str) -> str:
    """Translate RE2 syntax to Python ``re`` and refuse what RE2 refuses."""
    out: list[str] = []
    i = 0
    n = len(pattern)
    in_class = False
    multiline = False
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i = _translate_escape(pattern, i, in_class, out)
            continue
        if in_class:
            if ch == "[" and pattern.startswith("[:", i):
                after = _translate_posix_class(pattern, i, out)
                if after is not None:
                    i = after
                    continue
            if ch == "]" and out and out[-1] not in ("[", "[^"):
                in_class = False
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            i = _open_class(pattern, i, out)
            continue
        if ch == "(" and pattern.startswith("(?", i) and _sets_multiline(pattern, i):
            multiline = True
        if ch == "$" and not multiline:
            out.append("(?!\\n)\\Z")
            i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


_REGEX_CACHE: dict[str, re.Pattern[str]] = {}


def compile_go_regex(pattern: str) -> re.Pattern[str]:
    """Compile a Go (RE2) regular expression with Python's ``re``.

    Args:
        pattern: The RE2 pattern.

    Returns:
        The compiled pattern (cached).

    Raises:
        ValueError: Go's regexp package would refuse the pattern; the message is worded
            like Go's (``error parsing regexp: ...``).
    """
    compiled = _REGEX_CACHE.get(pattern)
    if compiled is not None:
        return compiled
    try:
        compiled = re.compile(_translate_go_regex(pattern), re.ASCII)
    except _RegexError as e:
        raise ValueError(f"error parsing regexp: {e}") from None
    except re.error as e:
        raise ValueError(f"error parsing regexp: {e.msg}: `{pattern}`") from None
    if len(_REGEX_CACHE) > 4096:
        _REGEX_CACHE.clear()
    _REGEX_CACHE[pattern] = compiled
    return compiled
