"""The admission CEL environment: declared variables, the authorizer library, constructions."""

from __future__ import annotations

from typing import Any

import pytest

from pyctrl._apiextensions.cel import DYN, CelCompileError, CelEvalError, compile_env
from pyctrl._apiextensions.cel.authz import Authorizer, Decision, PathCheck, ResourceCheck
from pyctrl._apiserver.admission.plugin.cel import (
    LazyVariables,
    MatchCondition,
    compile_expression,
    evaluate_match_conditions,
)

VARS = dict.fromkeys(("object", "authorizer"), DYN)


def _authorizer(asked: list[tuple[Any, str, Any]]) -> Authorizer:
    def authorize(user: Any, verb: str, check: ResourceCheck | PathCheck) -> Decision:
        asked.append((user, verb, check))
        if isinstance(check, PathCheck):
            return Decision(check.path == "/healthz", "path rule")
        if check.resource == "broken":
            return Decision(False, error="authorizer unavailable")
        return Decision(check.namespace == "ns" and verb == "get", "RBAC: allowed")

    return Authorizer("alice", authorize, ("apps", "deployments", "", "ns", "d"))


def run(expression: str, env: dict[str, Any]) -> Any:
    return compile_env(expression, VARS).run(env)


def test_the_authorizer_asks_the_server_the_built_question() -> None:
    """group().resource().namespace().name().check() hands the full question to the server."""
    asked: list[tuple[Any, str, Any]] = []
    env = {"authorizer": _authorizer(asked)}
    expression = (
        "authorizer.group('').resource('pods').subresource('log').namespace('ns')"
        ".name('p').check('get').allowed()"
    )
    assert run(expression, env) is True
    (user, verb, check) = asked[0]
    assert (user, verb) == ("alice", "get")
    assert (check.group, check.resource, check.subresource, check.namespace, check.name) == (
        "",
        "pods",
        "log",
        "ns",
        "p",
    )


def test_decisions_expose_reason_and_errors() -> None:
    """reason(), errored() and error() read the server's answer."""
    env = {"authorizer": _authorizer([])}
    base = "authorizer.group('').resource('{r}').namespace('ns').check('get')"
    assert run(base.format(r="pods") + ".reason()", env) == "RBAC: allowed"
    assert run(base.format(r="broken") + ".errored()", env) is True
    assert run(base.format(r="broken") + ".error()", env) == "authorizer unavailable"


def test_path_service_account_and_request_resource() -> None:
    """path(), serviceAccount() and requestResource ask about the right subject and target."""
    asked: list[tuple[Any, str, Any]] = []
    env = {"authorizer": _authorizer(asked)}
    assert run("authorizer.path('/healthz').check('get').allowed()", env) is True
    run("authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list')", env)
    assert asked[-1][0] == "system:serviceaccount:ns:sa"
    assert run("authorizer.requestResource.check('get').allowed()", env) is True
    assert asked[-1][2].resource == "deployments"


def test_a_method_on_the_wrong_value_is_an_evaluation_error() -> None:
    """check() on something that is not a question fails evaluation, not Python."""
    with pytest.raises(CelEvalError, match="no such overload"):
        run("object.check('get')", {"object": "text"})


def test_constructions_need_a_mutating_environment() -> None:
    """Object{...} and JSONPatch{...} compile only where mutations are compiled."""
    assert "message construction is not supported" in compile_expression("Object{a: 1}").error
    built = compile_expression("Object{spec: Object.spec{replicas: 2}}", constructors=True).program
    assert built is not None
    assert built.run({}) == {"spec": {"replicas": 2}}
    patch = compile_expression(
        "[JSONPatch{op: 'add', path: '/x/' + jsonpatch.escapeKey('a/b~c'), value: 1}]",
        constructors=True,
    ).program
    assert patch is not None
    assert patch.run({}) == [{"op": "add", "path": "/x/a~1b~0c", "value": 1}]


def test_an_undeclared_variable_is_a_compilation_error() -> None:
    """A name outside the admission environment fails to compile, as cel-go reports it."""
    with pytest.raises(CelCompileError, match="undeclared reference to 'self'"):
        compile_env("self.x", VARS)
    assert "undefined field 'nope'" in compile_expression("variables.nope", ["x"]).error


def test_variables_are_evaluated_once_and_lazily() -> None:
    """A composited variable runs on first use only, its value then reused."""
    programs = {"v": compile_expression("object.n + 1", [])}
    env: dict[str, Any] = {"object": {"n": 1}}
    variables = LazyVariables(programs, env)
    env["variables"] = variables
    use = compile_expression("variables.v * variables.v", ["v"]).program
    assert use is not None
    assert use.run(env) == 4
    env["object"] = {"n": 10}
    assert use.run(env) == 4
    broken = LazyVariables({"v": compile_expression("object.missing", [])}, env)
    with pytest.raises(CelEvalError, match="no such key"):
        broken.get("v")


def test_match_conditions_false_wins_over_errors() -> None:
    """A false condition means no match even when another one errors."""
    conditions = [
        MatchCondition("err", compile_expression("object.missing")),
        MatchCondition("no", compile_expression("false")),
    ]
    assert evaluate_match_conditions(conditions, {"object": {}}) == (False, "")
    matches, error = evaluate_match_conditions(conditions[:1], {"object": {}})
    assert matches
    assert error == "expression 'object.missing' resulted in error: no such key: missing"
