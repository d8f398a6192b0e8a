"""The breaking changes between the CRDs of two sets, for ``crd check`` and ``generate --check``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl.cli._common import CliError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyctrl.crd import Change

__all__ = ["incompatibilities"]


def incompatibilities(
    old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]], allow: Sequence[str]
) -> list[Change]:
    """Breaking changes of every CRD in ``new`` that ``old`` also has."""
    from pyctrl.crd import breaking_changes

    changes: list[Change] = []
    for name, crd in sorted(new.items()):
        if name in old:
            try:
                changes.extend(breaking_changes(old[name], crd, allow=allow))
            except ValueError as exc:
                raise CliError(str(exc)) from exc
    return changes
