"""The event-loop watchdog: notices, and names, code that blocks the event loop.

One blocking call on the event loop (``time.sleep``, ``requests.get``, a CPU-bound loop)
stops everything the loop runs: Lease renewals, probes, webhooks, every controller. The
Manager runs a `Watchdog` by default (``Options(watchdog=WatchdogOptions(...))``, None to
turn it off):

- a task on the loop wakes every ``interval`` seconds and records how late it woke in
  ``pyctrl_event_loop_lag_seconds`` (a histogram);
- a thread watches that heartbeat; once it is ``warn_after`` seconds (1 s) old, the loop
  is blocked now, and the thread logs one warning ``event loop blocked`` with the frame
  the loop is stuck in (``at="file.py:42"``, ``function``) and its stack (``frames``),
  innermost last: the line to move into a thread (a plain ``def`` reconciler runs in one,
  `pyctrl.blocking`) or to make async;
- with ``fail_healthz_after`` set, ``/healthz`` (check ``event-loop``) fails for
  ``healthz_window`` seconds after a lag that long, so the kubelet restarts a process
  that keeps stalling. Off by default.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import traceback
from dataclasses import dataclass

from prometheus_client import Histogram

from pyctrl import metrics
from pyctrl.log import get_logger

__all__ = ["Watchdog", "WatchdogOptions", "event_loop_lag_seconds"]

_log = get_logger("pyctrl.watchdog")
_STACK_DEPTH = 20

event_loop_lag_seconds = Histogram(
    "pyctrl_event_loop_lag_seconds",
    "How late the event loop ran a timer: time it spent blocked or busy.",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=metrics.registry,
)


@dataclass(frozen=True)
class WatchdogOptions:
    """How the event-loop watchdog runs (see the module documentation).

    Attributes:
        interval: Seconds between heartbeats of the loop (and lag samples).
        warn_after: A loop blocked this many seconds logs a warning with its stack.
        fail_healthz_after: A lag this long fails ``/healthz`` for ``healthz_window``
            seconds; None (the default) never fails it.
        healthz_window: Seconds ``/healthz`` keeps failing after such a lag.
    """

    interval: float = 0.25
    warn_after: float = 1.0
    fail_healthz_after: float | None = None
    healthz_window: float = 60.0

    def __post_init__(self) -> None:
        for name in ("interval", "warn_after", "healthz_window"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"WatchdogOptions.{name} must be positive, got {value!r}")
        if self.fail_healthz_after is not None and not self.fail_healthz_after > 0:
            raise ValueError(
                f"WatchdogOptions.fail_healthz_after must be positive or None, "
                f"got {self.fail_healthz_after!r}"
            )


class Watchdog:
    """Measures the event loop's lag and reports what blocks it (a runnable).

    Args:
        options: See `WatchdogOptions`.
    """

    def __init__(self, options: WatchdogOptions | None = None) -> None:
        self.options = options or WatchdogOptions()
        self.name = "event-loop-watchdog"
        self._beat = time.monotonic()
        self._loop_thread: int | None = None
        self._stop = threading.Event()
        self._worst_at = -float("inf")  # when a lag past fail_healthz_after was seen
        self._worst = 0.0
        self.warnings = 0
        """How many stalls were reported."""

    async def start(self) -> None:
        """Sample the loop's lag until cancelled, with the watching thread alongside."""
        loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._beat = time.monotonic()
        self._stop.clear()
        thread = threading.Thread(target=self._watch, name="pyctrl-watchdog", daemon=True)
        thread.start()
        interval = self.options.interval
        try:
            while True:
                expected = loop.time() + interval
                self._beat = time.monotonic()
                await asyncio.sleep(interval)
                self._beat = time.monotonic()
                self._observe(max(0.0, loop.time() - expected))
        finally:
            self._stop.set()
            thread.join(timeout=interval + 1)

    def _observe(self, lag: float) -> None:
        event_loop_lag_seconds.observe(lag)
        limit = self.options.fail_healthz_after
        if limit is not None and lag >= limit:
            self._worst, self._worst_at = lag, time.monotonic()

    def check(self) -> None:
        """A ``/healthz`` check: fails within ``healthz_window`` of a lag past the limit."""
        limit = self.options.fail_healthz_after
        if limit is None:
            return
        since = time.monotonic() - self._worst_at
        if since < self.options.healthz_window:
            raise RuntimeError(
                f"the event loop was blocked for {self._worst:.1f}s {since:.0f}s ago "
                f"(limit {limit:g}s)"
            )

    def _watch(self) -> None:
        """The thread: report a heartbeat older than ``warn_after``, once per stall."""
        warn_after = self.options.warn_after
        reported: float | None = None
        while not self._stop.wait(min(self.options.interval, warn_after / 4)):
            beat = self._beat
            blocked = time.monotonic() - beat
            if blocked >= warn_after and reported != beat:
                reported = beat
                try:
                    self._report(blocked)
                except Exception:  # a broken log sink must not end the watch
                    _log.exception("event-loop watchdog could not report a stall")

    def _report(self, blocked: float) -> None:
        frame = sys._current_frames().get(self._loop_thread or 0)
        # Without the source lines: reading them would keep every file on the stack in
        # linecache, megabytes of a long-running operator's memory on a loaded machine.
        stack = traceback.StackSummary()
        if frame is not None:
            stack = traceback.StackSummary.extract(
                traceback.walk_stack(frame), limit=_STACK_DEPTH, lookup_lines=False
            )
            stack.reverse()
        self.warnings += 1
        where = stack[-1] if stack else None
        _log.warning(
            "event loop blocked",
            seconds=round(blocked, 3),
            at=f"{where.filename}:{where.lineno}" if where else "unknown",
            function=where.name if where else "",
            frames=[f"{f.filename}:{f.lineno} in {f.name}" for f in stack],
        )

    def __repr__(self) -> str:
        return f"Watchdog(warn_after={self.options.warn_after:g}s)"
