"""pyctrl.workqueue metrics hook: what the queue reports to a QueueMetrics."""

from __future__ import annotations

from pyctrl import metrics
from pyctrl.clock import FakeClock
from pyctrl.workqueue import NoopQueueMetrics, QueueMetrics, WorkQueue


class RecordingMetrics:
    """A QueueMetrics that keeps every call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[object, ...]] = []

    def added(self) -> None:
        self.calls.append(("added",))

    def depth(self, value: int) -> None:
        self.calls.append(("depth", value))

    def queued_for(self, seconds: float) -> None:
        self.calls.append(("queued_for", seconds))

    def worked_for(self, seconds: float) -> None:
        self.calls.append(("worked_for", seconds))

    def retried(self) -> None:
        self.calls.append(("retried",))

    def in_progress(self, unfinished_seconds: float, longest_seconds: float) -> None:
        self.calls.append(("in_progress", unfinished_seconds, longest_seconds))

    def named(self, name: str) -> list[tuple[object, ...]]:
        return [call for call in self.calls if call[0] == name]


def make_queue() -> tuple[WorkQueue[str], FakeClock, RecordingMetrics]:
    clock = FakeClock()
    recorder = RecordingMetrics()
    return WorkQueue(clock=clock, metrics=recorder), clock, recorder


def test_add_reports_added_and_depth() -> None:
    """A new key reports one add and the new depth; a collapsed re-add reports nothing."""
    queue, _, recorder = make_queue()
    queue.add("a")
    queue.add("a")
    assert recorder.calls == [("added",), ("depth", 1)]


def test_get_reports_depth_and_queue_latency() -> None:
    """Handing out a key reports the lower depth and how long the key waited."""
    queue, clock, recorder = make_queue()
    queue.add("a")
    clock.advance(2.5)
    recorder.calls.clear()
    queue.get_nowait()
    assert recorder.calls == [("depth", 0), ("queued_for", 2.5)]


def test_queue_latency_of_a_delayed_key_counts_from_its_due_time() -> None:
    """A delayed key's queue latency starts when it became ready, not when added."""
    queue, clock, recorder = make_queue()
    queue.add_after("a", 10.0)
    clock.advance(11.0)
    queue.get_nowait()
    assert recorder.named("queued_for") == [("queued_for", 1.0)]


def test_done_reports_work_duration() -> None:
    """done reports how long the key was processed."""
    queue, clock, recorder = make_queue()
    queue.add("a")
    queue.get_nowait()
    clock.advance(0.25)
    queue.done("a")
    assert recorder.named("worked_for") == [("worked_for", 0.25)]


def test_delayed_adds_report_retries() -> None:
    """add_after and add_rate_limited each report a retry."""
    queue, _, recorder = make_queue()
    queue.add_after("a", 1.0)
    queue.add_rate_limited("b")
    assert len(recorder.named("retried")) == 2


def test_work_in_progress_is_reported_every_half_second_then_zeroed() -> None:
    """While keys are processed, unfinished and longest seconds are reported periodically."""
    queue, clock, recorder = make_queue()
    queue.add("a")
    queue.get_nowait()
    clock.advance(1.0)
    assert recorder.named("in_progress") == [("in_progress", 0.5, 0.5), ("in_progress", 1.0, 1.0)]
    queue.done("a")
    assert recorder.named("in_progress")[-1] == ("in_progress", 0.0, 0.0)
    assert clock.pending_timers == 0


def test_no_progress_timer_without_metrics() -> None:
    """The default no-op metrics cost no clock timer."""
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock)
    queue.add("a")
    queue.get_nowait()
    assert clock.pending_timers == 0


def test_shut_down_reports_zero_depth_and_stops_progress_reports() -> None:
    """Dropping queued keys at shutdown reports depth 0 and leaves no timer."""
    queue, clock, recorder = make_queue()
    queue.add("a")
    queue.add("b")
    queue.get_nowait()
    queue.shut_down()
    assert recorder.calls[-1] == ("depth", 0)
    assert clock.pending_timers == 0


def test_noop_and_prometheus_metrics_satisfy_the_protocol() -> None:
    """NoopQueueMetrics and pyctrl.metrics.WorkqueueMetrics both plug into the queue."""
    noop: QueueMetrics = NoopQueueMetrics()
    prometheus: QueueMetrics = metrics.WorkqueueMetrics("workqueue-protocol-test")
    assert isinstance(noop, QueueMetrics)
    assert isinstance(prometheus, QueueMetrics)
    assert isinstance(RecordingMetrics(), QueueMetrics)
