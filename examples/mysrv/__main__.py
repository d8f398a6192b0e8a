"""``python -m examples.mysrv``: run the MySrv operator (``--help`` lists the flags)."""

from __future__ import annotations

from examples.mysrv import operator

if __name__ == "__main__":
    operator.main()
