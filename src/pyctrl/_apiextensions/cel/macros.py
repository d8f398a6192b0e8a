"""CEL macros: ``has()`` and the comprehensions (``all``, ``exists``, ``filter``, ``map`` ...).

As cel-go's ``parser/macro.go`` expands them and its interpreter runs the resulting
comprehension: the range is checked to be a list, map or dyn, the bodies are compiled
with the loop variable in scope, and the compiled closures iterate, absorbing errors
where ``&&``/``||`` would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from lark import Token, Tree

from pyctrl._apiextensions.cel.literals import tok
from pyctrl._apiextensions.cel.types import BOOL, DYN, STRING, T, converter
from pyctrl._apiextensions.cel.values import MISSING, CelEvalError, no_overload_error

__all__ = ["Checker", "Fn", "comprehension", "has_macro", "simple_name"]

Fn = Callable[[dict[str, Any]], Any]


class Checker(Protocol):
    """What the macros need of the compiler."""

    scopes: list[dict[str, T]]

    def compile(self, tree: Tree[Any]) -> tuple[Fn, T]:
        """Check and compile a subexpression."""
        ...

    def fail(self, node: Tree[Any] | Token, message: str) -> Exception:
        """A compilation error at ``node``."""
        ...

    def no_overload(self, node: Tree[Any] | Token, op: str, *types: T) -> Exception:
        """A "found no matching overload" error at ``node``."""
        ...

    def select(
        self, operand: Fn, t: T, name: str, token: Token, *, test_only: bool
    ) -> tuple[Fn, T]:
        """Check and compile a field selection (a presence test with ``test_only``)."""
        ...


def simple_name(tree: Tree[Any]) -> str | None:
    """The name of an expression that is a bare identifier (a variable or namespace), else None."""
    node: Any = tree
    while isinstance(node, Tree) and node.data != "ident" and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, Tree) and node.data == "ident":
        return str(node.children[0])
    return None


def has_macro(c: Checker, token: Token, arg_trees: list[Tree[Any]]) -> tuple[Fn, T]:
    """Check and compile ``has(x.f)``: whether field ``f`` of ``x`` is set."""
    if len(arg_trees) != 1:
        raise c.fail(token, "invalid argument to has() macro")
    node: Any = arg_trees[0]
    while isinstance(node, Tree) and node.data != "member_dot" and len(node.children) == 1:
        node = node.children[0]
    if not isinstance(node, Tree) or node.data != "member_dot":
        raise c.fail(token, "invalid argument to has() macro")
    operand_tree, field_node = node.children
    field_token = tok(field_node)
    operand, t = c.compile(operand_tree)
    return c.select(operand, t, str(field_token), field_token, test_only=True)


def comprehension(  # noqa: PLR0912 - the comprehension loop of cel-go's all/exists/map/filter macros in one place
    c: Checker, name: str, token: Token, range_tree: Tree[Any], arg_trees: list[Tree[Any]]
) -> tuple[Fn, T]:
    """Check and compile ``range.name(var, ...)``: all, exists, exists_one, filter, map."""
    var = simple_name(arg_trees[0])
    if var is None:
        raise c.fail(token, "argument must be a simple name")
    if len(arg_trees) == 3 and name != "map":
        raise c.fail(token, f"undeclared reference to '{name}' (in container '')")
    rng, rt = c.compile(range_tree)
    if rt.kind == "list":
        var_t = rt.elem or DYN
    elif rt.kind == "map":
        var_t = STRING
    elif rt.kind == "dyn":
        var_t = DYN
    else:
        raise c.fail(
            token,
            f"expression of type '{rt!r}' cannot be range of a comprehension (must be list, "
            "map, or dynamic)",
        )
    conv = converter(var_t) if rt.kind == "list" else None
    c.scopes.append({var: var_t})
    try:
        bodies = [c.compile(a) for a in arg_trees[1:]]
    finally:
        c.scopes.pop()
    if name in ("all", "exists", "exists_one", "filter") and bodies[0][1].kind not in (
        "bool",
        "dyn",
    ):
        raise c.no_overload(token, "_&&_" if name == "all" else "_||_", BOOL, bodies[0][1])

    def items(env: dict[str, Any]) -> Any:
        v = rng(env)
        if isinstance(v, list | tuple | dict):
            return v
        raise no_overload_error(name, v)

    body = bodies[0][0]
    if name == "all":
        return _comprehension_quantifier(var, items, body, conv, decisive=False, op="_&&_"), BOOL
    if name == "exists":
        return _comprehension_quantifier(var, items, body, conv, decisive=True, op="_||_"), BOOL
    if name == "exists_one":
        return _comprehension_exists_one(var, items, body, conv), BOOL
    if name == "filter":
        return _comprehension_filter(var, items, body, conv), T("list", var_t)
    if len(bodies) == 1:
        return _comprehension_map(var, items, None, body, conv), T("list", bodies[0][1])
    return _comprehension_map(var, items, body, bodies[1][0], conv), T("list", bodies[1][1])


def _iterate(value: Any) -> Any:
    return value.keys() if isinstance(value, dict) else value


def _comprehension_quantifier(
    var: str, items: Fn, body: Fn, conv: Callable[[Any], Any] | None, *, decisive: bool, op: str
) -> Fn:
    """``all`` (``decisive=False``, ``_&&_``) or ``exists`` (``decisive=True``, ``_||_``).

    The first element whose body is ``decisive`` decides; errors and non-booleans are kept
    and raised only if no element decides, as cel-go's logical operators absorb them.
    """
    undecided = not decisive

    def run(env: dict[str, Any]) -> bool:
        saved = env.get(var, MISSING)
        error: CelEvalError | None = None
        try:
            for item in _iterate(items(env)):
                env[var] = item if conv is None or item is None else conv(item)
                try:
                    r = body(env)
                except CelEvalError as e:
                    error = error or e
                    continue
                if r is decisive:
                    return not undecided
                if r is not undecided:
                    error = error or no_overload_error(op, r)
        finally:
            _restore(env, var, saved)
        if error is not None:
            raise error
        return undecided

    return run


def _comprehension_exists_one(
    var: str, items: Fn, body: Fn, conv: Callable[[Any], Any] | None
) -> Fn:
    def run(env: dict[str, Any]) -> bool:
        saved = env.get(var, MISSING)
        count = 0
        try:
            for item in _iterate(items(env)):
                env[var] = item if conv is None or item is None else conv(item)
                r = body(env)
                if r is True:
                    count += 1
                elif r is not False:
                    raise no_overload_error("exists_one", r)
        finally:
            _restore(env, var, saved)
        return count == 1

    return run


def _comprehension_filter(var: str, items: Fn, body: Fn, conv: Callable[[Any], Any] | None) -> Fn:
    def run(env: dict[str, Any]) -> list[Any]:
        saved = env.get(var, MISSING)
        out: list[Any] = []
        try:
            for item in _iterate(items(env)):
                value = item if conv is None or item is None else conv(item)
                env[var] = value
                r = body(env)
                if r is True:
                    out.append(value)
                elif r is not False:
                    raise no_overload_error("filter", r)
        finally:
            _restore(env, var, saved)
        return out

    return run


def _comprehension_map(
    var: str, items: Fn, predicate: Fn | None, transform: Fn, conv: Callable[[Any], Any] | None
) -> Fn:
    def run(env: dict[str, Any]) -> list[Any]:
        saved = env.get(var, MISSING)
        out: list[Any] = []
        try:
            for item in _iterate(items(env)):
                env[var] = item if conv is None or item is None else conv(item)
                if predicate is not None:
                    keep = predicate(env)
                    if keep is False:
                        continue
                    if keep is not True:
                        raise no_overload_error("map", keep)
                out.append(transform(env))
        finally:
            _restore(env, var, saved)
        return out

    return run


def _restore(env: dict[str, Any], var: str, saved: Any) -> None:
    if saved is MISSING:
        env.pop(var, None)
    else:
        env[var] = saved
