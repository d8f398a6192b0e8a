"""Fixtures for the whole suite: every test starts from the same process-wide state.

Logging is process-wide: `pyctrl.log.configure` (which an operator's ``run()`` calls) sets
structlog's configuration and the root logger for the rest of the process. A test that
ran an operator in-process used to leave JSON logging behind, which made every later test
render logged exceptions cheaply, and hid an example that only passed that way. Each test
now gets back the configuration the session started with.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest
import structlog

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Put structlog's configuration and the root logger back as they were."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.configure(**saved)
    root.handlers[:] = handlers
    root.setLevel(level)
