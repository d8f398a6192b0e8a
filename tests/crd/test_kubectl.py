"""Generated CRD YAML through the real kubectl, against the embedded API server."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import pytest

from pyctrl.crd import crds_for, to_yaml
from pyctrl.envtest import Environment
from tests.crd.models import ClusterPool, MySrv, MySrvV1alpha1
from tests.kubectl import kubectl_path

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

pytestmark = pytest.mark.kubectl


MYSRV = """\
apiVersion: myapp.example.com/v1
kind: MySrv
metadata: {name: web, namespace: default}
spec:
  name: srv
  ports: [{name: http, port: 8080}]
"""


class Kubectl:
    """Runs kubectl against one environment."""

    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig

    async def __call__(self, *args: str, stdin: str = "") -> tuple[int, str, str]:
        process = await asyncio.create_subprocess_exec(
            kubectl_path(),
            "--kubeconfig",
            self.kubeconfig,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(30):
            out, err = await process.communicate(stdin.encode())
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()

    async def ok(self, *args: str, stdin: str = "") -> str:
        code, out, err = await self(*args, stdin=stdin)
        assert code == 0, err
        return out


@pytest.fixture
async def kubectl(tmp_path: Path) -> AsyncIterator[Kubectl]:
    """kubectl bound to a fresh embedded API server with the generated CRDs applied."""
    async with Environment() as env:
        run = Kubectl(str(env.kubeconfig_path))
        path = tmp_path / "crds.yaml"
        path.write_text(to_yaml(crds_for(MySrv, MySrvV1alpha1, ClusterPool)))
        out = await run.ok("apply", "-f", str(path))
        assert out.split("\n")[:2] == [
            "customresourcedefinition.apiextensions.k8s.io/clusterpools.infra.example.com created",
            "customresourcedefinition.apiextensions.k8s.io/mysrvs.myapp.example.com created",
        ]
        await run.ok(
            "wait", "--for=condition=Established", "crd/mysrvs.myapp.example.com", "--timeout=20s"
        )
        yield run


async def test_apply_creates_objects_defaulted_by_the_schema(kubectl: Kubectl) -> None:
    """An object applied with kubectl gets the model's defaults from the generated schema."""
    await kubectl.ok("apply", "-f", "-", stdin=MYSRV)
    obj: dict[str, Any] = json.loads(
        await kubectl.ok("get", "mysrv", "web", "-n", "default", "-o", "json")
    )
    assert obj["spec"] == {
        "name": "srv",
        "port": 80,
        "replicas": 1,
        "mode": "safe",
        "labels": {},
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "autoscaling": {"minReplicas": 1, "maxReplicas": 3},
    }


async def test_short_name_and_printer_columns(kubectl: Kubectl) -> None:
    """kubectl finds the kind by its short name and prints the declared columns."""
    await kubectl.ok("apply", "-f", "-", stdin=MYSRV)
    table = await kubectl.ok("get", "ms", "-n", "default")
    header, row = table.splitlines()[:2]
    assert header.split() == ["NAME", "PORT", "MODE", "AGE"]
    assert row.split()[:3] == ["web", "80", "safe"]


async def test_invalid_objects_are_rejected_with_schema_messages(kubectl: Kubectl) -> None:
    """Bounds and CEL rules from the Python model reject bad objects through kubectl."""
    bad = MYSRV.replace("port: 8080}", "port: 80000}") + (
        "  autoscaling: {minReplicas: 5, maxReplicas: 1}\n"
    )
    code, _, err = await kubectl("apply", "-f", "-", stdin=bad)
    assert code == 1
    assert "spec.ports[0].port: Invalid value: 80000" in err
    assert "minReplicas exceeds maxReplicas" in err
