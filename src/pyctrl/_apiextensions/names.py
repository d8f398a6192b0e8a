"""Name and label checks of apimachinery's ``util/validation``.

DNS-1035 labels, DNS-1123 subdomains, qualified names and label values.
"""

from __future__ import annotations

import functools
import re
from typing import Final

_DNS1035_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_RE: Final = re.compile(f"^{_DNS1035_FMT}\\Z")
DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT: Final = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_RE: Final = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}\\Z")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    msg += " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            msg += " or "
        msg += f"'{example}', "
    return msg + f"regex used for validation is '{fmt}')"


def is_dns1035_label(value: str) -> list[str]:
    """apimachinery's IsDNS1035Label: the problems with ``value``, empty if valid.

    Args:
        value: The candidate label.

    Returns:
        The error strings, worded as apimachinery words them.
    """
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035_RE.match(value):
        errs.append(
            regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                "with an alphabetic character, and end with an alphanumeric character",
                _DNS1035_FMT,
                "my-name",
                "abc-123",
            )
        )
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """apimachinery's IsDNS1123Subdomain: the problems with ``value``, empty if valid.

    Args:
        value: The candidate subdomain.

    Returns:
        The error strings, worded as apimachinery words them.
    """
    errs: list[str] = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(
            regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, "
                "'-' or '.', and must start and end with an alphanumeric character",
                _DNS1123_SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errs


_QNAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME_RE: Final = re.compile(f"^{_QNAME_FMT}\\Z")
_QNAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_LABEL_VALUE_FMT: Final = f"(({_QNAME_FMT})?)"
_LABEL_VALUE_RE: Final = re.compile(f"^{_LABEL_VALUE_FMT}\\Z")
DNS1123_LABEL_RE: Final = re.compile(f"^{DNS1123_LABEL_FMT}\\Z")


def is_qualified_name(value: str) -> list[str]:
    """apimachinery's IsQualifiedName: the problems with ``value``, empty if valid."""
    return list(_qualified_name_errors(value))


# Label keys and values, annotation keys and finalizers recur on every write of an object:
# their checks are remembered (bounded), as they depend on the text alone.
@functools.lru_cache(maxsize=8192)
def _qualified_name_errors(value: str) -> tuple[str, ...]:
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
        errs: list[str] = []
    elif len(parts) == 2:
        prefix, name = parts
        errs = []
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return (
            "a qualified name "
            + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part must be no more than 63 characters")
    if not _QNAME_RE.match(name):
        errs.append(
            "name part " + regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
        )
    return tuple(errs)


def is_label_value(value: str) -> list[str]:
    """apimachinery's IsValidLabelValue: the problems with ``value``, empty if valid."""
    return list(_label_value_errors(value))


@functools.lru_cache(maxsize=8192)
def _label_value_errors(value: str) -> tuple[str, ...]:
    errs: list[str] = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE_RE.match(value):
        errs.append(
            regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, "
                "'-', '_' "
                "or '.', and must start and end with an alphanumeric character",
                _LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return tuple(errs)


def qualified_name_problem(name: str) -> str:
    """The first reason ``name`` is not a qualified name (a label key, a finalizer), or ''."""
    return next(iter(is_qualified_name(name)), "")


def label_value_problem(value: str) -> str:
    """The first reason ``value`` is not a valid label value, or ''."""
    return next(iter(is_label_value(value)), "")
