"""The EphemeralVolumeClaim operator (ported from kopf's walkthrough) end to end with kubectl."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest
from examples.evc import operator, storage_bytes

from .conftest import EXAMPLES, eventually, operator_running

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from pyctrl.envtest import Environment
    from pyctrl.manager import Manager

    from .conftest import Kubectl

EVC = EXAMPLES / "evc"
SAMPLE = EVC / "samples" / "evc_v1_ephemeralvolumeclaim.yaml"


@pytest.fixture
def crds() -> Sequence[Any]:
    return [EVC / "config" / "crd"]


@pytest.fixture
async def manager(env: Environment) -> AsyncIterator[Manager]:
    async with operator_running(operator, env) as running:
        yield running


async def _claim(kubectl: Kubectl, check: Any) -> dict[str, Any]:
    """Wait until the PVC my-claim exists and satisfies ``check``; return it."""
    latest: dict[str, Any] = {}

    async def satisfied() -> bool:
        run = await kubectl("get", "pvc", "my-claim", "-o", "json", check=False)
        if run.code != 0:
            return False
        latest.update(json.loads(run.out))
        return bool(check(latest))

    await eventually(satisfied)
    return latest


def _storage(pvc: dict[str, Any]) -> str:
    return str(pvc["spec"]["resources"]["requests"]["storage"])


@pytest.mark.usefixtures("manager")
async def test_applying_an_evc_creates_an_owned_claim_and_reports_it(kubectl: Kubectl) -> None:
    """kubectl apply of the sample: a PVC of the same name, size and labels, owned by it."""
    await kubectl("apply", "-f", str(SAMPLE))
    pvc = await _claim(kubectl, lambda p: True)
    assert _storage(pvc) == "1G"
    assert pvc["metadata"]["labels"] == {"application": "some-app"}
    (owner,) = pvc["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == (
        "EphemeralVolumeClaim",
        "my-claim",
        True,
    )

    async def reported() -> bool:
        evc = await kubectl.json("evc", "my-claim")
        status: dict[str, Any] = evc.get("status", {})
        return status.get("pvcName") == "my-claim" and status.get("requested") == "1G"

    await eventually(reported)


@pytest.mark.usefixtures("manager")
async def test_growing_the_size_resizes_and_shrinking_is_refused(kubectl: Kubectl) -> None:
    """A larger size is applied to the claim; a smaller one is refused in Resized=False."""
    await kubectl("apply", "-f", str(SAMPLE))
    await _claim(kubectl, lambda p: True)
    await kubectl("patch", "evc", "my-claim", "--type=merge", "-p", '{"spec":{"size":"2G"}}')
    await _claim(kubectl, lambda p: _storage(p) == "2G")
    await kubectl("patch", "evc", "my-claim", "--type=merge", "-p", '{"spec":{"size":"1G"}}')

    async def refused() -> bool:
        evc = await kubectl.json("evc", "my-claim")
        conditions = {c["type"]: c for c in evc.get("status", {}).get("conditions", [])}
        resized: dict[str, Any] = conditions.get("Resized", {})
        return resized.get("status") == "False" and resized.get("observedGeneration") == 3

    await eventually(refused)
    assert _storage(await _claim(kubectl, lambda p: True)) == "2G"


@pytest.mark.usefixtures("manager")
async def test_labels_follow_the_evc_and_foreign_labels_stay(kubectl: Kubectl) -> None:
    """Relabelling the EVC relabels the claim; a label someone else put on the claim stays."""
    await kubectl("apply", "-f", str(SAMPLE))
    await _claim(kubectl, lambda p: True)
    await kubectl("label", "pvc", "my-claim", "backup=daily")
    await kubectl("label", "evc", "my-claim", "owner=me", "application-")
    pvc = await _claim(kubectl, lambda p: "application" not in p["metadata"].get("labels", {}))
    assert pvc["metadata"]["labels"] == {"owner": "me", "backup": "daily"}


async def test_deleting_the_evc_deletes_its_claim(kubectl: Kubectl, manager: Manager) -> None:
    """The garbage collector deletes the claim with its owner (an owner ref, as kopf.adopt set)."""
    await kubectl("apply", "-f", str(SAMPLE))
    await _claim(kubectl, lambda p: True)
    await kubectl("delete", "evc", "my-claim")

    async def gone() -> bool:
        run = await kubectl("get", "pvc", "my-claim", check=False)
        return run.code != 0 and "NotFound" in run.err

    await eventually(gone)


async def test_a_claim_without_size_is_refused_by_the_schema(kubectl: Kubectl) -> None:
    """The CRD requires spec.size as a quantity: the API server refuses what kopf's code did."""
    missing = await kubectl(
        "apply",
        "-f",
        "-",
        stdin={
            "apiVersion": "evc.example.com/v1",
            "kind": "EphemeralVolumeClaim",
            "metadata": {"name": "nosize"},
            "spec": {},
        },
        check=False,
    )
    assert missing.code != 0
    assert "spec.size" in missing.err


def test_storage_bytes_reads_decimal_and_binary_suffixes() -> None:
    """storage_bytes compares 1G, 1Gi and plain numbers by their byte counts."""
    assert storage_bytes("1G") == Decimal(10**9)
    assert storage_bytes("1Gi") == Decimal(2**30)
    assert storage_bytes(1024) == Decimal(1024)
    assert storage_bytes("1.5Ki") == Decimal(1536)
    with pytest.raises(ValueError, match="storage quantity"):
        storage_bytes("lots")
