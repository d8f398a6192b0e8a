"""CEL compilation: cel-python's parse tree to type-checked Python closures."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from celpy.celparser import CELParser
from lark import Token, Tree

from pyctrl._apiextensions.cel.library import (
    FUNCTIONS,
    MACROS,
    METHODS,
    NAMESPACES,
    TYPE_VALUES,
    method_fits,
    to_string,
)
from pyctrl._apiextensions.cel.literals import literal, tok
from pyctrl._apiextensions.cel.macros import Fn, comprehension, has_macro, simple_name
from pyctrl._apiextensions.cel.types import (
    BOOL,
    DURATION,
    DYN,
    RESERVED,
    TIMESTAMP,
    TYPE,
    T,
    converter,
    known,
)
from pyctrl._apiextensions.cel.values import (
    MISSING,
    CelEvalError,
    add,
    cel_equal,
    cel_in,
    cel_type_name,
    compare,
    div,
    map_lookup,
    mod,
    mul,
    neg,
    no_overload_error,
    sub,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

# ---------------------------------------------------------------------------------------
# Compilation: celpy's parse tree -> checked closures.
# ---------------------------------------------------------------------------------------

_PARSER: CELParser | None = None


def parse_cel(source: str) -> Tree[Any]:
    global _PARSER  # noqa: PLW0603 - one lark parser per process, built on first use.
    if _PARSER is None:
        _PARSER = CELParser()
    return _PARSER.parse(source)


def issue(source: str, line: int, col: int, message: str) -> str:
    lines = source.split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"ERROR: <input>:{line}:{col}: {message}\n | {text}\n | {'.' * max(col - 1, 0)}^"


def _pos(node: Tree[Any] | Token) -> tuple[int, int]:
    if isinstance(node, Token):
        return (node.line or 1, node.column or 1)
    meta = node.meta
    return (getattr(meta, "line", 1) or 1, getattr(meta, "column", 1) or 1)


class CompileFailedError(Exception):
    """Internal: aborts compilation after recording an issue."""


_NUMERIC: Final = frozenset(("int", "uint", "double"))
_ARITH_OK: Final = {
    "_+_": {
        ("int", "int"),
        ("uint", "uint"),
        ("double", "double"),
        ("string", "string"),
        ("bytes", "bytes"),
        ("google.protobuf.Timestamp", "google.protobuf.Duration"),
        ("google.protobuf.Duration", "google.protobuf.Timestamp"),
        ("google.protobuf.Duration", "google.protobuf.Duration"),
    },
    "_-_": {
        ("int", "int"),
        ("uint", "uint"),
        ("double", "double"),
        ("google.protobuf.Timestamp", "google.protobuf.Timestamp"),
        ("google.protobuf.Timestamp", "google.protobuf.Duration"),
        ("google.protobuf.Duration", "google.protobuf.Duration"),
    },
    "_*_": {("int", "int"), ("uint", "uint"), ("double", "double")},
    "_/_": {("int", "int"), ("uint", "uint"), ("double", "double")},
    "_%_": {("int", "int"), ("uint", "uint")},
}
_ARITH_RESULT: Final = {
    ("google.protobuf.Timestamp", "google.protobuf.Timestamp"): DURATION,
    ("google.protobuf.Timestamp", "google.protobuf.Duration"): TIMESTAMP,
    ("google.protobuf.Duration", "google.protobuf.Timestamp"): TIMESTAMP,
}
_ARITH_IMPL: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "_+_": add,
    "_-_": sub,
    "_*_": mul,
    "_/_": div,
    "_%_": mod,
}
_REL_OPS: Final = {
    "relation_lt": "_<_",
    "relation_le": "_<=_",
    "relation_gt": "_>_",
    "relation_ge": "_>=_",
    "relation_eq": "_==_",
    "relation_ne": "_!=_",
    "relation_in": "@in",
}
_ARITH_OPS: Final = {
    "addition_add": "_+_",
    "addition_sub": "_-_",
    "multiplication_mul": "_*_",
    "multiplication_div": "_/_",
    "multiplication_mod": "_%_",
}


class Compiler:
    def __init__(
        self,
        source: str,
        self_type: T,
        old_type: T,
        *,
        decls: Mapping[str, T] | None = None,
        lazy: Mapping[str, T] | None = None,
        constructors: bool = False,
    ) -> None:
        self.source = source
        self.self_type = self_type
        self.old_type = old_type
        self.scopes: list[dict[str, T]] = []
        self.uses_old_self = False
        # An environment with declared variables (admission's object, request, params...)
        # instead of the rules' self/oldSelf; ``lazy`` are the ``variables.<name>``.
        self.decls = decls
        self.lazy = lazy
        self.constructors = constructors

    def fail(self, node: Tree[Any] | Token, message: str) -> CompileFailedError:
        line, col = _pos(node)
        return CompileFailedError(issue(self.source, line, col, message))

    def no_overload(self, node: Tree[Any] | Token, op: str, *types: T) -> CompileFailedError:
        kinds = ", ".join(repr(t) for t in types)
        return self.fail(node, f"found no matching overload for '{op}' applied to '({kinds})'")

    def lookup_var(self, name: str) -> T | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def compile(self, tree: Tree[Any]) -> tuple[Fn, T]:
        method = getattr(self, "c_" + str(tree.data), None)
        if method is None:
            raise self.fail(tree, f"unsupported expression: {tree.data}")
        result: tuple[Fn, T] = method(tree)
        return result

    # -- operators -----------------------------------------------------------------------

    def c_expr(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        cond, cond_t = self.compile(tree.children[0])
        then, then_t = self.compile(tree.children[1])
        other, other_t = self.compile(tree.children[2])
        if cond_t.kind not in ("bool", "dyn"):
            raise self.no_overload(tree, "_?_:_", cond_t, then_t, other_t)

        def conditional(env: dict[str, Any]) -> Any:
            c = cond(env)
            if c is True:
                return then(env)
            if c is False:
                return other(env)
            raise no_overload_error("_?_:_", c)

        result_t = then_t if then_t.kind == other_t.kind else DYN
        return conditional, result_t

    def c_conditionalor(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        left, lt = self.compile(tree.children[0])
        right, rt = self.compile(tree.children[1])
        for t in (lt, rt):
            if t.kind not in ("bool", "dyn"):
                raise self.no_overload(tree, "_||_", lt, rt)

        def logical_or(env: dict[str, Any]) -> Any:
            try:
                a = left(env)
            except CelEvalError as e:
                b = right(env)
                if b is True:
                    return True
                raise e from None
            if a is True:
                return True
            b = right(env)
            if b is True:
                return True
            if a is False and b is False:
                return False
            raise no_overload_error("_||_", a, b)

        return logical_or, BOOL

    def c_conditionaland(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        left, lt = self.compile(tree.children[0])
        right, rt = self.compile(tree.children[1])
        for t in (lt, rt):
            if t.kind not in ("bool", "dyn"):
                raise self.no_overload(tree, "_&&_", lt, rt)

        def logical_and(env: dict[str, Any]) -> Any:
            try:
                a = left(env)
            except CelEvalError as e:
                b = right(env)
                if b is False:
                    return False
                raise e from None
            if a is False:
                return False
            b = right(env)
            if b is False:
                return False
            if a is True and b is True:
                return True
            raise no_overload_error("_&&_", a, b)

        return logical_and, BOOL

    def c_relation(self, tree: Tree[Any]) -> tuple[Fn, T]:  # noqa: PLR0911 - one return per CEL relation operator, as cel-go's checker
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        op_tree, right_tree = tree.children
        op = _REL_OPS[str(op_tree.data)]
        left, lt = self.compile(op_tree.children[0])
        right, rt = self.compile(right_tree)
        if op in ("_==_", "_!=_"):
            if (
                known(lt)
                and known(rt)
                and lt.kind != rt.kind
                and not (lt.kind in _NUMERIC and rt.kind in _NUMERIC)
            ):
                raise self.no_overload(tree, op, lt, rt)
            if op == "_==_":
                return (lambda env: cel_equal(left(env), right(env))), BOOL
            return (lambda env: not cel_equal(left(env), right(env))), BOOL
        if op == "@in":
            if rt.kind not in ("list", "map", "dyn"):
                raise self.no_overload(tree, op, lt, rt)
            return (lambda env: cel_in(left(env), right(env))), BOOL
        if (
            known(lt)
            and known(rt)
            and lt.kind != rt.kind
            and not (lt.kind in _NUMERIC and rt.kind in _NUMERIC)
        ):
            raise self.no_overload(tree, op, lt, rt)
        if op == "_<_":
            return (lambda env: compare(op, left(env), right(env)) < 0), BOOL
        if op == "_<=_":
            return (lambda env: compare(op, left(env), right(env)) <= 0), BOOL
        if op == "_>_":
            return (lambda env: compare(op, left(env), right(env)) > 0), BOOL
        return (lambda env: compare(op, left(env), right(env)) >= 0), BOOL

    def _arith(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        op_tree, right_tree = tree.children
        op = _ARITH_OPS[str(op_tree.data)]
        left, lt = self.compile(op_tree.children[0])
        right, rt = self.compile(right_tree)
        result_t = DYN
        if known(lt) and known(rt):
            if (lt.kind, rt.kind) not in _ARITH_OK[op]:
                raise self.no_overload(tree, op, lt, rt)
            result_t = _ARITH_RESULT.get((lt.kind, rt.kind), lt)
        elif lt.kind == "list" and rt.kind == "list" and op == "_+_":
            result_t = lt
        impl = _ARITH_IMPL[op]
        return (lambda env: impl(left(env), right(env))), result_t

    c_addition = _arith
    c_multiplication = _arith

    def c_unary(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        op_tree, operand_tree = tree.children
        operand, t = self.compile(operand_tree)
        if op_tree.data == "unary_not":
            if t.kind not in ("bool", "dyn"):
                raise self.no_overload(tree, "!_", t)

            def logical_not(env: dict[str, Any]) -> bool:
                v = operand(env)
                if v is True:
                    return False
                if v is False:
                    return True
                raise no_overload_error("!_", v)

            return logical_not, BOOL
        if known(t) and t.kind not in ("int", "double", "google.protobuf.Duration"):
            raise self.no_overload(tree, "-_", t)
        return (lambda env: neg(operand(env))), t

    # -- members ------------------------------------------------------------------------

    def c_member(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.compile(tree.children[0])

    def c_primary(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.compile(tree.children[0])

    def c_paren_expr(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.compile(tree.children[0])

    def c_member_object(self, tree: Tree[Any]) -> tuple[Fn, T]:
        type_name = _dotted_name(tree.children[0])
        if not self.constructors or type_name is None:
            raise self.fail(tree, "message construction is not supported")
        if type_name != "JSONPatch" and type_name.split(".")[0] != "Object":
            raise self.fail(tree, f"undeclared reference to '{type_name}' (in container '')")
        inits = tree.children[1].children if len(tree.children) > 1 else []
        fields: list[tuple[str, Fn]] = []
        for i in range(0, len(inits), 2):
            fields.append((str(tok(inits[i])), self.compile(inits[i + 1])[0]))

        def construct(env: dict[str, Any]) -> dict[str, Any]:
            return {name: fn(env) for name, fn in fields}

        return construct, DYN

    def c_ident(self, tree: Tree[Any]) -> tuple[Fn, T]:
        token = tok(tree.children[0])
        return self.ident(str(token), token)

    def c_dot_ident(self, tree: Tree[Any]) -> tuple[Fn, T]:
        token = tok(tree.children[0])
        return self.ident(str(token), token)

    def ident(self, name: str, token: Token) -> tuple[Fn, T]:
        var_t = self.lookup_var(name)
        if var_t is not None:
            return (lambda env: env[name]), var_t
        if self.decls is not None:
            declared = self.decls.get(name)
            if declared is not None:
                return (lambda env: env[name]), declared
        elif name == "self":
            return (lambda env: env["self"]), self.self_type
        elif name == "oldSelf":
            self.uses_old_self = True

            def old_self(env: dict[str, Any]) -> Any:
                try:
                    return env["oldSelf"]
                except KeyError:
                    raise CelEvalError("no such attribute(s): oldSelf") from None

            return old_self, self.old_type
        if name in TYPE_VALUES:
            value = TYPE_VALUES[name]
            return (lambda env: value), TYPE
        raise self.fail(token, f"undeclared reference to '{name}' (in container '')")

    def c_member_dot(self, tree: Tree[Any]) -> tuple[Fn, T]:
        operand_tree, field_node = tree.children
        field_token = tok(field_node)
        name = str(field_token)
        if self._is_namespace(operand_tree):
            raise self.fail(
                field_token,
                f"undeclared reference to '{simple_name(operand_tree)}.{name}' (in container '')",
            )
        operand_name = simple_name(operand_tree)
        if self.lazy is not None and operand_name == "variables":
            return self.lazy_variable(name, field_token)
        if name == "requestResource" and operand_name == "authorizer" and self.decls:
            return (lambda env: env["authorizer"].request_resource), DYN
        operand, t = self.compile(operand_tree)
        return self.select(operand, t, name, field_token, test_only=False)

    def lazy_variable(self, name: str, token: Token) -> tuple[Fn, T]:
        """``variables.<name>``: evaluated on first use, once per evaluation."""
        assert self.lazy is not None
        var_t = self.lazy.get(name)
        if var_t is None:
            raise self.fail(token, f"undefined field '{name}'")
        return (lambda env: env["variables"].get(name)), var_t

    def select(
        self, operand: Fn, t: T, name: str, token: Token, *, test_only: bool
    ) -> tuple[Fn, T]:
        line, col = _pos(token)
        dot = Token("IDENT", name, line=line, column=max(col - 1, 1))
        json_name = name
        field_t: T = DYN
        if t.kind == "object":
            assert t.fields is not None
            found = t.fields.get(name)
            if found is None:
                raise self.fail(dot, f"undefined field '{name}'")
            json_name, field_t = found
        elif t.kind == "map":
            field_t = t.elem or DYN
        elif t.kind != "dyn":
            raise self.fail(dot, f"type '{t!r}' does not support field selection")
        dynamic = t.kind == "dyn"
        if test_only:

            def has(env: dict[str, Any]) -> bool:
                v = operand(env)
                if type(v) is dict:
                    return json_name in v or (dynamic and _unescape(json_name) in v)
                raise CelEvalError(f"invalid type for field selection: {cel_type_name(v)}")

            return has, BOOL
        conv = converter(field_t)

        def sel(env: dict[str, Any]) -> Any:
            v = operand(env)
            if type(v) is dict:
                try:
                    r = v[json_name]
                except KeyError:
                    if not dynamic or (alt := _unescape(json_name)) not in v:
                        raise CelEvalError(f"no such key: {name}") from None
                    r = v[alt]
                return r if conv is None or r is None else conv(r)
            if v is None:
                raise CelEvalError(f"no such key: {name}")
            raise CelEvalError(f"type '{cel_type_name(v)}' does not support field selection")

        return sel, field_t

    def c_member_index(self, tree: Tree[Any]) -> tuple[Fn, T]:
        operand_tree, index_tree = tree.children
        operand, t = self.compile(operand_tree)
        index, it = self.compile(index_tree)
        elem_t: T = DYN
        if t.kind in ("list", "map"):
            elem_t = t.elem or DYN
            if t.kind == "list" and it.kind not in ("int", "uint", "dyn", "double"):
                raise self.no_overload(tree, "_[_]", t, it)
        elif t.kind not in ("dyn", "object"):
            raise self.no_overload(tree, "_[_]", t, it)
        conv = converter(elem_t)

        def idx(env: dict[str, Any]) -> Any:
            v = operand(env)
            i = index(env)
            if isinstance(v, list | tuple):
                if isinstance(i, float) and i.is_integer():
                    i = int(i)
                if not isinstance(i, int) or isinstance(i, bool):
                    raise no_overload_error("_[_]", v, i)
                if i < 0 or i >= len(v):
                    raise CelEvalError(f"index '{i}' out of range in list size '{len(v)}'")
                r = v[i]
            elif isinstance(v, dict):
                r = map_lookup(v, i)
                if r is MISSING:
                    raise CelEvalError(
                        f"no such key: {to_string(i) if not isinstance(i, list | dict) else i}"
                    )
            else:
                raise no_overload_error("_[_]", v, i)
            return r if conv is None or r is None else conv(r)

        return idx, elem_t

    def _is_namespace(self, tree: Tree[Any]) -> bool:
        name = simple_name(tree)
        return name is not None and name in NAMESPACES and self.lookup_var(name) is None

    def args(self, tree: Tree[Any] | None) -> list[Tree[Any]]:
        return list(tree.children) if tree is not None else []

    def c_member_dot_arg(self, tree: Tree[Any]) -> tuple[Fn, T]:
        operand_tree = tree.children[0]
        name_token = tok(tree.children[1])
        name = str(name_token)
        arg_trees = self.args(tree.children[2] if len(tree.children) > 2 else None)
        if self._is_namespace(operand_tree):
            qualified = f"{simple_name(operand_tree)}.{name}"
            return self.call_global(qualified, name_token, arg_trees)
        if name in MACROS and len(arg_trees) in (2, 3):
            return comprehension(self, name, name_token, operand_tree, arg_trees)
        operand, t = self.compile(operand_tree)
        compiled = [self.compile(a) for a in arg_trees]
        entry = METHODS.get(name)
        if entry is None:
            raise self.fail(name_token, f"undeclared reference to '{name}' (in container '')")
        impl, result_t, arities = entry
        arg_types = [c[1] for c in compiled]
        if not method_fits(name, t, arg_types):
            kinds = ", ".join(repr(a) for a in arg_types)
            raise self.fail(
                name_token,
                f"found no matching overload for '{name}' applied to '{t!r}.({kinds})'",
            )
        if len(compiled) not in arities:
            kinds = ", ".join(repr(c[1]) for c in compiled)
            raise self.fail(
                name_token, f"found no matching overload for '{name}' applied to '{t!r}.({kinds})'"
            )
        if name in ("value", "orValue") and t.kind == "optional":
            result_t = t.elem or DYN
        if name in ("min", "max", "sum") and t.kind == "list":
            result_t = t.elem or DYN
        fns = [c[0] for c in compiled]
        if not fns:
            return (lambda env: impl(operand(env))), result_t
        if len(fns) == 1:
            (a0,) = fns
            return (lambda env: impl(operand(env), a0(env))), result_t
        return (lambda env: impl(operand(env), *[f(env) for f in fns])), result_t

    def c_ident_arg(self, tree: Tree[Any]) -> tuple[Fn, T]:
        name_token = tok(tree.children[0])
        arg_trees = self.args(tree.children[1] if len(tree.children) > 1 else None)
        name = str(name_token)
        if name == "has":
            return has_macro(self, name_token, arg_trees)
        return self.call_global(name, name_token, arg_trees)

    def c_dot_ident_arg(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.c_ident_arg(tree)

    def call_global(self, name: str, token: Token, arg_trees: list[Tree[Any]]) -> tuple[Fn, T]:
        entry = FUNCTIONS.get(name)
        compiled = [self.compile(a) for a in arg_trees]
        if entry is None:
            raise self.fail(token, f"undeclared reference to '{name}' (in container '')")
        impl, result_t, arities = entry
        if len(compiled) not in arities:
            kinds = ", ".join(repr(c[1]) for c in compiled)
            raise self.fail(
                token, f"found no matching overload for '{name}' applied to '({kinds})'"
            )
        if name == "dyn":
            result_t = DYN
        fns = [c[0] for c in compiled]
        if not fns:
            return (lambda env: impl()), result_t
        if len(fns) == 1:
            (a0,) = fns
            return (lambda env: impl(a0(env))), result_t
        if len(fns) == 2:
            a0, a1 = fns
            return (lambda env: impl(a0(env), a1(env))), result_t
        return (lambda env: impl(*[f(env) for f in fns])), result_t

    # -- literals -----------------------------------------------------------------------

    def c_list_lit(self, tree: Tree[Any]) -> tuple[Fn, T]:
        elems = [self.compile(a) for a in self.args(tree.children[0] if tree.children else None)]
        fns = [e[0] for e in elems]
        kinds = {e[1].kind for e in elems}
        elem_t = elems[0][1] if len(kinds) == 1 else DYN
        return (lambda env: [f(env) for f in fns]), T("list", elem_t)

    def c_map_lit(self, tree: Tree[Any]) -> tuple[Fn, T]:
        parts = [self.compile(a) for a in self.args(tree.children[0] if tree.children else None)]
        pairs = [(parts[i][0], parts[i + 1][0]) for i in range(0, len(parts), 2)]
        values = [parts[i + 1][1] for i in range(0, len(parts), 2)]
        elem_t = values[0] if values and len({v.kind for v in values}) == 1 else DYN

        def build(env: dict[str, Any]) -> dict[Any, Any]:
            out: dict[Any, Any] = {}
            for kf, vf in pairs:
                k = kf(env)
                if isinstance(k, float | list | tuple | dict) or k is None:
                    raise CelEvalError(f"unsupported key type: {cel_type_name(k)}")
                if map_lookup(out, k) is not MISSING:
                    raise CelEvalError(f"Failed with repeated key: {to_string(k)}")
                out[k] = vf(env)
            return out

        return build, T("map", elem_t)

    def c_literal(self, tree: Tree[Any]) -> tuple[Fn, T]:
        token = tok(tree.children[0])
        try:
            value, t = literal(token)
        except ValueError as e:
            raise self.fail(token, str(e)) from None
        return (lambda env: value), t


def _dotted_name(node: Any) -> str | None:
    """``Object.spec.template`` of a message construction's type, else None."""
    name = simple_name(node)
    if name is not None:
        return name
    while isinstance(node, Tree) and node.data != "member_dot" and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, Tree) and node.data == "member_dot":
        prefix = _dotted_name(node.children[0])
        return None if prefix is None else f"{prefix}.{tok(node.children[1])}"
    return None


def _unescape(name: str) -> str:
    if name.startswith("__") and name.endswith("__") and name[2:-2] in RESERVED:
        return name[2:-2]
    return (
        name.replace("__underscores__", "\0")
        .replace("__dot__", ".")
        .replace("__dash__", "-")
        .replace("__slash__", "/")
        .replace("\0", "__")
    )
