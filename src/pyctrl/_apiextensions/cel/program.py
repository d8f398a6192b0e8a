"""CEL programs and the compiled ``x-kubernetes-validations`` rules of a schema node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from celpy.celparser import CELParseError

from pyctrl._apiextensions.cel.compiler import CompileFailedError, Compiler, issue, parse_cel
from pyctrl._apiextensions.cel.types import DYN, T, converter, schema_type
from pyctrl._apiextensions.cel.values import NONE, CelCompileError, CelEvalError, Optional

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyctrl._apiextensions.cel.macros import Fn

# ---------------------------------------------------------------------------------------
# Programs and compiled rules.
# ---------------------------------------------------------------------------------------

_PY_ERRORS: Final = (
    TypeError,
    ValueError,
    AttributeError,
    KeyError,
    IndexError,
    OverflowError,
    ZeroDivisionError,
)


class Program:
    """A compiled CEL expression, ready to evaluate against ``self``/``oldSelf``."""

    __slots__ = ("_conv", "_fn", "result_type", "source", "uses_old_self")

    def __init__(
        self, source: str, fn: Fn, result_type: T, uses_old_self: bool, self_type: T
    ) -> None:
        self.source = source
        self._fn = fn
        self.result_type = result_type
        self.uses_old_self = uses_old_self
        self._conv = converter(self_type)

    def run(self, env: dict[str, Any]) -> Any:
        """Evaluate against an environment of declared variables (`compile_env`).

        Raises:
            CelEvalError: Evaluation failed.
        """
        return _guarded(self._fn, env)

    def evaluate(
        self,
        self_value: Any,
        old_value: Any = None,
        *,
        has_old: bool = False,
        optional: bool = False,
    ) -> Any:
        """Evaluate the expression.

        Args:
            self_value: The value of ``self`` (decoded JSON).
            old_value: The value of ``oldSelf``, if ``has_old``.
            has_old: Whether there is an old value.
            optional: Whether ``oldSelf`` is an optional (``optionalOldSelf: true``).

        Returns:
            The result (``True``/``False`` for rules).

        Raises:
            CelEvalError: Evaluation failed (no such key, overflow, no such overload...).
        """
        conv = self._conv
        env: dict[str, Any] = {
            "self": self_value if conv is None or self_value is None else conv(self_value)
        }
        if self.uses_old_self:
            old = old_value if conv is None or old_value is None else conv(old_value)
            if optional:
                env["oldSelf"] = Optional(True, old) if has_old else NONE
            elif has_old:
                env["oldSelf"] = old
        return _guarded(self._fn, env)


def _guarded(fn: Fn, env: dict[str, Any]) -> Any:
    """Run a compiled expression; Python's own errors become CEL evaluation errors."""
    try:
        return fn(env)
    except CelEvalError:
        raise
    except RecursionError:
        raise CelEvalError("max recursion depth exceeded") from None
    except _PY_ERRORS as e:
        raise CelEvalError(f"no such overload: {e}") from None


def compile_expression(
    source: str, self_type: T | None = None, *, optional_old_self: bool = False
) -> Program:
    """Compile a CEL expression where ``self`` and ``oldSelf`` have the given type.

    Args:
        source: The expression.
        self_type: The static type of ``self`` (``None`` for dynamic).
        optional_old_self: Type ``oldSelf`` as an optional.

    Returns:
        The program.

    Raises:
        CelCompileError: The expression does not parse or does not type-check; the message
            is cel-go's issue text (``ERROR: <input>:1:5: undefined field 'x'`` ...).
    """
    st = self_type or DYN
    old_t = T("optional", st) if optional_old_self else st
    compiler = Compiler(source, st, old_t)
    fn, result_t = _compile(source, compiler)
    return Program(source, fn, result_t, compiler.uses_old_self, st)


def compile_env(
    source: str,
    decls: Mapping[str, T],
    *,
    lazy: Mapping[str, T] | None = None,
    constructors: bool = False,
) -> Program:
    """Compile an expression over declared variables (admission's ``object``, ``request``...).

    Args:
        source: The expression.
        decls: The variables in scope and their static types.
        lazy: The ``variables.<name>`` in scope (evaluated by ``env["variables"].get``).
        constructors: Allow ``Object{...}`` and ``JSONPatch{...}`` (mutating policies).

    Returns:
        The program; evaluate it with `Program.run`.

    Raises:
        CelCompileError: The expression does not parse or does not type-check.
    """
    compiler = Compiler(source, DYN, DYN, decls=decls, lazy=lazy, constructors=constructors)
    fn, result_t = _compile(source, compiler)
    return Program(source, fn, result_t, False, DYN)


def _compile(source: str, compiler: Compiler) -> tuple[Fn, T]:
    """Parse and check ``source`` with ``compiler``; `CelCompileError` with cel-go's issue."""
    tree = _parse_or_raise(source)
    try:
        return compiler.compile(tree)
    except CompileFailedError as e:
        raise CelCompileError(str(e)) from None
    except RecursionError:
        raise CelCompileError(issue(source, 1, 1, "expression recursion limit exceeded")) from None


def _parse_or_raise(source: str) -> Any:
    try:
        return parse_cel(source)
    except CELParseError as e:
        line = getattr(e, "line", None) or 1
        col = getattr(e, "column", None) or 1
        detail = str(e.args[0]).strip().splitlines()[0] if e.args else "syntax error"
        raise CelCompileError(
            issue(source, line, col, f"Syntax error: {_syntax_message(source, detail)}")
        ) from None


def _syntax_message(source: str, detail: str) -> str:
    if not source.strip():
        return "mismatched input '<EOF>'"
    return f"unexpected input near {detail.strip()!r}" if detail else "syntax error"


@dataclass(slots=True)
class CompiledRule:
    """One ``x-kubernetes-validations`` entry, compiled.

    Attributes:
        rule: The raw rule dict (``rule``, ``message``, ``messageExpression``, ``reason``,
            ``fieldPath``, ``optionalOldSelf``).
        program: The compiled rule, or None if it is empty or failed to compile.
        error: The compilation error detail as kube-apiserver reports it
            (``compilation failed: ERROR: ...``), or None.
        error_required: Whether the error is of kind Required (else Invalid).
        message_program: The compiled ``messageExpression``, if any.
        message_error: The ``messageExpression`` compilation error detail, or None.
        uses_old_self: Whether the rule is a transition rule (references ``oldSelf``).
        init_error: Whether the error is that the schema node cannot carry rules at all.
        field_path: The normalized ``fieldPath`` (set by the schema module).
    """

    rule: dict[str, Any]
    program: Program | None = None
    error: str | None = None
    error_required: bool = False
    message_program: Program | None = None
    message_error: str | None = None
    uses_old_self: bool = False
    init_error: bool = False
    field_path: str = ""


def _compile_rule(rule: dict[str, Any], self_type: T) -> CompiledRule:
    out = CompiledRule(rule)
    text = rule.get("rule")
    if not isinstance(text, str) or not text.strip():
        return out
    optional = rule.get("optionalOldSelf") is True
    try:
        program = compile_expression(text, self_type, optional_old_self=optional)
    except CelCompileError as e:
        out.error = f"compilation failed: {e}"
        return out
    if program.result_type.kind not in ("bool", "dyn"):
        out.error = "cel expression must evaluate to a bool"
        return out
    out.program = program
    out.uses_old_self = program.uses_old_self
    message_expression = rule.get("messageExpression")
    if isinstance(message_expression, str) and message_expression.strip():
        try:
            message_program = compile_expression(
                message_expression, self_type, optional_old_self=optional
            )
        except CelCompileError as e:
            out.message_error = f"messageExpression compilation failed: {e}"
        else:
            if message_program.result_type.kind not in ("string", "dyn"):
                out.message_error = "must evaluate to a string"
            else:
                out.message_program = message_program
    return out


def compile_rules(schema: dict[str, Any], *, is_resource_root: bool) -> list[CompiledRule]:
    """Compile the ``x-kubernetes-validations`` rules of one schema node.

    ``self`` is typed from the node as kube-apiserver types it (see :func:`schema_type`).

    Args:
        schema: The schema node carrying the rules.
        is_resource_root: Whether the node is the object root or an embedded resource.

    Returns:
        One result per rule, in order.
    """
    rules = schema.get("x-kubernetes-validations")
    raw_rules = [r if isinstance(r, dict) else {} for r in rules] if isinstance(rules, list) else []
    self_type = schema_type(schema, is_resource_root)
    if self_type is None:
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        detail = (
            "rule declared on schema that does not support validation rules type: "
            f"'{schema.get('type', '')}' "
            f"x-kubernetes-preserve-unknown-fields: '{'true' if preserve else 'false'}'"
        )
        return [CompiledRule(r, error=detail, init_error=True) for r in raw_rules]
    return [_compile_rule(r, self_type) for r in raw_rules]
