"""CEL compilation: cel-python's parse tree to type-checked Python closures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from celpy.celparser import CELParser
from lark import Token, Tree

from pyctrl._apiextensions.cel.library import (
    _FUNCTIONS,
    _MACROS,
    _METHODS,
    _NAMESPACES,
    _STRING_METHOD_SIGNATURES,
    _TYPE_VALUES,
    _to_string,
)
from pyctrl._apiextensions.cel.types import (
    _RESERVED,
    BOOL,
    BYTES,
    DOUBLE,
    DURATION,
    DYN,
    INT,
    NULL,
    STRING,
    TIMESTAMP,
    TYPE,
    UINT,
    T,
    _converter,
)
from pyctrl._apiextensions.cel.values import (
    _INT64_MAX,
    _INT64_MIN,
    _MISSING,
    _UINT64_MAX,
    CelEvalError,
    Uint,
    _add,
    _compare,
    _div,
    _in,
    _map_lookup,
    _mod,
    _mul,
    _neg,
    _no_overload,
    _sub,
    _type_name,
    cel_equal,
)

# ---------------------------------------------------------------------------------------
# Compilation: celpy's parse tree -> checked closures.
# ---------------------------------------------------------------------------------------

Fn = Callable[[dict[str, Any]], Any]

_PARSER: CELParser | None = None


def _parse(source: str) -> Tree[Any]:
    global _PARSER  # noqa: PLW0603 - one lark parser per process, built on first use.
    if _PARSER is None:
        _PARSER = CELParser()
    return _PARSER.parse(source)


def _issue(source: str, line: int, col: int, message: str) -> str:
    lines = source.split("\n")
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"ERROR: <input>:{line}:{col}: {message}\n | {text}\n | {'.' * max(col - 1, 0)}^"


def _tok(node: Any) -> Token:
    if not isinstance(node, Token):
        raise TypeError(f"expected a token, got {node!r}")
    return node


def _pos(node: Tree[Any] | Token) -> tuple[int, int]:
    if isinstance(node, Token):
        return (node.line or 1, node.column or 1)
    meta = node.meta
    return (getattr(meta, "line", 1) or 1, getattr(meta, "column", 1) or 1)


class _CompileFailedError(Exception):
    """Internal: aborts compilation after recording an issue."""


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


_NUMERIC: Final = frozenset(("int", "uint", "double"))
_KNOWN_KINDS: Final = frozenset(
    (
        "bool",
        "int",
        "uint",
        "double",
        "string",
        "bytes",
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
    )
)
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
    "_+_": _add,
    "_-_": _sub,
    "_*_": _mul,
    "_/_": _div,
    "_%_": _mod,
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


def _known(t: T) -> bool:
    return t.kind in _KNOWN_KINDS


class _Compiler:
    def __init__(self, source: str, self_type: T, old_type: T) -> None:
        self.source = source
        self.self_type = self_type
        self.old_type = old_type
        self.scopes: list[dict[str, T]] = []
        self.uses_old_self = False

    def fail(self, node: Tree[Any] | Token, message: str) -> _CompileFailedError:
        line, col = _pos(node)
        return _CompileFailedError(_issue(self.source, line, col, message))

    def no_overload(self, node: Tree[Any] | Token, op: str, *types: T) -> _CompileFailedError:
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
            raise _no_overload("_?_:_", c)

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
            raise _no_overload("_||_", a, b)

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
            raise _no_overload("_&&_", a, b)

        return logical_and, BOOL

    def c_relation(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        op_tree, right_tree = tree.children
        op = _REL_OPS[str(op_tree.data)]
        left, lt = self.compile(op_tree.children[0])
        right, rt = self.compile(right_tree)
        if op in ("_==_", "_!=_"):
            if (
                _known(lt)
                and _known(rt)
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
            return (lambda env: _in(left(env), right(env))), BOOL
        if (
            _known(lt)
            and _known(rt)
            and lt.kind != rt.kind
            and not (lt.kind in _NUMERIC and rt.kind in _NUMERIC)
        ):
            raise self.no_overload(tree, op, lt, rt)
        if op == "_<_":
            return (lambda env: _compare(op, left(env), right(env)) < 0), BOOL
        if op == "_<=_":
            return (lambda env: _compare(op, left(env), right(env)) <= 0), BOOL
        if op == "_>_":
            return (lambda env: _compare(op, left(env), right(env)) > 0), BOOL
        return (lambda env: _compare(op, left(env), right(env)) >= 0), BOOL

    def _arith(self, tree: Tree[Any]) -> tuple[Fn, T]:
        if len(tree.children) == 1:
            return self.compile(tree.children[0])
        op_tree, right_tree = tree.children
        op = _ARITH_OPS[str(op_tree.data)]
        left, lt = self.compile(op_tree.children[0])
        right, rt = self.compile(right_tree)
        result_t = DYN
        if _known(lt) and _known(rt):
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
                raise _no_overload("!_", v)

            return logical_not, BOOL
        if _known(t) and t.kind not in ("int", "double", "google.protobuf.Duration"):
            raise self.no_overload(tree, "-_", t)
        return (lambda env: _neg(operand(env))), t

    # -- members ------------------------------------------------------------------------

    def c_member(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.compile(tree.children[0])

    def c_primary(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.compile(tree.children[0])

    def c_paren_expr(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.compile(tree.children[0])

    def c_member_object(self, tree: Tree[Any]) -> tuple[Fn, T]:
        raise self.fail(tree, "message construction is not supported")

    def c_ident(self, tree: Tree[Any]) -> tuple[Fn, T]:
        token = _tok(tree.children[0])
        return self.ident(str(token), token)

    def c_dot_ident(self, tree: Tree[Any]) -> tuple[Fn, T]:
        token = _tok(tree.children[0])
        return self.ident(str(token), token)

    def ident(self, name: str, token: Token) -> tuple[Fn, T]:
        var_t = self.lookup_var(name)
        if var_t is not None:
            return (lambda env: env[name]), var_t
        if name == "self":
            return (lambda env: env["self"]), self.self_type
        if name == "oldSelf":
            self.uses_old_self = True

            def old_self(env: dict[str, Any]) -> Any:
                try:
                    return env["oldSelf"]
                except KeyError:
                    raise CelEvalError("no such attribute(s): oldSelf") from None

            return old_self, self.old_type
        if name in _TYPE_VALUES:
            value = _TYPE_VALUES[name]
            return (lambda env: value), TYPE
        raise self.fail(token, f"undeclared reference to '{name}' (in container '')")

    def c_member_dot(self, tree: Tree[Any]) -> tuple[Fn, T]:
        operand_tree, field_node = tree.children
        field_token = _tok(field_node)
        name = str(field_token)
        if self._is_namespace(operand_tree):
            raise self.fail(
                field_token,
                f"undeclared reference to '{self._namespace(operand_tree)}.{name}' (in "
                "container '')",
            )
        operand, t = self.compile(operand_tree)
        return self.select(operand, t, name, field_token, test_only=False)

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
                raise CelEvalError(f"invalid type for field selection: {_type_name(v)}")

            return has, BOOL
        conv = _converter(field_t)

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
            raise CelEvalError(f"type '{_type_name(v)}' does not support field selection")

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
        conv = _converter(elem_t)

        def idx(env: dict[str, Any]) -> Any:
            v = operand(env)
            i = index(env)
            if isinstance(v, list | tuple):
                if isinstance(i, float) and i.is_integer():
                    i = int(i)
                if not isinstance(i, int) or isinstance(i, bool):
                    raise _no_overload("_[_]", v, i)
                if i < 0 or i >= len(v):
                    raise CelEvalError(f"index '{i}' out of range in list size '{len(v)}'")
                r = v[i]
            elif isinstance(v, dict):
                r = _map_lookup(v, i)
                if r is _MISSING:
                    raise CelEvalError(
                        f"no such key: {_to_string(i) if not isinstance(i, list | dict) else i}"
                    )
            else:
                raise _no_overload("_[_]", v, i)
            return r if conv is None or r is None else conv(r)

        return idx, elem_t

    def _is_namespace(self, tree: Tree[Any]) -> bool:
        name = self._namespace(tree)
        return name is not None and name in _NAMESPACES and self.lookup_var(name) is None

    @staticmethod
    def _namespace(tree: Tree[Any]) -> str | None:
        node: Any = tree
        while isinstance(node, Tree) and node.data != "ident" and len(node.children) == 1:
            node = node.children[0]
        if isinstance(node, Tree) and node.data == "ident":
            return str(node.children[0])
        return None

    def args(self, tree: Tree[Any] | None) -> list[Tree[Any]]:
        return list(tree.children) if tree is not None else []

    def c_member_dot_arg(self, tree: Tree[Any]) -> tuple[Fn, T]:
        operand_tree = tree.children[0]
        name_token = _tok(tree.children[1])
        name = str(name_token)
        arg_trees = self.args(tree.children[2] if len(tree.children) > 2 else None)
        if self._is_namespace(operand_tree):
            qualified = f"{self._namespace(operand_tree)}.{name}"
            return self.call_global(qualified, name_token, arg_trees)
        if name in _MACROS and len(arg_trees) in (2, 3):
            return self.macro(name, name_token, operand_tree, arg_trees)
        operand, t = self.compile(operand_tree)
        compiled = [self.compile(a) for a in arg_trees]
        entry = _METHODS.get(name)
        if entry is None:
            raise self.fail(name_token, f"undeclared reference to '{name}' (in container '')")
        impl, result_t, arities = entry
        arg_types = [c[1] for c in compiled]
        if not self._method_fits(name, t, arg_types):
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

    @staticmethod
    def _method_fits(name: str, target: T, args: list[T]) -> bool:
        signatures = _STRING_METHOD_SIGNATURES.get(name)
        if signatures is None or target.kind == "dyn":
            return True
        if target.kind != "string":
            # Methods that exist only on strings cannot apply to another known type.
            return name in ("indexOf", "lastIndexOf", "size") or not _known(target)
        return any(
            len(sig) == len(args)
            and all(a.kind in (want, "dyn") for a, want in zip(args, sig, strict=True))
            for sig in signatures
        )

    def c_ident_arg(self, tree: Tree[Any]) -> tuple[Fn, T]:
        name_token = _tok(tree.children[0])
        arg_trees = self.args(tree.children[1] if len(tree.children) > 1 else None)
        name = str(name_token)
        if name == "has":
            return self.has_macro(name_token, arg_trees)
        return self.call_global(name, name_token, arg_trees)

    def c_dot_ident_arg(self, tree: Tree[Any]) -> tuple[Fn, T]:
        return self.c_ident_arg(tree)

    def call_global(self, name: str, token: Token, arg_trees: list[Tree[Any]]) -> tuple[Fn, T]:
        entry = _FUNCTIONS.get(name)
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

    def has_macro(self, token: Token, arg_trees: list[Tree[Any]]) -> tuple[Fn, T]:
        if len(arg_trees) != 1:
            raise self.fail(token, "invalid argument to has() macro")
        node: Any = arg_trees[0]
        while isinstance(node, Tree) and node.data != "member_dot" and len(node.children) == 1:
            node = node.children[0]
        if not isinstance(node, Tree) or node.data != "member_dot":
            raise self.fail(token, "invalid argument to has() macro")
        operand_tree, field_node = node.children
        field_token = _tok(field_node)
        operand, t = self.compile(operand_tree)
        return self.select(operand, t, str(field_token), field_token, test_only=True)

    def macro(
        self, name: str, token: Token, range_tree: Tree[Any], arg_trees: list[Tree[Any]]
    ) -> tuple[Fn, T]:
        var = self._namespace(arg_trees[0])
        if var is None:
            raise self.fail(token, "argument must be a simple name")
        if len(arg_trees) == 3 and name != "map":
            raise self.fail(token, f"undeclared reference to '{name}' (in container '')")
        rng, rt = self.compile(range_tree)
        if rt.kind == "list":
            var_t = rt.elem or DYN
        elif rt.kind == "map":
            var_t = STRING
        elif rt.kind == "dyn":
            var_t = DYN
        else:
            raise self.fail(
                token,
                f"expression of type '{rt!r}' cannot be range of a comprehension (must be list, "
                "map, or dynamic)",
            )
        conv = _converter(var_t) if rt.kind == "list" else None
        self.scopes.append({var: var_t})
        try:
            bodies = [self.compile(a) for a in arg_trees[1:]]
        finally:
            self.scopes.pop()
        if name in ("all", "exists", "exists_one", "filter") and bodies[0][1].kind not in (
            "bool",
            "dyn",
        ):
            raise self.no_overload(token, "_&&_" if name == "all" else "_||_", BOOL, bodies[0][1])

        def items(env: dict[str, Any]) -> Any:
            v = rng(env)
            if isinstance(v, list | tuple | dict):
                return v
            raise _no_overload(name, v)

        body = bodies[0][0]
        if name == "all":
            return _comprehension_all(var, items, body, conv), BOOL
        if name == "exists":
            return _comprehension_exists(var, items, body, conv), BOOL
        if name == "exists_one":
            return _comprehension_exists_one(var, items, body, conv), BOOL
        if name == "filter":
            return _comprehension_filter(var, items, body, conv), T("list", var_t)
        if len(bodies) == 1:
            return _comprehension_map(var, items, None, body, conv), T("list", bodies[0][1])
        return _comprehension_map(var, items, body, bodies[1][0], conv), T("list", bodies[1][1])

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
                    raise CelEvalError(f"unsupported key type: {_type_name(k)}")
                if _map_lookup(out, k) is not _MISSING:
                    raise CelEvalError(f"Failed with repeated key: {_to_string(k)}")
                out[k] = vf(env)
            return out

        return build, T("map", elem_t)

    def c_literal(self, tree: Tree[Any]) -> tuple[Fn, T]:
        token = _tok(tree.children[0])
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
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise self.fail(token, f"invalid int literal: {text}")
            t = INT
        elif kind == "UINT_LIT":
            digits = text[:-1]
            value = Uint(int(digits, 16) if "x" in digits.lower() else int(digits))
            if value > _UINT64_MAX:
                raise self.fail(token, f"invalid uint literal: {text}")
            t = UINT
        elif kind == "FLOAT_LIT":
            value = float(text)
            t = DOUBLE
        elif kind in ("STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"):
            try:
                value = _unquote(text)
            except ValueError as e:
                raise self.fail(token, str(e)) from None
            t = BYTES if isinstance(value, bytes) else STRING
        elif kind == "BOOL_LIT":
            value = text == "true"
            t = BOOL
        else:
            value = None
            t = NULL
        return (lambda env: value), t


def _unescape(name: str) -> str:
    if name.startswith("__") and name.endswith("__") and name[2:-2] in _RESERVED:
        return name[2:-2]
    return (
        name.replace("__underscores__", "\0")
        .replace("__dot__", ".")
        .replace("__dash__", "-")
        .replace("__slash__", "/")
        .replace("\0", "__")
    )


def _iterate(value: Any) -> Any:
    return value.keys() if isinstance(value, dict) else value


def _comprehension_all(var: str, items: Fn, body: Fn, conv: Callable[[Any], Any] | None) -> Fn:
    def run(env: dict[str, Any]) -> bool:
        saved = env.get(var, _MISSING)
        error: CelEvalError | None = None
        try:
            for item in _iterate(items(env)):
                env[var] = item if conv is None or item is None else conv(item)
                try:
                    r = body(env)
                except CelEvalError as e:
                    error = error or e
                    continue
                if r is False:
                    return False
                if r is not True:
                    error = error or _no_overload("_&&_", r)
        finally:
            _restore(env, var, saved)
        if error is not None:
            raise error
        return True

    return run


def _comprehension_exists(var: str, items: Fn, body: Fn, conv: Callable[[Any], Any] | None) -> Fn:
    def run(env: dict[str, Any]) -> bool:
        saved = env.get(var, _MISSING)
        error: CelEvalError | None = None
        try:
            for item in _iterate(items(env)):
                env[var] = item if conv is None or item is None else conv(item)
                try:
                    r = body(env)
                except CelEvalError as e:
                    error = error or e
                    continue
                if r is True:
                    return True
                if r is not False:
                    error = error or _no_overload("_||_", r)
        finally:
            _restore(env, var, saved)
        if error is not None:
            raise error
        return False

    return run


def _comprehension_exists_one(
    var: str, items: Fn, body: Fn, conv: Callable[[Any], Any] | None
) -> Fn:
    def run(env: dict[str, Any]) -> bool:
        saved = env.get(var, _MISSING)
        count = 0
        try:
            for item in _iterate(items(env)):
                env[var] = item if conv is None or item is None else conv(item)
                r = body(env)
                if r is True:
                    count += 1
                elif r is not False:
                    raise _no_overload("exists_one", r)
        finally:
            _restore(env, var, saved)
        return count == 1

    return run


def _comprehension_filter(var: str, items: Fn, body: Fn, conv: Callable[[Any], Any] | None) -> Fn:
    def run(env: dict[str, Any]) -> list[Any]:
        saved = env.get(var, _MISSING)
        out: list[Any] = []
        try:
            for item in _iterate(items(env)):
                value = item if conv is None or item is None else conv(item)
                env[var] = value
                r = body(env)
                if r is True:
                    out.append(value)
                elif r is not False:
                    raise _no_overload("filter", r)
        finally:
            _restore(env, var, saved)
        return out

    return run


def _comprehension_map(
    var: str, items: Fn, predicate: Fn | None, transform: Fn, conv: Callable[[Any], Any] | None
) -> Fn:
    def run(env: dict[str, Any]) -> list[Any]:
        saved = env.get(var, _MISSING)
        out: list[Any] = []
        try:
            for item in _iterate(items(env)):
                env[var] = item if conv is None or item is None else conv(item)
                if predicate is not None:
                    keep = predicate(env)
                    if keep is False:
                        continue
                    if keep is not True:
                        raise _no_overload("map", keep)
                out.append(transform(env))
        finally:
            _restore(env, var, saved)
        return out

    return run


def _restore(env: dict[str, Any], var: str, saved: Any) -> None:
    if saved is _MISSING:
        env.pop(var, None)
    else:
        env[var] = saved
