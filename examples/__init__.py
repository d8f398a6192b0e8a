"""Example operators built with pyctrl; run one with ``python -m examples.<name>``."""
