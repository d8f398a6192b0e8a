"""Printer columns of ``type: date`` render as an age, as kube-apiserver's table convertor does."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest

from pyctrl._apiserver.endpoints.table import date_cell
from pyctrl.envtest import Environment
from tests.envtest.conftest import unique
from tests.kubectl import Kubectl

if TYPE_CHECKING:
    from pathlib import Path

    from tests.envtest.conftest import Kube

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def crd(group: str) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"events.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Event", "listKind": "EventList", "plural": "events"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "additionalPrinterColumns": [
                        {"name": "Seen", "type": "date", "jsonPath": ".spec.seen"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "seen": {"x-kubernetes-int-or-string": True},
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }


def event(group: str, name: str, seen: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{group}/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "spec": {"seen": seen},
    }


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (stamp(NOW - timedelta(seconds=5)), "5s"),
        (stamp(NOW - timedelta(minutes=3, seconds=2)), "3m2s"),
        (stamp(NOW - timedelta(hours=5, minutes=10)), "5h10m"),
        (stamp(NOW - timedelta(days=10, hours=1)), "10d"),
        ("2024-05-01T11:59:30.75Z", "29s"),
        ("2024-05-01T13:59:00+02:00", "60s"),
        ("", "<unknown>"),
        ("null", "<unknown>"),
        ("yesterday", "<invalid>"),
        ("2024-05-01", "<invalid>"),
        ("2024-05-01 11:00:00Z", "<invalid>"),
        ("2024-05-01T11:00:00", "<invalid>"),
        ("2024-13-01T11:00:00Z", "<invalid>"),
        (stamp(NOW + timedelta(minutes=1)), "<invalid>"),
    ],
)
def test_date_cell(value: str, text: str) -> None:
    """A date cell is the timestamp's HumanDuration age, or <unknown> / <invalid>."""
    assert date_cell(value, NOW) == text


async def test_date_columns_of_a_table_show_ages(env: Environment, kube: Kube, ns: str) -> None:
    """A CRD's date columns are ages in Table answers; a non-string value is an empty cell."""
    group = f"{unique('dates')}.example.com"
    await env.install_crds([crd(group)])
    path = f"/apis/{group}/v1/namespaces/{ns}/events"
    seen = datetime.now(UTC) - timedelta(days=10, hours=1)
    await kube.create_ok(path, event(group, "old", stamp(seen)))
    await kube.create_ok(path, event(group, "odd", "not a time"))
    await kube.create_ok(path, event(group, "number", 7))
    table = await kube.get_ok(path, accept=TABLE)
    rows = {row["cells"][0]: row["cells"][1:] for row in table["rows"]}
    assert rows["old"][0] == "10d"
    assert rows["odd"][0] == "<invalid>"
    assert rows["number"][0] is None
    for cells in rows.values():
        assert re.fullmatch(r"\d+s", cells[1]), cells  # created moments ago
    columns = {c["name"]: c["type"] for c in table["columnDefinitions"]}
    assert columns["Seen"] == "date"


@pytest.mark.needs_builtin_kinds
async def test_kubectl_get_prints_date_columns_as_ages(tmp_path: Path) -> None:
    """`kubectl get` shows a date printer column as an age such as 10d, not a timestamp."""
    group = f"{unique('dates')}.example.com"
    async with Environment(crds=[crd(group)]) as env:
        kubectl = Kubectl(env.kubeconfig_path, tmp_path, f"dates-{uuid.uuid4().hex[:8]}")
        namespace = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": kubectl.namespace},
        }
        await kubectl("apply", "-f", "-", stdin=namespace)
        seen = datetime.now(UTC) - timedelta(days=10, hours=1)
        await kubectl("apply", "-f", "-", stdin=event(group, "old", stamp(seen)))
        lines = (await kubectl("get", f"events.{group}")).out.splitlines()
        await kubectl("delete", "namespace", kubectl.namespace, "--wait=false")
    assert lines[0].split() == ["NAME", "SEEN", "AGE"]
    name, seen_cell, age = lines[1].split()
    assert (name, seen_cell) == ("old", "10d")
    assert re.fullmatch(r"\d+s", age), age  # created moments ago
