"""pyctrl.app and pyctrl.builder wiring that needs no API server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from kubernetes_asyncio.client import Configuration, V1ConfigMap

import pyctrl.config
from pyctrl.app import Operator
from pyctrl.builder import controller_managed_by
from pyctrl.handler import EnqueueRequestForObject
from pyctrl.manager import Manager
from pyctrl.reconcile import Request, Result
from pyctrl.source import Channel
from tests.manager.conftest import Widget

if TYPE_CHECKING:
    from pathlib import Path


class Nothing:
    async def reconcile(self, request: Request) -> Result:
        return Result()


def _manager() -> Manager:
    return Manager(Configuration(host="https://cluster.invalid"))


async def test_watches_refuses_a_source_and_points_to_watches_raw_source() -> None:
    """A Source given to watches() is refused, so its handler cannot be silently ignored."""
    builder = controller_managed_by(_manager()).for_(Widget)
    with pytest.raises(TypeError, match="watches_raw_source"):
        builder.watches(Channel(), EnqueueRequestForObject())  # type: ignore[arg-type]


async def test_watches_raw_source_adds_the_source_itself() -> None:
    """watches_raw_source adds the Source as given, next to the for_ watch."""
    manager = _manager()
    channel = Channel()
    controller = (
        controller_managed_by(manager).for_(Widget).watches_raw_source(channel).complete(Nothing())
    )
    assert channel in controller.sources
    assert len(controller.sources) == 2


async def test_duplicate_controller_names_are_refused() -> None:
    """Two controllers with one name in a manager are refused."""
    manager = _manager()
    controller_managed_by(manager).for_(Widget).complete(Nothing())
    with pytest.raises(ValueError, match="already exists"):
        controller_managed_by(manager).for_(Widget).complete(Nothing())


def test_main_reports_a_bad_kubeconfig_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A broken kubeconfig ends the process with one error line and status 1."""
    broken = tmp_path / "kubeconfig"
    broken.write_text("clusters: [this is not a kubeconfig")
    operator = Operator(name="widget", types=[Widget], setup=lambda manager: None)
    with pytest.raises(SystemExit) as exit_info:
        operator.main(["--kubeconfig", str(broken), "--metrics-bind-address", "0"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ")
    assert str(broken) in err
    assert "Traceback" not in err


async def test_rbac_is_derived_from_what_setup_registers() -> None:
    """The reconciled type is readable and updatable, owned types fully managed."""

    def setup(manager: Manager) -> None:
        controller_managed_by(manager).for_(Widget).owns(V1ConfigMap).complete(Nothing())

    rules = {
        (r.api_groups, r.resources): set(r.verbs)
        for r in Operator(name="widget", types=[Widget], setup=setup).rbac_rules(
            await Operator(name="widget", types=[Widget], setup=setup).create_manager(
                Configuration(host="https://cluster.invalid")
            )
        )
    }
    assert rules[(("test.pyctrl.dev",), ("widgets",))] == {
        "get",
        "list",
        "watch",
        "update",
        "patch",
    }
    assert rules[(("test.pyctrl.dev",), ("widgets/status",))] == {"get", "update", "patch"}
    assert rules[(("",), ("configmaps",))] >= {"create", "delete", "get", "list", "watch"}


async def test_leader_election_namespace_flag_and_in_cluster_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--leader-election-namespace sets the Lease namespace; without it, the pod's is used."""
    (tmp_path / "namespace").write_text("widget-ops\n")
    monkeypatch.setattr(pyctrl.config, "SERVICE_ACCOUNT_DIR", tmp_path)
    operator = Operator(name="widget", types=[Widget], setup=lambda manager: None)
    config = Configuration(host="https://cluster.invalid")
    parse = operator.parser().parse_args
    in_pod = await operator.create_manager(config, parse(["--leader-elect"]))
    assert in_pod.options.leader_election_namespace == "widget-ops"
    assert in_pod.options.leader_election_id == "widget.pyctrl.dev"
    flags = ["--leader-elect", "--leader-election-namespace=leases"]
    given = await operator.create_manager(config, parse(flags))
    assert given.options.leader_election_namespace == "leases"


def test_leader_elect_outside_a_cluster_asks_for_the_namespace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--leader-elect outside a cluster without a Lease namespace: one error naming the flag."""
    monkeypatch.setattr(pyctrl.config, "SERVICE_ACCOUNT_DIR", tmp_path / "not-in-a-pod")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://cluster.invalid'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    operator = Operator(name="widget", types=[Widget], setup=lambda manager: None)
    argv = ["--kubeconfig", str(kubeconfig), "--metrics-bind-address", "0", "--leader-elect"]
    with pytest.raises(SystemExit) as exit_info:
        operator.main(argv)
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("error: leader election: not running in a cluster")
    assert "--leader-election-namespace" in err
    assert err.count("\n") == 1


def test_every_operator_flag_has_help() -> None:
    """`--help` explains every flag, --log-level and the --webhook-* ones included."""
    parser = Operator(name="robot", types=[], setup=lambda manager: None).parser()
    undocumented = [a.option_strings for a in parser._actions if not a.help]
    assert undocumented == []
    text = " ".join(parser.format_help().split())
    assert "lowest level logged" in text
    assert "port of the webhook server" in text
    assert "tls.crt and tls.key" in text


def test_an_operator_suffix_is_not_doubled() -> None:
    """Operator robot-operator runs as robot-operator (image, usage), not ...-operator-operator."""
    named = Operator(name="robot-operator", types=[], setup=lambda manager: None)
    assert (named.command_name, named.image, named.namespace) == (
        "robot-operator",
        "robot-operator:latest",
        "robot-operator-system",
    )
    assert named.parser().format_usage().startswith("usage: robot-operator ")
    plain = Operator(name="robot", types=[], setup=lambda manager: None)
    assert (plain.command_name, plain.image) == ("robot-operator", "robot-operator:latest")


async def test_replicas_deploy_a_sharded_ring() -> None:
    """Operator(replicas=3): a 3-replica Deployment running --shard-ring, Leases in RBAC."""

    def setup(manager: Manager) -> None:
        controller_managed_by(manager).for_(Widget).complete(Nothing())

    operator = Operator(name="widget", types=[Widget], setup=setup, replicas=3)
    manifests = await operator.manifests()
    objects = [o for files in manifests.values() for o in files]
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 3
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--shard-ring=widget" in args
    assert "--leader-elect" not in args
    (role,) = [o for o in objects if o["kind"] == "Role"]
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"]}.items() <= role["rules"][
        0
    ].items()
    flags = operator.parser().parse_args(["--shard-ring=widget", "--leader-election-namespace=ops"])
    manager = await operator.create_manager(Configuration(host="https://cluster.invalid"), flags)
    assert manager.shards is not None
    assert manager.shards.options.namespace == "ops"
    assert manager.shards.options.slots == 64
