"""pyctrl.metrics: controller-runtime's metric names in the pyctrl registry."""

from __future__ import annotations

from prometheus_client import Gauge
from prometheus_client.parser import text_string_to_metric_families

from pyctrl import metrics


def _samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_reconcile_metrics_are_published_under_controller_runtime_names() -> None:
    """ReconcileMetrics publishes zeros at start and counts outcomes afterwards."""
    rm = metrics.ReconcileMetrics("metrics-test-a", max_concurrent=3)
    before = _samples()
    assert (
        before[
            (
                "controller_runtime_reconcile_total",
                (("controller", "metrics-test-a"), ("result", "error")),
            )
        ]
        == 0
    )
    assert (
        before[
            ("controller_runtime_max_concurrent_reconciles", (("controller", "metrics-test-a"),))
        ]
        == 3
    )
    rm.worker_started()
    assert (
        _samples()[("controller_runtime_active_workers", (("controller", "metrics-test-a"),))] == 1
    )
    rm.worker_finished(0.02)
    rm.result("success")
    rm.result("error")
    rm.error(terminal=True)
    rm.error(panic=True)
    after = _samples()
    label = (("controller", "metrics-test-a"),)
    assert after[("controller_runtime_reconcile_total", (*label, ("result", "success")))] == 1
    assert after[("controller_runtime_reconcile_errors_total", label)] == 2
    assert after[("controller_runtime_terminal_reconcile_errors_total", label)] == 1
    assert after[("controller_runtime_reconcile_panics_total", label)] == 1
    assert after[("controller_runtime_reconcile_time_seconds_count", label)] == 1
    assert after[("controller_runtime_active_workers", label)] == 0


def test_workqueue_metrics() -> None:
    """WorkqueueMetrics records adds, depth, latencies, retries and work in progress."""
    wm = metrics.WorkqueueMetrics("metrics-test-q")
    wm.added()
    wm.depth(4)
    wm.queued_for(0.5)
    wm.worked_for(1.5)
    wm.retried()
    wm.in_progress(3.0, 2.0)
    s = _samples()
    label = (("controller", "metrics-test-q"), ("name", "metrics-test-q"))
    assert s[("workqueue_adds_total", label)] == 1
    assert s[("workqueue_depth", label)] == 4
    assert s[("workqueue_queue_duration_seconds_sum", label)] == 0.5
    assert s[("workqueue_work_duration_seconds_sum", label)] == 1.5
    assert s[("workqueue_retries_total", label)] == 1
    assert s[("workqueue_unfinished_work_seconds", label)] == 3.0
    assert s[("workqueue_longest_running_processor_seconds", label)] == 2.0


def test_user_metrics_share_the_registry() -> None:
    """Operators register their own collectors in pyctrl's registry and see them exposed."""
    gauge = Gauge("metrics_test_room_celsius", "room", ["room"], registry=metrics.registry)
    try:
        gauge.labels("A").set(21.5)
        assert _samples()[("metrics_test_room_celsius", (("room", "A"),))] == 21.5
    finally:
        metrics.registry.unregister(gauge)
