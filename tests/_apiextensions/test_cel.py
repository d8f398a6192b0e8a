"""CEL rules (x-kubernetes-validations): compilation, evaluation and reporting."""

from __future__ import annotations

from typing import Any

import pytest

from pyctrl._apiextensions.cel.program import compile_expression
from pyctrl._apiextensions.cel.types import schema_type
from pyctrl._apiextensions.cel.values import CelCompileError, CelEvalError
from pyctrl._apiextensions.structural import structural_errors
from pyctrl._apiextensions.validation import validate

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "replicas": {"type": "integer"},
        "ratio": {"type": "number"},
        "ports": {"type": "array", "items": {"type": "integer"}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "start": {"type": "string", "format": "date-time"},
        "timeout": {"type": "string", "format": "duration"},
        "x-y": {"type": "string"},
        "namespace": {"type": "string"},
        "target": {"x-kubernetes-int-or-string": True},
        "memory": {"type": "string"},
    },
}

SPEC: dict[str, Any] = {
    "name": "web",
    "replicas": 3,
    "ratio": 2,
    "ports": [80, 443, 8080],
    "labels": {"app": "web"},
    "start": "2024-01-01T00:00:00Z",
    "timeout": "90s",
    "x-y": "dash",
    "namespace": "prod",
    "target": "50%",
    "memory": "512Mi",
}


def run(expression: str, value: Any = SPEC, schema: dict[str, Any] = SPEC_SCHEMA) -> Any:
    """Compile an expression against a schema and evaluate it on a value."""
    program = compile_expression(expression, schema_type(schema, False))
    return program.evaluate(value)


def compile_error(expression: str, schema: dict[str, Any] = SPEC_SCHEMA) -> str:
    with pytest.raises(CelCompileError) as info:
        compile_expression(expression, schema_type(schema, False))
    return str(info.value)


def eval_error(expression: str, value: Any = SPEC) -> str:
    with pytest.raises(CelEvalError) as info:
        run(expression, value)
    return str(info.value)


# --- evaluation ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "self.replicas + 1 == 4",
        "self.name.startsWith('w') && self.name.endsWith('b') && self.name.contains('e')",
        "self.name.matches('^[a-z]+$')",
        "size(self.ports) == 3 && self.ports.size() == 3",
        "self.ports.all(p, p > 0)",
        "self.ports.exists(p, p == 443)",
        "self.ports.exists_one(p, p > 1000)",
        "self.ports.map(p, p * 2) == [160, 886, 16160]",
        "self.ports.map(p, p > 100, p) == [443, 8080]",
        "self.ports.filter(p, p < 1000) == [80, 443]",
        "'app' in self.labels && self.labels.app == 'web' && self.labels['app'] == 'web'",
        "self.labels.all(k, k.size() > 0)",
        "has(self.name) && !has(self.labels.team)",
        "self.replicas > 1 ? self.name != '' : false",
        "1 == 1.0 && 2u == 2",
        "[1, 2] + [3] == [1, 2, 3]",
        "{'a': 1}.a == 1",
    ],
)
def test_core_language(expression: str) -> None:
    """Operators, has(), macros, maps and lists evaluate as in CEL."""
    assert run(expression) is True


@pytest.mark.parametrize(
    "expression",
    [
        "self.name.upperAscii() == 'WEB' && 'ABC'.lowerAscii() == 'abc'",
        "self.name.charAt(1) == 'e' && self.name.indexOf('b') == 2",
        "'a,b,c'.split(',') == ['a', 'b', 'c'] && ['a', 'b'].join('-') == 'a-b'",
        "'hello'.substring(1, 3) == 'el' && '  x '.trim() == 'x'",
        "'aaa'.replace('a', 'b', 2) == 'bba' && 'abc'.reverse() == 'cba'",
        "'abcabc'.lastIndexOf('b') == 4",
    ],
)
def test_strings_extension(expression: str) -> None:
    """The cel-go strings extension functions Kubernetes enables work."""
    assert run(expression) is True


@pytest.mark.parametrize(
    "expression",
    [
        "self.ports.isSorted() && [3, 1].isSorted() == false",
        "self.ports.sum() == 8603 && self.ports.min() == 80 && self.ports.max() == 8080",
        "self.ports.indexOf(443) == 1 && [1, 2, 1].lastIndexOf(1) == 2",
        "'abc123def456'.find('[0-9]+') == '123' && 'a1b2'.findAll('[0-9]') == ['1', '2']",
        "quantity(self.memory).isGreaterThan(quantity('256Mi'))",
        "quantity('1.5').add(quantity('500m')).compareTo(quantity('2')) == 0",
        "isQuantity('10Gi') && !isQuantity('ten')",
        "url('https://example.com:8443/api?x=1').getHostname() == 'example.com'",
        "url('https://example.com:8443/api').getPort() == '8443' && isURL('/relative/path')",
        "ip('10.0.0.1').family() == 4 && isCIDR('10.0.0.0/8')",
        "cidr('10.0.0.0/8').containsIP('10.1.2.3') && !isIP('300.1.1.1')",
        "sets.contains([1, 2, 3], [1, 2]) && sets.intersects([1], [1, 5]) && "
        "!sets.equivalent([1], [2])",
        "math.greatest(1, 7, 3) == 7 && math.least([4, 2]) == 2",
    ],
)
def test_kubernetes_libraries(expression: str) -> None:
    """The Kubernetes CEL libraries operators use (lists, regex, quantity, URL, IP, sets) work."""
    assert run(expression) is True


def test_date_time_fields_are_timestamps() -> None:
    """A format: date-time string is a timestamp; a format: duration string a duration."""
    assert run("self.start < timestamp('2025-01-01T00:00:00Z')") is True
    assert run("self.start + self.timeout == timestamp('2024-01-01T00:01:30Z')") is True
    assert run("self.start.getFullYear() == 2024 && self.timeout == duration('1m30s')") is True


def test_number_fields_are_doubles_even_when_integral() -> None:
    """A type: number field holding 2 is the double 2.0."""
    assert run("self.ratio * 2.0 == 4.0") is True


def test_int_or_string_is_dynamic() -> None:
    """An x-kubernetes-int-or-string field is dyn and can be switched on with type()."""
    rule = "type(self.target) == string ? self.target.endsWith('%') : self.target > 0"
    assert run(rule) is True
    assert run(rule, {**SPEC, "target": 5}) is True


def test_escaped_property_names() -> None:
    """Property names are escaped x-y as x__dash__y, namespace as __namespace__."""
    assert run("self.x__dash__y == 'dash' && self.__namespace__ == 'prod'") is True


def test_resource_root_exposes_name_and_kind() -> None:
    """At a resource root, apiVersion, kind and metadata.name are typed even if unspecified."""
    schema = {"type": "object", "properties": {"spec": {"type": "object"}}}
    program = compile_expression(
        "self.metadata.name.startsWith('a') && self.kind == 'K'", schema_type(schema, True)
    )
    assert program.evaluate({"kind": "K", "metadata": {"name": "abc"}, "spec": {}}) is True


def test_errors_inside_or_are_absorbed_by_a_true_operand() -> None:
    """An error on one side of || does not matter when the other side is true."""
    assert run("self.ports[10] == 1 || true") is True
    assert run("false && self.ports[10] == 1") is False


# --- evaluation errors ---------------------------------------------------------------------


def test_missing_field_is_no_such_key() -> None:
    """Reading an absent declared field is 'no such key'."""
    assert eval_error("self.name == 'x'", {}) == "no such key: name"


def test_integer_overflow_is_an_error() -> None:
    """int arithmetic beyond 64 bits is 'integer overflow'."""
    assert eval_error("9223372036854775807 + self.replicas > 0") == "integer overflow"


def test_division_by_zero_is_an_error() -> None:
    """Integer division and modulus by zero are errors."""
    assert eval_error("self.replicas / 0 == 1") == "division by zero"
    assert eval_error("self.replicas % 0 == 1") == "modulus by zero"


def test_list_index_out_of_range_is_an_error() -> None:
    """Indexing beyond a list is an error naming index and size."""
    assert eval_error("self.ports[3] == 1") == "index '3' out of range in list size '3'"


# --- compilation errors --------------------------------------------------------------------


def test_undefined_field_fails_compilation() -> None:
    """A field the schema does not declare is a compile error pointing at it."""
    assert compile_error("self.bogus == 1") == (
        "ERROR: <input>:1:5: undefined field 'bogus'\n | self.bogus == 1\n | ....^"
    )


def test_undeclared_function_fails_compilation() -> None:
    """An unknown function is an undeclared reference."""
    assert "undeclared reference to 'frobnicate' (in container '')" in compile_error(
        "self.name.frobnicate()"
    )


def test_undeclared_variable_fails_compilation() -> None:
    """An unknown identifier is an undeclared reference."""
    assert "undeclared reference to 'foo' (in container '')" in compile_error("foo == 1")


def test_mismatched_operand_types_fail_compilation() -> None:
    """Adding a string to an int has no overload."""
    assert "found no matching overload for '_+_' applied to '(string, int)'" in compile_error(
        "self.name + 1 == 'x'"
    )


def test_wrong_argument_type_of_string_method_fails_compilation() -> None:
    """A string method called with a non-string argument, or on a non-string, has no overload."""
    assert "found no matching overload for 'startsWith' applied to 'string.(int)'" in (
        compile_error("self.name.startsWith(1)")
    )
    assert "found no matching overload for 'contains' applied to 'int.(string)'" in (
        compile_error("self.replicas.contains('1')")
    )


def test_syntax_error_fails_compilation() -> None:
    """A rule that does not parse is a syntax error."""
    assert "Syntax error" in compile_error("self.replicas >")


def test_compiled_program_is_reused_for_many_values() -> None:
    """One compiled program evaluates many values without recompiling."""
    program = compile_expression("self.replicas >= 0", schema_type(SPEC_SCHEMA, False))
    assert [program.evaluate({"replicas": n}) for n in (-1, 0, 1)] == [False, True, True]


# --- rules inside CRD schemas --------------------------------------------------------------


def schema_with_rules(
    *rules: dict[str, Any], root_rules: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "replicas": {"type": "integer"},
                    "min": {"type": "integer"},
                    "max": {"type": "integer"},
                    "image": {"type": "string"},
                },
                "x-kubernetes-validations": list(rules),
            }
        },
    }
    if root_rules:
        schema["x-kubernetes-validations"] = root_rules
    return schema


def obj(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "metadata": {"name": "t"},
        "spec": spec,
    }


def test_rule_without_message_reports_failed_rule() -> None:
    """A failing rule without message is 'failed rule: <rule>'."""
    schema = schema_with_rules({"rule": "self.min <= self.max"})
    assert [str(c) for c in validate(obj(min=5, max=1), schema)] == [
        "spec: Invalid value: failed rule: self.min <= self.max"
    ]


def test_message_expression_builds_the_message() -> None:
    """messageExpression's result replaces the message."""
    schema = schema_with_rules(
        {
            "rule": "self.replicas <= 10",
            "messageExpression": "'replicas must be at most 10, got ' + string(self.replicas)",
        }
    )
    assert [str(c) for c in validate(obj(replicas=12), schema)] == [
        "spec: Invalid value: replicas must be at most 10, got 12"
    ]


def test_field_path_and_reason_shape_the_cause() -> None:
    """fieldPath moves the cause below the node; reason selects the cause type."""
    schema = schema_with_rules(
        {
            "rule": "has(self.image)",
            "message": "image is required",
            "fieldPath": ".image",
            "reason": "FieldValueRequired",
        }
    )
    causes = validate(obj(replicas=1), schema)
    assert [(c.reason, c.field, c.message) for c in causes] == [
        ("FieldValueRequired", "spec.image", "Required value: image is required")
    ]


def test_root_rule_reports_nil_path() -> None:
    """A rule on the object root fails at the nil path, as kube-apiserver reports it."""
    schema = schema_with_rules(
        root_rules=[{"rule": "self.metadata.name != 'bad'", "message": "bad name"}]
    )
    bad = obj(replicas=1)
    bad["metadata"]["name"] = "bad"
    assert [str(c) for c in validate(bad, schema)] == ["<nil>: Invalid value: bad name"]


def test_runtime_error_is_reported_with_the_rule() -> None:
    """A rule that errors at runtime reports the error and the rule."""
    schema = schema_with_rules({"rule": "self.replicas > 0"})
    assert [str(c) for c in validate(obj(image="x"), schema)] == [
        'spec: Invalid value: "object": no such key: replicas evaluating rule: self.replicas > 0'
    ]


def test_transition_rule_compares_with_old_value() -> None:
    """oldSelf is the correlated old value; the rule is skipped on create."""
    schema = schema_with_rules(
        {"rule": "self.replicas >= oldSelf.replicas", "message": "cannot scale down"}
    )
    assert validate(obj(replicas=1), schema) == []
    assert validate(obj(replicas=3), schema, old=obj(replicas=2)) == []
    assert [str(c) for c in validate(obj(replicas=1), schema, old=obj(replicas=2))] == [
        "spec: Invalid value: cannot scale down"
    ]


def test_optional_old_self_runs_on_create() -> None:
    """With optionalOldSelf the rule runs on create with oldSelf an empty optional."""
    schema = schema_with_rules(
        {
            "rule": "!oldSelf.hasValue() || self.replicas >= oldSelf.value().replicas",
            "optionalOldSelf": True,
            "message": "cannot scale down",
        },
        {
            "rule": "oldSelf.hasValue() || self.replicas < 5",
            "optionalOldSelf": True,
            "message": "start small",
        },
    )
    assert [str(c) for c in validate(obj(replicas=9), schema)] == [
        "spec: Invalid value: start small"
    ]
    assert [str(c) for c in validate(obj(replicas=1), schema, old=obj(replicas=2))] == [
        "spec: Invalid value: cannot scale down"
    ]


def test_rules_on_list_items_and_map_values_run_per_element() -> None:
    """Rules on items and additionalProperties run for each element with indexed paths."""
    schema = {
        "type": "object",
        "properties": {
            "list": {
                "type": "array",
                "items": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self != 'bad'"}],
                },
            },
            "map": {
                "type": "object",
                "additionalProperties": {
                    "type": "integer",
                    "x-kubernetes-validations": [{"rule": "self > 0"}],
                },
            },
        },
    }
    causes = validate({"list": ["ok", "bad"], "map": {"a": 1, "b": 0}}, schema)
    assert [str(c) for c in causes] == [
        "list[1]: Invalid value: \"bad\": failed rule: self != 'bad'",
        "map[b]: Invalid value: 0: failed rule: self > 0",
    ]


def test_uncompilable_rule_is_rejected_at_crd_creation() -> None:
    """structural_errors reports a rule that does not compile with cel-go's issue text."""
    schema = schema_with_rules({"rule": "self.nope > 0"})
    causes = structural_errors(schema)
    assert len(causes) == 1
    assert (
        causes[0].field
        == "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    )
    assert causes[0].message.endswith(
        "compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope > 0\n | ....^"
    )


def test_non_boolean_rule_is_rejected_at_crd_creation() -> None:
    """A rule that does not return a bool is refused."""
    schema = schema_with_rules({"rule": "self.replicas"})
    assert structural_errors(schema)[0].message.endswith("cel expression must evaluate to a bool")


def test_old_self_on_uncorrelatable_list_items_is_rejected() -> None:
    """A transition rule under an atomic list's items cannot correlate and is refused."""
    schema = {
        "type": "object",
        "properties": {
            "l": {
                "type": "array",
                "items": {
                    "type": "string",
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}],
                },
            }
        },
    }
    assert [str(c) for c in structural_errors(schema)] == [
        "spec.validation.openAPIV3Schema.properties[l].items.x-kubernetes-validations[0].rule: "
        "Invalid "
        'value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the '
        "schema "
        "within spec.validation.openAPIV3Schema.properties[l]"
    ]


def test_rule_shape_errors() -> None:
    """Empty rules, unsupported reasons and invalid field paths are refused."""
    schema = schema_with_rules(
        {"rule": " "},
        {"rule": "true", "reason": "FieldValueOops"},
        {"rule": "true", "fieldPath": ".nope"},
    )
    assert [str(c) for c in structural_errors(schema)] == [
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: "
        "Required "
        "value: rule is not specified",
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].reason: "
        'Unsupported value: "FieldValueOops": supported values: "FieldValueDuplicate", '
        '"FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[2].fieldPath: "
        'Invalid value: ".nope": fieldPath must be a valid path',
    ]
