"""Prometheus metrics, under controller-runtime's names.

`registry` is the process's metrics registry, like controller-runtime's
``metrics.Registry``: the Manager serves it on ``/metrics`` (port 8080 by default), and
operators register their own collectors in it::

    from prometheus_client import Gauge
    from pyctrl import metrics

    room_temperature = Gauge(
        "room_temperature_celsius", "Current room temperature", ["room"],
        registry=metrics.registry,
    )

Reconcile results are ``success``, ``error``, ``requeue`` and ``requeue_after``. The
metrics pyctrl itself publishes keep the names dashboards and alerts written for
controller-runtime already use:

| metric | labels |
| --- | --- |
| ``controller_runtime_reconcile_total`` | controller, result |
| ``controller_runtime_reconcile_errors_total`` | controller |
| ``controller_runtime_terminal_reconcile_errors_total`` | controller |
| ``controller_runtime_reconcile_panics_total`` | controller |
| ``controller_runtime_reconcile_time_seconds`` | controller |
| ``controller_runtime_reconcile_triggers_total`` | controller, trigger |
| ``controller_runtime_reconcile_timeouts_total`` | controller |
| ``controller_runtime_max_concurrent_reconciles`` | controller |
| ``controller_runtime_active_workers`` | controller |
| ``workqueue_depth``, ``workqueue_adds_total``, ``workqueue_retries_total`` | name, controller |
| ``workqueue_queue_duration_seconds``, ``workqueue_work_duration_seconds`` | name, controller |
| ``workqueue_unfinished_work_seconds`` | name, controller |
| ``workqueue_longest_running_processor_seconds`` | name, controller |
| ``leader_election_master_status`` | name |
| ``rest_client_requests_total`` | code, method, host |
| ``pyctrl_lease_fenced_writes_total`` | method |
| ``controller_runtime_webhook_requests_total`` | webhook, code |
| ``controller_runtime_webhook_latency_seconds`` | webhook |
| ``controller_runtime_webhook_requests_in_flight`` | webhook |
| ``controller_runtime_webhook_panics_total`` | (none) |
| ``controller_runtime_conversion_webhook_panics_total`` | (none) |
| ``pyctrl_informer_synced``, ``pyctrl_informer_healthy`` | gvk |
| ``pyctrl_informer_reconnects_total`` | gvk |
| ``pyctrl_daemons_running``, ``pyctrl_daemon_crashes_total`` | daemon |
| ``pyctrl_cache_own_write_waits_total`` | gvk, result (caught_up, timeout) |
| ``pyctrl_cluster_reconcile_total`` | controller, cluster (engaged clusters' reconciles) |
| ``pyctrl_engaged_clusters`` | (none) |
| ``pyctrl_cluster_engagements_total`` | cluster, event (engaged, disengaged, failed) |

`WorkqueueMetrics` and `ReconcileMetrics` are the recording ends the workqueue and
controllers call; they bind the labels once.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = [
    "CONTENT_TYPE_LATEST",
    "ReconcileMetrics",
    "WorkqueueMetrics",
    "active_workers",
    "cache_own_write_waits_total",
    "cluster_engagements_total",
    "cluster_reconcile_total",
    "conversion_webhook_panics_total",
    "daemon_crashes_total",
    "daemons_running",
    "engaged_clusters",
    "exposition",
    "informer_healthy",
    "informer_reconnects_total",
    "informer_synced",
    "leader_election_master_status",
    "lease_fenced_writes_total",
    "max_concurrent_reconciles",
    "reconcile_errors_total",
    "reconcile_panics_total",
    "reconcile_time_seconds",
    "reconcile_timeouts_total",
    "reconcile_total",
    "reconcile_triggers_total",
    "registry",
    "rest_client_requests_total",
    "terminal_reconcile_errors_total",
    "webhook_latency_seconds",
    "webhook_panics_total",
    "webhook_requests_in_flight",
    "webhook_requests_total",
    "workqueue_adds_total",
    "workqueue_depth",
    "workqueue_longest_running_processor_seconds",
    "workqueue_queue_duration_seconds",
    "workqueue_retries_total",
    "workqueue_unfinished_work_seconds",
    "workqueue_work_duration_seconds",
]

registry = CollectorRegistry(auto_describe=True)
"""The registry served on ``/metrics``; register operator metrics here."""

# Buckets as controller-runtime's (reconcile: 5 ms .. 60 s; workqueue: 1 ns .. 10 s ... 1000 s).
_RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
    0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15,
    20, 25, 30, 40, 50, 60,
)  # fmt: skip
_QUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 4))
_WEBHOOK_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

reconcile_total = Counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller",
    ["controller", "result"],
    registry=registry,
)
reconcile_errors_total = Counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller",
    ["controller"],
    registry=registry,
)
terminal_reconcile_errors_total = Counter(
    "controller_runtime_terminal_reconcile_errors_total",
    "Total number of terminal reconciliation errors per controller",
    ["controller"],
    registry=registry,
)
reconcile_panics_total = Counter(
    "controller_runtime_reconcile_panics_total",
    "Total number of reconciliation panics (unexpected exceptions) per controller",
    ["controller"],
    registry=registry,
)
reconcile_time_seconds = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=_RECONCILE_BUCKETS,
    registry=registry,
)
reconcile_triggers_total = Counter(
    "controller_runtime_reconcile_triggers_total",
    "Total number of reconciliations per controller, by the kind of trigger that queued them "
    "(create, update, delete, resync, requeue_after, retry, timer...)",
    ["controller", "trigger"],
    registry=registry,
)
reconcile_timeouts_total = Counter(
    "controller_runtime_reconcile_timeouts_total",
    "Total number of reconciliations cancelled by the controller's reconcile timeout",
    ["controller"],
    registry=registry,
)
max_concurrent_reconciles = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
    registry=registry,
)
active_workers = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    ["controller"],
    registry=registry,
)
workqueue_depth = Gauge(
    "workqueue_depth", "Current depth of workqueue", ["name", "controller"], registry=registry
)
workqueue_adds_total = Counter(
    "workqueue_adds_total",
    "Total number of adds handled by workqueue",
    ["name", "controller"],
    registry=registry,
)
workqueue_queue_duration_seconds = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    ["name", "controller"],
    buckets=_QUEUE_BUCKETS,
    registry=registry,
)
workqueue_work_duration_seconds = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes",
    ["name", "controller"],
    buckets=_QUEUE_BUCKETS,
    registry=registry,
)
workqueue_unfinished_work_seconds = Gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed "
    "by work_duration. Large values indicate stuck threads.",
    ["name", "controller"],
    registry=registry,
)
workqueue_longest_running_processor_seconds = Gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    ["name", "controller"],
    registry=registry,
)
workqueue_retries_total = Counter(
    "workqueue_retries_total",
    "Total number of retries handled by workqueue",
    ["name", "controller"],
    registry=registry,
)
leader_election_master_status = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
    "1 indicates master. 'name' is the string used to identify the lease.",
    ["name"],
    registry=registry,
)
rest_client_requests_total = Counter(
    "rest_client_requests_total",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"],
    registry=registry,
)
cluster_reconcile_total = Counter(
    "pyctrl_cluster_reconcile_total",
    "Reconciles of requests of an engaged (not the local) cluster, per controller and cluster.",
    ["controller", "cluster"],
    registry=registry,
)
engaged_clusters = Gauge(
    "pyctrl_engaged_clusters",
    "Clusters a manager has engaged (besides its local cluster).",
    registry=registry,
)
cluster_engagements_total = Counter(
    "pyctrl_cluster_engagements_total",
    "Clusters engaged, disengaged, or failed and dropped, per cluster.",
    ["cluster", "event"],
    registry=registry,
)
lease_fenced_writes_total = Counter(
    "pyctrl_lease_fenced_writes_total",
    "Number of writes the client refused because this process's hold on its Lease ended.",
    ["method"],
    registry=registry,
)
webhook_requests_total = Counter(
    "controller_runtime_webhook_requests_total",
    "Total number of admission requests by HTTP status code.",
    ["webhook", "code"],
    registry=registry,
)
webhook_latency_seconds = Histogram(
    "controller_runtime_webhook_latency_seconds",
    "Histogram of the latency of processing admission requests",
    ["webhook"],
    buckets=_WEBHOOK_BUCKETS,
    registry=registry,
)
webhook_requests_in_flight = Gauge(
    "controller_runtime_webhook_requests_in_flight",
    "Current number of admission requests being served.",
    ["webhook"],
    registry=registry,
)
webhook_panics_total = Counter(
    "controller_runtime_webhook_panics_total",
    "Total number of webhook panics",
    registry=registry,
)
conversion_webhook_panics_total = Counter(
    "controller_runtime_conversion_webhook_panics_total",
    "Total number of conversion webhook panics",
    registry=registry,
)
informer_synced = Gauge(
    "pyctrl_informer_synced",
    "1 once the informer for a type has listed and is watching, else 0.",
    ["gvk"],
    registry=registry,
)
informer_healthy = Gauge(
    "pyctrl_informer_healthy",
    "1 while the informer's watch is established or recovering within its budget, else 0.",
    ["gvk"],
    registry=registry,
)
informer_reconnects_total = Counter(
    "pyctrl_informer_reconnects_total",
    "Number of times an informer re-established its watch or re-listed.",
    ["gvk"],
    registry=registry,
)
daemons_running = Gauge(
    "pyctrl_daemons_running", "Number of per-object daemons running.", ["daemon"], registry=registry
)
daemon_crashes_total = Counter(
    "pyctrl_daemon_crashes_total",
    "Number of times a per-object daemon raised (it is restarted with backoff).",
    ["daemon"],
    registry=registry,
)

cache_own_write_waits_total = Counter(
    "pyctrl_cache_own_write_waits_total",
    "Cached reads (and reconciles) that waited for the cache to show the client's own "
    "write, by whether the cache caught up or the wait timed out.",
    ["gvk", "result"],
    registry=registry,
)


def exposition() -> bytes:
    """The registry in Prometheus text format (served with `CONTENT_TYPE_LATEST`)."""
    return generate_latest(registry)


class WorkqueueMetrics:
    """Records one workqueue's metrics under ``name`` and ``controller`` labels."""

    __slots__ = ("_adds", "_depth", "_longest", "_queue", "_retries", "_unfinished", "_work")

    def __init__(self, name: str, controller: str | None = None) -> None:
        labels = (name, controller if controller is not None else name)
        self._depth = workqueue_depth.labels(*labels)
        self._adds = workqueue_adds_total.labels(*labels)
        self._queue = workqueue_queue_duration_seconds.labels(*labels)
        self._work = workqueue_work_duration_seconds.labels(*labels)
        self._unfinished = workqueue_unfinished_work_seconds.labels(*labels)
        self._longest = workqueue_longest_running_processor_seconds.labels(*labels)
        self._retries = workqueue_retries_total.labels(*labels)

    def added(self) -> None:
        """An item was added."""
        self._adds.inc()

    def depth(self, value: int) -> None:
        """The queue now holds ``value`` items."""
        self._depth.set(value)

    def queued_for(self, seconds: float) -> None:
        """An item waited ``seconds`` before a worker took it."""
        self._queue.observe(seconds)

    def worked_for(self, seconds: float) -> None:
        """Processing an item took ``seconds``."""
        self._work.observe(seconds)

    def retried(self) -> None:
        """An item was re-added through the rate limiter."""
        self._retries.inc()

    def in_progress(self, unfinished_seconds: float, longest_seconds: float) -> None:
        """Work in progress: total seconds so far, and the longest-running item's."""
        self._unfinished.set(unfinished_seconds)
        self._longest.set(longest_seconds)


class ReconcileMetrics:
    """Records one controller's reconcile metrics."""

    __slots__ = (
        "_active",
        "_controller",
        "_errors",
        "_panics",
        "_results",
        "_terminal",
        "_time",
        "_timeouts",
        "_triggers",
    )

    def __init__(self, controller: str, max_concurrent: int) -> None:
        self._controller = controller
        # A labels() lookup takes a lock and builds a key: resolve each child once.
        self._results: dict[str, Counter] = {}
        self._errors = reconcile_errors_total.labels(controller)
        self._terminal = terminal_reconcile_errors_total.labels(controller)
        self._panics = reconcile_panics_total.labels(controller)
        self._time = reconcile_time_seconds.labels(controller)
        self._active = active_workers.labels(controller)
        self._timeouts = reconcile_timeouts_total.labels(controller)
        self._triggers: dict[str, Counter] = {}
        max_concurrent_reconciles.labels(controller).set(max_concurrent)
        self._active.set(0)
        for result in ("success", "error", "requeue", "requeue_after"):
            # Publish zeros, as controller-runtime does.
            self._results[result] = reconcile_total.labels(controller, result)

    def worker_started(self) -> None:
        """A worker began a reconcile."""
        self._active.inc()

    def worker_finished(self, seconds: float) -> None:
        """A worker finished a reconcile that took ``seconds``."""
        self._active.dec()
        self._time.observe(seconds)

    def result(self, result: str) -> None:
        """Count a reconcile outcome: success, error, requeue or requeue_after."""
        child = self._results.get(result)
        if child is None:
            child = self._results[result] = reconcile_total.labels(self._controller, result)
        child.inc()

    def triggered(self, kind: str) -> None:
        """Count a reconcile by the kind of the trigger that queued it."""
        child = self._triggers.get(kind)
        if child is None:
            child = self._triggers[kind] = reconcile_triggers_total.labels(self._controller, kind)
        child.inc()

    def timed_out(self) -> None:
        """Count a reconcile the reconcile timeout cancelled."""
        self._timeouts.inc()

    def error(self, *, terminal: bool = False, panic: bool = False) -> None:
        """Count a reconcile error, terminal or not; a panic is an unexpected exception."""
        self._errors.inc()
        if terminal:
            self._terminal.inc()
        if panic:
            self._panics.inc()
