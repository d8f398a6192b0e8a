"""docs/cli.md: the RBAC table and the extra_rules example say what `pyctrl generate` writes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubernetes_asyncio.client import V1ConfigMap, V1Deployment

from pyctrl.app import Operator
from pyctrl.builder import controller_managed_by
from pyctrl.handler import EnqueueRequestsFromMapFunc
from pyctrl.reconcile import Request, Result
from tests.manager.conftest import Widget

if TYPE_CHECKING:
    from pyctrl.manager import Manager

WRITE = ["create", "update", "patch", "delete"]
DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


class Nothing:
    async def reconcile(self, request: Request) -> Result:
        return Result()


def setup(manager: Manager) -> None:
    """A setup with each row of the page's table: for_, owns and watches."""
    (
        controller_managed_by(manager)
        .for_(Widget)
        .owns(V1Deployment)
        .watches(V1ConfigMap, EnqueueRequestsFromMapFunc(lambda obj: []))
        .complete(Nothing())
    )


def rbac_example() -> Operator:
    """The page's extra_rules example, run with this module's Widget and setup."""
    section = DOC.read_text().split("### RBAC: derived from `setup()`", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert block is not None
    namespace: dict[str, Any] = {"MySrv": Widget, "setup": setup}
    exec(compile(block.group(1), str(DOC), "exec", dont_inherit=True), namespace)
    operator = namespace["operator"]
    assert isinstance(operator, Operator)
    return operator


async def test_the_generated_role_is_the_pages_table_plus_extra_rules() -> None:
    """role.yaml grants what the table says for for_/owns/watches, then the extra rules."""
    files = await rbac_example().manifests()
    [role] = files["rbac/role.yaml"]
    rules = [(r["apiGroups"], r["resources"], r["verbs"]) for r in role["rules"]]
    assert rules == [
        ([""], ["configmaps"], ["get", "list", "watch"]),
        (["apps"], ["deployments"], sorted(["get", "list", "watch", *WRITE])),
        (["test.pyctrl.dev"], ["widgets"], ["get", "list", "patch", "update", "watch"]),
        (["test.pyctrl.dev"], ["widgets/finalizers"], ["update"]),
        (["test.pyctrl.dev"], ["widgets/status"], ["get", "patch", "update"]),
        (["", "events.k8s.io"], ["events"], ["create", "patch"]),
        ([""], ["secrets"], ["get", "list", "watch"]),
    ]
