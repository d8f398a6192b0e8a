"""``python -m examples.airconditioner``: run the air conditioner operator."""

from __future__ import annotations

from examples.airconditioner.controller import operator

if __name__ == "__main__":
    operator.main()
