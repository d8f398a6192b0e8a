"""``python -m examples.optionsrecord``: run the operator, or ``... restore`` a backup."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from examples.optionsrecord import restore
from examples.optionsrecord.controller import operator

if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch ``restore`` to the restore command; run the operator otherwise."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["restore"]:
        return restore.main(args[1:])
    operator.main(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
