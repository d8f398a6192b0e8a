"""/debug is not served unauthenticated beyond loopback unless explicitly allowed."""

from __future__ import annotations

import re

import pytest
from kubernetes_asyncio.client import Configuration
from structlog.testing import capture_logs

from pyctrl.errors import ConfigError
from pyctrl.filters import with_authentication_and_authorization
from pyctrl.manager import Manager, Options
from pyctrl.metricsserver import Options as MetricsServerOptions
from pyctrl.metricsserver import is_loopback

CONFIG = Configuration(host="https://cluster.invalid")


@pytest.mark.parametrize("address", [":8082", "0.0.0.0:8082", "10.0.0.7:8082", "[::]:8082"])
def test_unauthenticated_debug_on_a_reachable_address_is_refused(address: str) -> None:
    """Without a filter, a debug address others can reach is a ConfigError naming the ways out."""
    with pytest.raises(ConfigError, match=r"--metrics-secure.*loopback.*--debug-allow"):
        Manager(CONFIG, Options(debug_bind_address=address))
    with pytest.raises(ConfigError, match=re.escape(repr(address))):
        Manager(
            CONFIG,
            Options(debug_bind_address=address, metrics=MetricsServerOptions(secure_serving=True)),
        )


@pytest.mark.parametrize("address", ["127.0.0.1:8082", "localhost:8082", "[::1]:8082", "0", ""])
def test_loopback_or_disabled_debug_is_served_without_authentication(address: str) -> None:
    """On loopback (reached with kubectl port-forward) or off, nothing is refused."""
    with capture_logs() as logs:
        Manager(CONFIG, Options(debug_bind_address=address))
    assert not [line for line in logs if "/debug" in line["event"]]


def test_debug_behind_the_filter_may_listen_anywhere() -> None:
    """With the authn/authz filter, /debug is behind the same check as secure metrics."""
    metrics = MetricsServerOptions(
        secure_serving=True, filter_provider=with_authentication_and_authorization
    )
    Manager(CONFIG, Options(debug_bind_address=":8082", metrics=metrics))


def test_allowing_it_explicitly_serves_it_with_a_warning() -> None:
    """debug_allow_unauthenticated opts out, and says so in the log."""
    with capture_logs() as logs:
        Manager(CONFIG, Options(debug_bind_address=":8082", debug_allow_unauthenticated=True))
    [warning] = [line for line in logs if "/debug" in line["event"]]
    assert warning["log_level"] == "warning"
    assert "without authentication" in warning["event"]


def test_the_operator_flags_say_the_same() -> None:
    """An Operator's --debug-bind-address needs --metrics-secure, loopback or the opt-out."""
    from examples.mysrv import operator

    refused = operator.parser().parse_args(["--debug-bind-address=:8082"])
    with pytest.raises(ConfigError, match="debug bind address"):
        Manager(CONFIG, _options(operator, refused))
    for flags in (
        ["--debug-bind-address=:8082", "--metrics-secure"],
        ["--debug-bind-address=127.0.0.1:8082"],
        ["--debug-bind-address=:8082", "--debug-allow-unauthenticated"],
    ):
        Manager(CONFIG, _options(operator, operator.parser().parse_args(flags)))


def _options(operator: object, args: object) -> Options:
    from pyctrl.app._flags import manager_options

    return manager_options(operator, args)  # type: ignore[arg-type]


def test_loopback_hosts() -> None:
    """localhost, 127.0.0.0/8 and ::1 are loopback; names and other addresses are not."""
    assert all(map(is_loopback, ["localhost", "127.0.0.1", "127.3.4.5", "::1", "[::1]"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "example.com", "10.1.2.3"]))
