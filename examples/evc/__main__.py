"""``python -m examples.evc``: run the EphemeralVolumeClaim operator."""

from __future__ import annotations

from examples.evc.controller import operator

if __name__ == "__main__":
    operator.main()
