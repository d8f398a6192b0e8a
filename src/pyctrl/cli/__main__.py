"""``python -m pyctrl.cli``: the ``pyctrl`` command without the console script."""

from __future__ import annotations

from pyctrl.cli import main

if __name__ == "__main__":
    main()
