"""``python -m examples.configmapcopy``: run the ConfigMap copier against the hub."""

from __future__ import annotations

from examples.configmapcopy.controller import main

if __name__ == "__main__":
    main()
