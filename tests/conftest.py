"""Fixtures for the whole suite: every test starts from the same process-wide state.

Logging is process-wide: `pyctrl.log.configure` (which an operator's ``run()`` calls) sets
structlog's configuration and the root logger for the rest of the process. A test that
ran an operator in-process used to leave JSON logging behind, which made every later test
render logged exceptions cheaply, and hid an example that only passed that way (structlog's
own default renders each logged exception with rich and every frame's local variables,
which can take a tenth of a second). The session now configures logging once, as an
operator does (console lines, plain tracebacks), and each test gets that configuration
back, whatever the test before it did.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import pytest
import structlog

from pyctrl import log

if TYPE_CHECKING:
    from collections.abc import Iterator


def pytest_configure(config: pytest.Config) -> None:
    """Configure logging for the session as an operator's ``run()`` does (console form)."""
    log.configure(development=True)


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Put structlog's configuration and the root logger back as they were."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.configure(**saved)
    log.reset_context()
    root.handlers[:] = handlers
    root.setLevel(level)
