"""The hook through which a workqueue reports its metrics."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["NoopQueueMetrics", "QueueMetrics"]


@runtime_checkable
class QueueMetrics(Protocol):
    """Receives one workqueue's measurements (an extension point).

    The queue calls these methods as things happen; `pyctrl.metrics.WorkqueueMetrics`
    records them as the Prometheus metrics controller-runtime publishes:

    | method | metric |
    | --- | --- |
    | `added` | ``workqueue_adds_total`` |
    | `depth` | ``workqueue_depth`` |
    | `queued_for` | ``workqueue_queue_duration_seconds`` |
    | `worked_for` | ``workqueue_work_duration_seconds`` |
    | `retried` | ``workqueue_retries_total`` |
    | `in_progress` | ``workqueue_unfinished_work_seconds``, |
    |  | ``workqueue_longest_running_processor_seconds`` |

    Methods must be quick and must not raise: they run inside queue operations.
    """

    def added(self) -> None:
        """A key that was not queued was added (collapsed re-adds do not count)."""
        ...

    def depth(self, value: int) -> None:
        """The number of keys ready to hand out changed to ``value``."""
        ...

    def queued_for(self, seconds: float) -> None:
        """A key was handed out ``seconds`` after it became ready."""
        ...

    def worked_for(self, seconds: float) -> None:
        """A key was marked done ``seconds`` after it was handed out."""
        ...

    def retried(self) -> None:
        """A key was added with a delay (`add_after` or `add_rate_limited`)."""
        ...

    def in_progress(self, unfinished_seconds: float, longest_seconds: float) -> None:
        """Work in progress: the summed and the longest age of the keys being processed.

        Reported every half second while keys are being processed, and once more with
        zeros when none is.
        """
        ...


class NoopQueueMetrics:
    """A `QueueMetrics` that records nothing: the default."""

    __slots__ = ()

    def added(self) -> None:
        """Record nothing."""

    def depth(self, value: int) -> None:
        """Record nothing."""

    def queued_for(self, seconds: float) -> None:
        """Record nothing."""

    def worked_for(self, seconds: float) -> None:
        """Record nothing."""

    def retried(self) -> None:
        """Record nothing."""

    def in_progress(self, unfinished_seconds: float, longest_seconds: float) -> None:
        """Record nothing."""
