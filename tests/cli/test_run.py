"""``pyctrl run``: an Operator's main with the remaining arguments."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING, Any

from pyctrl.client import Client
from pyctrl.crd import crd_for
from pyctrl.envtest import Environment
from pyctrl.errors import NotFoundError
from pyctrl.meta import Condition, GroupVersionKind, is_status_condition_true
from pyctrl.resource import Unstructured

from .conftest import one_line_error, subprocess_env

if TYPE_CHECKING:
    from .conftest import Workspace

GADGET = GroupVersionKind("gadgets.example.com", "v1", "Gadget")


def test_run_passes_the_remaining_arguments_to_the_operator(workspace: Workspace) -> None:
    """`--help` after the target is the operator's own help, not pyctrl's."""
    workspace.operator_module()
    result = workspace.invoke("run", "gadgets:operator", "--help")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("usage: gadget-operator [-h] [--kubeconfig KUBECONFIG]")
    assert "--leader-elect" in result.stdout


def test_run_rejects_an_unknown_operator_flag(workspace: Workspace) -> None:
    """An operator flag that does not exist is the operator parser's usage error."""
    workspace.operator_module()
    result = workspace.invoke("run", "gadgets:operator", "--bogus")
    assert result.exit_code == 2
    assert "gadget-operator: error: unrecognized arguments: --bogus" in result.stderr


def test_run_reports_a_missing_kubeconfig_in_one_line(workspace: Workspace) -> None:
    """A configuration problem ends the command with one error line naming the file."""
    workspace.operator_module()
    missing = workspace.root / "missing-kubeconfig"
    error = one_line_error(
        workspace.invoke("run", "gadgets:operator", "--kubeconfig", str(missing))
    )
    assert str(missing) in error


def test_run_reports_a_target_that_is_not_an_operator(workspace: Workspace) -> None:
    """The same import and attribute errors as `generate`, before anything runs."""
    workspace.operator_module()
    error = one_line_error(workspace.invoke("run", "gadgets:Gadget"))
    assert error.startswith("error: gadgets:Gadget is the class Gadget, not a pyctrl.app.Operator")


async def _ready(client: Client, name: str) -> bool:
    try:
        live = await client.get(Unstructured, name, "default", gvk=GADGET)
    except NotFoundError:
        return False
    conditions: list[Any] = live.get_nested("status", "conditions", default=[])
    return is_status_condition_true([Condition.model_validate(c) for c in conditions], "Ready")


async def test_run_reconciles_against_an_api_server_until_sigint(workspace: Workspace) -> None:
    """The operator runs in the foreground, reconciles, and exits 0 on SIGINT."""
    workspace.operator_module()
    gadget_type = workspace.imported("gadgets").Gadget
    async with Environment(crds=[crd_for(gadget_type)]) as env:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "pyctrl.cli",
            "run",
            "gadgets:operator",
            f"--kubeconfig={env.kubeconfig_path}",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
            cwd=workspace.root,
            env=subprocess_env(workspace.root),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            async with Client.from_config(env.config) as client:
                await client.create(Unstructured.new(GADGET, "g1", "default", spec={"size": 2}))
                async with asyncio.timeout(30):
                    while not await _ready(client, "g1"):
                        assert proc.returncode is None, "the operator exited early"
                        await asyncio.sleep(0.05)  # the state lives in the API server
            proc.send_signal(signal.SIGINT)
            async with asyncio.timeout(30):
                _, stderr = await proc.communicate()
            assert proc.returncode == 0, stderr.decode()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()


def test_a_package_without_operator_points_at_its_main_without_running_it(
    workspace: Workspace,
) -> None:
    """For a package with a __main__, the error suggests it, and __main__ is not imported."""
    workspace.module("shop.__init__", "")
    workspace.module("shop.__main__", "open('main-ran', 'w').close()\n")
    error = one_line_error(workspace.invoke("run", "shop"))
    assert error == (
        "error: module 'shop' defines no Operator: name one as MODULE:ATTRIBUTE, "
        "e.g. shop.__main__:operator"
    )
    assert not (workspace.root / "main-ran").exists()
