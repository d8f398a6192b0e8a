"""Finding the user's code: ``module[:attribute]`` to an `Operator` or `CustomResource` classes.

The module is imported the way ``python -m`` would find it: the current directory
comes first on ``sys.path``, then ``PYTHONPATH`` and installed packages. Every way this
can fail (no such module, an exception while importing, no such attribute, an object
that is not an Operator) becomes a `CliError` naming the module and the problem.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyctrl.cli._common import CliError, describe

if TYPE_CHECKING:
    from types import ModuleType

    from pyctrl.app import Operator
    from pyctrl.resource import CustomResource


@dataclass(frozen=True)
class Target:
    """A parsed ``module[:attribute]`` reference.

    Attributes:
        module: Dotted module name, e.g. ``mysrv.__main__``.
        attribute: Dotted attribute path inside the module ("" when not given).
    """

    module: str
    attribute: str = ""

    @classmethod
    def parse(cls, text: str) -> Target:
        """Parse ``module[:attribute]``; raises `CliError` on a malformed reference."""
        module, sep, attribute = text.partition(":")
        parts = module.split(".")
        if not all(part.isidentifier() for part in parts):
            raise CliError(
                f"{text!r} is not MODULE[:ATTRIBUTE] (e.g. mysrv.__main__:operator): "
                f"{module!r} is not a dotted module name"
            )
        if sep and not all(part.isidentifier() for part in attribute.split(".")):
            raise CliError(
                f"{text!r} is not MODULE[:ATTRIBUTE] (e.g. mysrv.__main__:operator): "
                f"{attribute!r} is not an attribute name"
            )
        return cls(module, attribute)

    def __str__(self) -> str:
        return f"{self.module}:{self.attribute}" if self.attribute else self.module


def import_module(name: str) -> ModuleType:
    """Import ``name`` with the current directory on ``sys.path``, as ``python -m`` does."""
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    # The finders cache directory listings; a module written a moment ago must be found.
    importlib.invalidate_caches()
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing == name or name.startswith(missing + "."):
            raise CliError(
                f"cannot import module {name!r}: no module named {missing!r} "
                f"(searched the current directory {here}, PYTHONPATH and installed packages)"
            ) from exc
        raise CliError(f"importing module {name!r} failed: {describe(exc)}") from exc
    except SystemExit as exc:
        raise CliError(
            f"module {name!r} exited (status {exc.code}) while being imported: does it start "
            'its operator at import time, without `if __name__ == "__main__":`?'
        ) from exc
    except Exception as exc:
        raise CliError(f"importing module {name!r} failed: {describe(exc)}") from exc


def _operators_in(module: ModuleType) -> dict[str, Operator]:
    from pyctrl.app import Operator

    found: dict[int, tuple[str, Operator]] = {}
    for attribute, value in vars(module).items():
        if isinstance(value, Operator):
            found.setdefault(id(value), (attribute, value))
    return dict(found.values())


def _resolve(module: ModuleType, target: Target) -> Any:
    value: Any = module
    for part in target.attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            operators = sorted(_operators_in(module))
            hint = (
                f" (its Operators: {', '.join(operators)})"
                if operators
                else " (it defines no Operator)"
            )
            raise CliError(f"module {target.module!r} has no attribute {part!r}{hint}") from None
    return value


def load_operator(target: Target) -> Operator:
    """Import the module and return the `Operator` the target names.

    Without an attribute, the module must hold exactly one Operator.
    """
    from pyctrl.app import Operator

    found = load(target)
    if isinstance(found, Operator):
        return found
    raise CliError(f"module {target.module!r} defines no Operator: {operator_hint(found)}")


def load(target: Target) -> Operator | ModuleType:
    """Import the module; return the target's `Operator`, or the module if it holds none.

    Without an attribute, the module's one Operator is taken.

    Raises:
        CliError: The import failed, the attribute is missing or is not an Operator, or
            no attribute was given and the module holds several Operators.
    """
    from pyctrl.app import Operator

    module = import_module(target.module)
    if target.attribute:
        value = _resolve(module, target)
        if not isinstance(value, Operator):
            raise CliError(
                f"{target} is {_a(value)}, not a pyctrl.app.Operator "
                "(name the Operator, e.g. mysrv.__main__:operator)"
            )
        return value
    operators = _operators_in(module)
    if len(operators) > 1:
        names = ", ".join(f"{target.module}:{name}" for name in sorted(operators))
        raise CliError(f"module {target.module!r} holds several Operators: name one of {names}")
    if operators:
        return next(iter(operators.values()))
    return module


def operator_hint(module: ModuleType) -> str:
    """How to name an Operator; for a package with a ``__main__``, an example there.

    The ``__main__`` is not imported to look: an unguarded one would start its program.
    """
    hint = "name one as MODULE:ATTRIBUTE"
    if hasattr(module, "__path__"):
        try:
            has_main = importlib.util.find_spec(f"{module.__name__}.__main__") is not None
        except (ImportError, ValueError):
            has_main = False
        if has_main:
            hint += f", e.g. {module.__name__}.__main__:operator"
    return hint


def custom_resources(module: ModuleType) -> list[type[CustomResource]]:
    """The concrete `CustomResource` classes defined in ``module`` or its submodules.

    Classes imported from elsewhere (another package's types) are left out: their
    CRDs belong to that package.
    """
    from pyctrl.resource import CustomResource

    prefix = module.__name__ + "."
    found: dict[int, type[CustomResource]] = {}
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and issubclass(value, CustomResource)
            and "__resource__" in value.__dict__
            and (value.__module__ == module.__name__ or value.__module__.startswith(prefix))
        ):
            found.setdefault(id(value), value)
    return list(found.values())


def _a(value: Any) -> str:
    if isinstance(value, type):
        return f"the class {value.__qualname__}"
    kind = type(value).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return f"{article} {kind}"
