"""pyctrl.log: structured output in two formats."""

from __future__ import annotations

import io

import orjson
import pytest

from pyctrl import log


def test_production_output_is_json_with_context() -> None:
    """Production mode writes one JSON object per line with the bound context."""
    out = io.StringIO()
    log.configure(development=False, stream=out)
    with log.bound_context(controller="mysrv", name="web"):
        log.get_logger("pyctrl.test").info("reconciling", step=1)
    record = orjson.loads(out.getvalue().splitlines()[-1])
    assert record["event"] == "reconciling"
    assert record["controller"] == "mysrv"
    assert record["name"] == "web"
    assert record["logger"] == "pyctrl.test"
    assert record["level"] == "info"
    assert record["timestamp"].endswith("Z")


def test_development_output_is_readable() -> None:
    """Development mode writes a console line, not JSON."""
    out = io.StringIO()
    log.configure(development=True, stream=out)
    log.get_logger().warning("drift", name="web")
    line = out.getvalue()
    assert "drift" in line
    assert "name=web" in line
    assert not line.lstrip().startswith("{")


def test_level_filters_lower_levels() -> None:
    """Messages below the configured level are dropped."""
    out = io.StringIO()
    log.configure(level="WARNING", stream=out)
    log.get_logger().info("hidden")
    log.get_logger().error("shown")
    assert "hidden" not in out.getvalue()
    assert "shown" in out.getvalue()


def test_unknown_level_is_refused() -> None:
    """An unknown level name raises ValueError naming it."""
    with pytest.raises(ValueError, match="unknown log level 'LOUD'"):
        log.configure(level="LOUD")


def test_loggers_created_before_configure_follow_it() -> None:
    """A module-level logger made before configure() writes in the configured format."""
    early = log.get_logger("pyctrl.early")
    out = io.StringIO()
    log.configure(development=False, level="INFO", stream=out)
    early.debug("hidden")
    early.info("late config wins")
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    record = orjson.loads(lines[0])
    assert record["event"] == "late config wins"
    assert record["logger"] == "pyctrl.early"


def test_default_stream_is_resolved_at_write_time(capsys: pytest.CaptureFixture[str]) -> None:
    """Without a stream, logs go to the sys.stderr of the moment, not of configure()."""
    log.configure(development=False)
    log.get_logger("pyctrl.late").warning("after swap")
    assert "after swap" in capsys.readouterr().err


@pytest.mark.parametrize("development", [True, False])
def test_tracebacks_carry_no_local_variables(development: bool) -> None:
    """A logged exception shows its traceback but not the values of frame locals."""
    out = io.StringIO()
    log.configure(development=development, stream=out)

    def fail() -> None:
        local_value = "sensitive-local-value"
        raise RuntimeError(f"failed after {len(local_value)} characters")

    try:
        fail()
    except RuntimeError:
        log.get_logger().exception("reconcile failed")
    written = out.getvalue()
    assert "failed after 21 characters" in written
    assert "fail" in written
    assert "sensitive-local-value" not in written
