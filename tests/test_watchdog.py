"""The event-loop watchdog: lag samples, one warning per stall, the optional /healthz check."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import inspect
import linecache
import time
from typing import TYPE_CHECKING, Any

import pytest
from structlog.testing import capture_logs

from pyctrl.testing import eventually
from pyctrl.watchdog import Watchdog, WatchdogOptions, event_loop_lag_seconds

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from pathlib import Path


def _samples() -> float:
    for metric in event_loop_lag_seconds.collect():
        for sample in metric.samples:
            if sample.name.endswith("_count"):
                return sample.value
    return 0.0


async def _not(check: Coroutine[Any, Any, bool]) -> bool:
    return not await check


async def test_a_stall_warns_once_and_fails_healthz_for_the_window() -> None:
    """A 0.6 s block: one warning at its line, a lag sample, /healthz failing, then passing."""
    watchdog = Watchdog(
        WatchdogOptions(interval=0.05, warn_after=0.2, fail_healthz_after=0.3, healthz_window=1)
    )
    with capture_logs() as logs:
        task = asyncio.create_task(watchdog.start())
        try:
            before = _samples()
            await eventually(lambda: asyncio.sleep(0, _samples() > before))
            watchdog.check()  # no stall yet
            line = inspect.currentframe().f_lineno + 1  # type: ignore[union-attr]
            time.sleep(0.6)  # noqa: ASYNC251  # the stall under test
            reasons: list[str] = []

            async def healthy() -> bool:
                try:
                    watchdog.check()
                except RuntimeError as exc:
                    reasons.append(str(exc))
                    return False
                return True

            await eventually(lambda: asyncio.sleep(0, watchdog.warnings == 1))
            await eventually(lambda: _not(healthy()))  # once the loop sampled the lag
            await eventually(healthy, within=10)  # after healthz_window
            assert "event loop was blocked" in reasons[0]
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    warnings = [r for r in logs if r["event"] == "event loop blocked"]
    assert len(warnings) == 1
    assert warnings[0]["at"] == f"{__file__}:{line}"
    assert warnings[0]["seconds"] >= 0.2


def test_options_are_checked() -> None:
    """Bad thresholds are refused with the field's name."""
    with pytest.raises(ValueError, match="warn_after"):
        WatchdogOptions(warn_after=0)
    with pytest.raises(ValueError, match="fail_healthz_after"):
        WatchdogOptions(fail_healthz_after=-1)


async def test_a_stall_report_reads_no_source_file(tmp_path: Path) -> None:
    """The report names the blocking frame without loading its file into linecache.

    Loaded source lines stay in linecache for the life of the process: megabytes of an
    operator's memory after a few stalls.
    """
    module = tmp_path / "stalling_module_for_watchdog.py"
    module.write_text("import time\n\ndef block():\n    time.sleep(0.6)\n")
    spec = importlib.util.spec_from_file_location("stalling_module_for_watchdog", module)
    assert spec is not None
    assert spec.loader is not None
    stalling = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(stalling)
    watchdog = Watchdog(WatchdogOptions(interval=0.05, warn_after=0.2))
    with capture_logs() as logs:
        task = asyncio.create_task(watchdog.start())
        try:
            before = _samples()
            await eventually(lambda: asyncio.sleep(0, _samples() > before))
            stalling.block()
            await eventually(lambda: asyncio.sleep(0, watchdog.warnings == 1))
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    warnings = [r for r in logs if r["event"] == "event loop blocked"]
    assert warnings[0]["at"] == f"{module}:4"
    # A loaded entry is (size, mtime, lines, name); a lazy one holds only its loader.
    assert len(linecache.cache.get(str(module), ())) < 4
