"""Workqueues: the line of keys a controller's workers take their work from.

Event handlers add keys (controllers use `pyctrl.reconcile.Request`) to a `WorkQueue`;
workers `get` a key, reconcile it, and call `done`. The queue follows client-go's
``util/workqueue`` and controller-runtime's priority queue:

- **A key is queued at most once.** Adding a key that is already queued does nothing
  more than raise its priority or bring its due time forward. Adding a key that a worker
  is processing marks it to be queued again when the worker calls `WorkQueue.done`. So a
  key is never handed to two workers at once, and any number of adds while it waits
  collapse into one reconcile.
- **Priorities.** `WorkQueue.add` takes a priority (default 0); higher goes first,
  first-come first-served within a priority. A re-add with a higher priority promotes a
  queued key; a lower one never demotes it. Initial-list and resync adds use
  `LOW_PRIORITY` (-100) so fresh events are not stuck behind a restart's flood. To keep
  low priorities from starving under sustained load (controller-runtime issue #3496),
  once the oldest ready key has waited ``starvation_timeout`` seconds (default 300), every
  other hand-out takes the oldest ready key whatever its priority.
- **Delays.** `WorkQueue.add_after` queues a key once a delay has passed; of two due
  times for one key the earlier wins. `WorkQueue.add_rate_limited` takes the delay from
  a `RateLimiter`: by default per-key exponential backoff, ``0.005 * 2**failures``
  seconds capped at 1000 s, reset by `WorkQueue.forget`. Other limiters:
  `BucketRateLimiter` (an overall token bucket) and `MaxOfRateLimiter` (the strictest of
  several).
- **Fairness.** A queue made with a ``fairness_key`` (a function of a key: `by_namespace`,
  `by_cluster`, `by_cluster_and_namespace`, or your own) serves the fairness groups of
  each priority in turn, so one tenant's 10,000 keys cannot starve another's single key
  (controller-runtime PR #3261). Priorities, delays, rate limits and deduplication are
  unchanged; without a key the queue is first come, first served within a priority.
- **Provenance.** Every add may carry a `Trigger`: why the key is queued (the event
  kind, the watch, the object that caused it and its resourceVersion). A queue made with
  ``record_triggers=True`` keeps them per key, bounded (the first and last three, and a
  count by kind), and `WorkQueue.triggers` gives the ones that collapsed into the
  hand-out a worker is processing. Without it, triggers are ignored and cost nothing. An
  add that names no trigger records `event_trigger`: the trigger of the event an event
  handler is handling in this task (none outside a handler).
- **Shutdown.** `WorkQueue.shut_down` makes every `WorkQueue.get` raise `ShutDownError`
  and drops queued keys; `WorkQueue.shut_down_with_drain` also waits until every key
  handed out is done.

The queue needs no background task: delayed keys are moved forward by a single timer on
the queue's `pyctrl.clock.Clock`, so tests drive them with a `pyctrl.clock.FakeClock`.
`WorkQueue.statistics` reports depth and work in progress; a `QueueMetrics` receives the
measurements Prometheus's ``workqueue_*`` metrics are made of.

It is asyncio-native and, like asyncio, not thread-safe.
"""

from __future__ import annotations

from pyctrl.workqueue import _triggers
from pyctrl.workqueue._fairness import by_cluster, by_cluster_and_namespace, by_namespace
from pyctrl.workqueue._metrics import NoopQueueMetrics, QueueMetrics
from pyctrl.workqueue._queue import (
    DEFAULT_STARVATION_TIMEOUT,
    LOW_PRIORITY,
    QueueStatistics,
    ShutDown,
    ShutDownError,
    WorkQueue,
)
from pyctrl.workqueue._ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from pyctrl.workqueue._triggers import KEPT_FIRST, KEPT_LAST, Trigger, TriggerKind, Triggers

__all__ = [
    "DEFAULT_STARVATION_TIMEOUT",
    "KEPT_FIRST",
    "KEPT_LAST",
    "LOW_PRIORITY",
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "NoopQueueMetrics",
    "QueueMetrics",
    "QueueStatistics",
    "RateLimiter",
    "ShutDown",
    "ShutDownError",
    "Trigger",
    "TriggerKind",
    "Triggers",
    "WorkQueue",
    "by_cluster",
    "by_cluster_and_namespace",
    "by_namespace",
    "default_controller_rate_limiter",
    "event_trigger",
]

event_trigger = _triggers.event_trigger
"""The trigger of the event a handler is handling in this task: what a bare add records."""
