"""The port of Go's ``encoding/json`` scanner errors (`pyctrl._apiserver.apimachinery.gojson`).

The expected texts are those of Go's classic ``encoding/json`` (``scanner.go``), which
kube-apiserver releases built without the ``jsonv2`` experiment report. Go 1.27 reports
some of these cases differently (an incomplete literal or number at the end as
``unexpected end of JSON input``, escapes and control characters in its v2 wording);
the conformance suite checks only the cases on which both agree
(tests/envtest/conformance/test_server_fidelity.py).
"""

from __future__ import annotations

import pytest

from pyctrl._apiserver.apimachinery import gojson


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"", "unexpected end of JSON input"),
        (b"{", "unexpected end of JSON input"),
        (b"not json", "invalid character 'o' in literal null (expecting 'u')"),
        (b"tru", "invalid character ' ' in literal true (expecting 'e')"),
        (b"fals", "invalid character ' ' in literal false (expecting 'e')"),
        (b"1.", "invalid character ' ' after decimal point in numeric literal"),
        (b"-", "invalid character ' ' in numeric literal"),
        (b"-a", "invalid character 'a' in numeric literal"),
        (b"1e+", "invalid character ' ' in exponent of numeric literal"),
        (b"01", "invalid character '1' after top-level value"),
        (b'{"a":1,}', "invalid character '}' looking for beginning of object key string"),
        (b'{"a" 1}', "invalid character '1' after object key"),
        (b'{"a":1 "b"}', "invalid character '\"' after object key:value pair"),
        (b"[1 2]", "invalid character '2' after array element"),
        (b"[1,]", "invalid character ']' looking for beginning of value"),
        (b'"\\q"', "invalid character 'q' in string escape code"),
        (b'"\\u12g4"', "invalid character 'g' in \\u hexadecimal character escape"),
        (b'"\x01"', "invalid character '\\x01' in string literal"),
        (b"'a'", "invalid character '\\'' looking for beginning of value"),
        (b"\\", "invalid character '\\\\' looking for beginning of value"),
        (b"\xff", "invalid character '\u00ff' looking for beginning of value"),
        (b"\x80", "invalid character '\\u0080' looking for beginning of value"),
        (b"\t", "unexpected end of JSON input"),
    ],
)
def test_syntax_errors_read_as_gos_scanner_reports_them(data: bytes, error: str) -> None:
    """Each malformed document gets the first error Go's scanner reports, in its words."""
    assert gojson.syntax_error(data) == error


@pytest.mark.parametrize(
    "data",
    [b"{}", b" [1, 2.5e-3, -0, true, false, null] ", b'{"a":{"b":["\\u00e9\\n"]}}', b"0", b'""'],
)
def test_valid_json_has_no_syntax_error(data: bytes) -> None:
    """Valid JSON documents scan without error."""
    assert gojson.syntax_error(data) is None


@pytest.mark.parametrize(
    ("value", "what"),
    [([1], "array"), ("x", "string"), (1.5, "number"), (3, "number"), (True, "bool")],
)
def test_values_that_are_not_objects_name_their_json_type(value: object, what: str) -> None:
    """Interpret's struct refuses a non-object value naming its JSON type, as Go does."""
    error = gojson.kind_type_error(value)
    assert error is not None
    assert error.startswith(f"json: cannot unmarshal {what} into Go value of type struct {{ ")


def test_objects_and_null_fit_interprets_struct() -> None:
    """An object or null leaves Interpret's struct empty: no type error."""
    assert gojson.kind_type_error({"kind": "X"}) is None
    assert gojson.kind_type_error(None) is None
