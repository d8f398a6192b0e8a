"""The MySrv operator with --leader-elect and --namespace on the embedded API server."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import pytest
from examples.mysrv import make_operator
from examples.mysrv.dns import DNSZone

from pyctrl.testing import eventually

from .conftest import EXAMPLES, Kubectl, operator_running

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from pyctrl.envtest import Environment

SAMPLE = EXAMPLES / "mysrv" / "samples" / "myapp_v1alpha1_mysrv.yaml"


@pytest.fixture
def crds() -> Sequence[Any]:
    return [EXAMPLES / "mysrv" / "config" / "crd"]


async def test_leader_elected_operator_reconciles_only_its_namespace(
    env: Environment, kubectl: Kubectl, tmp_path: Path
) -> None:
    """It holds its Lease in --leader-election-namespace and reconciles only --namespace."""
    await kubectl("create", "namespace", "team-a")
    await kubectl("create", "namespace", "operators")
    team_a = Kubectl(env.kubeconfig_path, tmp_path / "team-a-cache", "team-a")
    flags = ("--leader-elect", "--leader-election-namespace=operators", "--namespace=team-a")
    operator = make_operator(dns=DNSZone(), webhooks=False)
    async with operator_running(operator, env, *flags) as manager:
        async with asyncio.timeout(20):
            await manager.elected()
        assert manager.elector is not None
        lease = await kubectl.json("lease", operator.leader_election_id, "-n", "operators")
        assert lease["spec"]["holderIdentity"] == manager.elector.identity
        # The one outside --namespace first: had it been watched, it would be reconciled
        # before the one inside, which the single worker takes after it.
        await kubectl("apply", "-f", str(SAMPLE))
        await team_a("apply", "-f", str(SAMPLE))

        async def reconciled_in_team_a() -> bool:
            mysrv = await team_a.json("mysrv", "mysrv-sample")
            generation = mysrv["metadata"]["generation"]
            return bool(mysrv.get("status", {}).get("observedGeneration") == generation)

        await eventually(reconciled_in_team_a)
        outside = await kubectl.json("mysrv", "mysrv-sample")
        assert "observedGeneration" not in outside.get("status", {})
        assert (await kubectl("get", "deployment", "mysrv-sample", check=False)).code != 0
