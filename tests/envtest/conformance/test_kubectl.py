"""kubectl conformance: the real kubectl 1.32 binary against the API server under test.

Every test runs kubectl through the `Environment`'s kubeconfig, in a namespace of its
own, and relies only on documented Kubernetes behaviour, so the same tests pass
against a real cluster: ``USE_EXISTING_CLUSTER=true KUBECONFIG=... pytest -m kubectl``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio
import yaml

from pyctrl.envtest import Environment
from tests.kubectl import Kubectl

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

# One server (or cluster connection) and one kubectl cache for the module, one
# namespace per test: kubectl's discovery and OpenAPI caches stay warm.
# kubectl resolves kinds through root discovery and OpenAPI, which the CRD-only server lacks.
pytestmark = [
    pytest.mark.kubectl,
    pytest.mark.needs_builtin_kinds,
    pytest.mark.asyncio(loop_scope="module"),
]

GROUP = "kubectl.pyctrl.dev"


def widget_crd(
    plural: str = "widgets", kind: str = "Widget", categories: tuple[str, ...] = ("pyctrl",)
) -> dict[str, Any]:
    """A namespaced CRD with printer columns, a status subresource, defaults and an enum."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": [plural[:3]],
                "categories": list(categories),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                        {
                            "name": "Age",
                            "type": "date",
                            "jsonPath": ".metadata.creationTimestamp",
                        },
                    ],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": f"A {kind} for kubectl conformance tests.",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "description": "Desired state.",
                                    "properties": {
                                        "size": {
                                            "type": "integer",
                                            "minimum": 0,
                                            "description": "How big it is.",
                                        },
                                        "color": {
                                            "type": "string",
                                            "enum": ["red", "green", "blue"],
                                            "default": "red",
                                            "description": "Its colour.",
                                        },
                                        "parts": {"type": "array", "items": {"type": "string"}},
                                    },
                                },
                                "status": {
                                    "type": "object",
                                    "properties": {"ready": {"type": "boolean"}},
                                },
                            },
                        }
                    },
                }
            ],
        },
    }


def widget(name: str, size: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size, **spec},
    }


def deployment(name: str, containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": containers},
            },
        },
    }


def service(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {
            "selector": {"app": name},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
        },
    }


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env() -> AsyncIterator[Environment]:
    async with Environment(crds=[widget_crd()]) as environment:
        yield environment


@pytest.fixture(scope="module")
def kube_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kube-cache")


@pytest_asyncio.fixture(loop_scope="module")
async def kubectl(env: Environment, kube_cache: Path) -> AsyncIterator[Kubectl]:
    runner = Kubectl(env.kubeconfig_path, kube_cache, f"kubectl-{uuid.uuid4().hex[:10]}")
    # Not `kubectl create namespace`: typed kubectl commands send protobuf bodies.
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": runner.namespace}}
    await runner("apply", "-f", "-", stdin=namespace)
    yield runner
    await runner("delete", "namespace", runner.namespace, "--wait=false", check=False)


async def _read_line_containing(stream: asyncio.StreamReader, needle: str, seen: list[str]) -> str:
    async with asyncio.timeout(15):
        while True:
            raw = await stream.readline()
            if not raw:
                raise AssertionError(f"stream ended before a line with {needle!r}; saw {seen}")
            line = raw.decode().rstrip("\n")
            seen.append(line)
            if needle in line:
                return line


# -- discovery ---------------------------------------------------------------


async def test_version_reports_a_1x_server(kubectl: Kubectl) -> None:
    """`kubectl version` reads the server's version.Info."""
    info = json.loads((await kubectl("version", "-o", "json")).out)
    assert info["serverVersion"]["major"] == "1"
    assert info["serverVersion"]["gitVersion"].startswith("v1.")


async def test_api_resources_lists_builtins_and_crds(kubectl: Kubectl) -> None:
    """`kubectl api-resources` shows built-in resources and a CRD with its short name."""
    out = (await kubectl("api-resources")).out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:] if line.strip()}
    assert rows["deployments"][1:] == ["deploy", "apps/v1", "true", "Deployment"]
    assert rows["widgets"][1:] == ["wid", f"{GROUP}/v1", "true", "Widget"]
    assert rows["namespaces"][1:] == ["ns", "v1", "false", "Namespace"]


async def test_category_lists_crd_resources(kubectl: Kubectl) -> None:
    """`kubectl get <category>` expands to the resources that declare the category."""
    await kubectl("apply", "-f", "-", stdin=widget("in-category"))
    out = (await kubectl("get", "pyctrl", "-o", "name")).out
    assert out.split() == [f"widget.{GROUP}/in-category"]


# -- apply -------------------------------------------------------------------


async def test_apply_crd_then_wait_for_established(kubectl: Kubectl) -> None:
    """A CRD applied client-side becomes Established and its resource appears in discovery."""
    crd = widget_crd("gadgets", "Gadget", categories=())
    try:
        applied = await kubectl("apply", "-f", "-", stdin=crd)
        assert (
            applied.out.strip()
            == f"customresourcedefinition.apiextensions.k8s.io/gadgets.{GROUP} created"
        )
        waited = await kubectl(
            "wait", "--for=condition=Established", f"crd/gadgets.{GROUP}", "--timeout=20s"
        )
        assert "condition met" in waited.out
        names = (await kubectl("api-resources", f"--api-group={GROUP}", "-o", "name")).out
        assert f"gadgets.{GROUP}" in names.split()
    finally:
        await kubectl("delete", "crd", f"gadgets.{GROUP}", "--wait=false", check=False)


async def test_apply_crd_server_side_records_kubectl_as_manager(kubectl: Kubectl) -> None:
    """`apply --server-side` of a CRD succeeds and records kubectl's Apply in managedFields."""
    crd = widget_crd("gizmos", "Gizmo", categories=())
    try:
        applied = await kubectl("apply", "--server-side", "-f", "-", stdin=crd)
        assert applied.out.strip() == (
            f"customresourcedefinition.apiextensions.k8s.io/gizmos.{GROUP} serverside-applied"
        )
        live = await kubectl.json("crd", f"gizmos.{GROUP}", "--show-managed-fields")
        managers = {(m["manager"], m["operation"]) for m in live["metadata"]["managedFields"]}
        assert ("kubectl", "Apply") in managers
    finally:
        await kubectl("delete", "crd", f"gizmos.{GROUP}", "--wait=false", check=False)


async def test_apply_custom_resource_client_side_updates_and_removes_fields(
    kubectl: Kubectl,
) -> None:
    """Re-applying a changed custom resource updates fields and removes the ones dropped."""
    first = await kubectl("apply", "-f", "-", stdin=widget("w", size=2, parts=["a", "b"]))
    assert first.out.strip() == f"widget.{GROUP}/w created"
    second = await kubectl("apply", "-f", "-", stdin=widget("w", size=3))
    assert second.out.strip() == f"widget.{GROUP}/w configured"
    live = await kubectl.json("widget", "w")
    assert live["spec"] == {"size": 3, "color": "red"}
    annotations = live["metadata"]["annotations"]
    assert "kubectl.kubernetes.io/last-applied-configuration" in annotations
    unchanged = await kubectl("apply", "-f", "-", stdin=widget("w", size=3))
    assert unchanged.out.strip() == f"widget.{GROUP}/w unchanged"


async def test_apply_custom_resource_server_side_detects_conflicts(kubectl: Kubectl) -> None:
    """Server-side apply conflicts with another manager's field unless forced."""
    await kubectl("apply", "--server-side", "-f", "-", stdin=widget("ssa", size=1))
    await kubectl(
        "patch",
        "widget",
        "ssa",
        "--type=merge",
        "-p",
        '{"spec":{"size":5}}',
        "--field-manager=other",
    )
    conflict = await kubectl(
        "apply", "--server-side", "-f", "-", stdin=widget("ssa", size=2), check=False
    )
    assert conflict.code != 0
    assert "conflict" in conflict.err.lower()
    assert ".spec.size" in conflict.err
    await kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=widget("ssa", size=2)
    )
    assert (await kubectl.json("widget", "ssa"))["spec"]["size"] == 2


async def test_apply_deployment_client_side_removes_dropped_container_field(
    kubectl: Kubectl,
) -> None:
    """Re-applying a Deployment without a container field removes it (strategic merge by name)."""
    containers: list[dict[str, Any]] = [
        {"name": "app", "image": "nginx:1.27", "command": ["nginx", "-g", "daemon off;"]},
        {"name": "sidecar", "image": "busybox:1.36"},
    ]
    await kubectl("apply", "-f", "-", stdin=deployment("web", containers))
    changed = [{"name": "app", "image": "nginx:1.28"}, {"name": "sidecar", "image": "busybox:1.36"}]
    result = await kubectl("apply", "-f", "-", stdin=deployment("web", changed))
    assert result.out.strip() == "deployment.apps/web configured"
    assert "warning" not in result.err.lower()
    live = await kubectl.json("deployment", "web")
    app = live["spec"]["template"]["spec"]["containers"][0]
    assert app["name"] == "app"
    assert app["image"] == "nginx:1.28"
    assert "command" not in app


async def test_apply_service_server_side(kubectl: Kubectl) -> None:
    """A Service applied server-side keeps its ports, owned by kubectl."""
    result = await kubectl("apply", "--server-side", "-f", "-", stdin=service("api"))
    assert result.out.strip() == "service/api serverside-applied"
    live = await kubectl.json("service", "api")
    assert [(p["port"], p["targetPort"]) for p in live["spec"]["ports"]] == [(80, 8080)]


async def test_apply_deployment_server_side_then_change_image(kubectl: Kubectl) -> None:
    """A Deployment applied server-side twice ends with the second image, kubectl owning it."""
    first = await kubectl(
        "apply",
        "--server-side",
        "-f",
        "-",
        stdin=deployment("ssd", [{"name": "app", "image": "nginx:1.27"}]),
    )
    assert first.out.strip() == "deployment.apps/ssd serverside-applied"
    await kubectl(
        "apply",
        "--server-side",
        "-f",
        "-",
        stdin=deployment("ssd", [{"name": "app", "image": "nginx:1.28"}]),
    )
    live = await kubectl.json("deployment", "ssd", "--show-managed-fields")
    assert live["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    managers = {(m["manager"], m["operation"]) for m in live["metadata"]["managedFields"]}
    assert ("kubectl", "Apply") in managers


async def test_apply_service_client_side_then_add_port(kubectl: Kubectl) -> None:
    """Re-applying a Service with an extra port adds it and keeps the first."""
    await kubectl("apply", "-f", "-", stdin=service("web"))
    changed = service("web")
    changed["spec"]["ports"].append(
        {"name": "metrics", "port": 9090, "targetPort": 9090, "protocol": "TCP"}
    )
    result = await kubectl("apply", "-f", "-", stdin=changed)
    assert result.out.strip() == "service/web configured"
    live = await kubectl.json("service", "web")
    assert sorted(p["port"] for p in live["spec"]["ports"]) == [80, 9090]


async def test_apply_from_file(kubectl: Kubectl, tmp_path: Path) -> None:
    """`apply -f <file>` with several documents creates each object."""
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all([widget("f1"), widget("f2", size=4)]))
    result = await kubectl("apply", "-f", str(path))
    assert result.out.split("\n")[:2] == [
        f"widget.{GROUP}/f1 created",
        f"widget.{GROUP}/f2 created",
    ]


async def test_apply_rejects_unknown_field(kubectl: Kubectl) -> None:
    """With the default strict validation an unknown field is refused by the server."""
    bad = widget("bad")
    bad["spec"]["bogus"] = True
    result = await kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert result.code != 0
    assert 'unknown field "spec.bogus"' in result.err


async def test_create_reports_the_servers_type_error(kubectl: Kubectl) -> None:
    """`create -f` of a Deployment whose replicas is a string prints the server's 400."""
    bad = deployment("typed", [{"name": "app", "image": "nginx:1.27"}])
    bad["spec"]["replicas"] = "three"
    result = await kubectl("create", "-f", "-", stdin=bad, check=False)
    assert result.code != 0
    assert result.err == (
        'Error from server (BadRequest): error when creating "STDIN": Deployment in version '
        '"v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go '
        "struct field DeploymentSpec.spec.replicas of type int32\n"
    )
    got = await kubectl("get", "deployment", "typed", "--ignore-not-found", "-o", "name")
    assert got.out == ""


# -- get / describe / explain ------------------------------------------------


async def test_get_table_shows_crd_printer_columns(kubectl: Kubectl) -> None:
    """`kubectl get` prints a CRD's additionalPrinterColumns."""
    await kubectl("apply", "-f", "-", stdin=widget("tbl", size=7, color="blue"))
    lines = (await kubectl("get", "widgets")).out.splitlines()
    assert lines[0].split() == ["NAME", "SIZE", "COLOR", "AGE"]
    assert lines[1].split()[:3] == ["tbl", "7", "blue"]


async def test_get_table_of_builtin_kind(kubectl: Kubectl) -> None:
    """`kubectl get services` prints the built-in columns kube-apiserver defines."""
    await kubectl("apply", "-f", "-", stdin=service("tbl"))
    lines = (await kubectl("get", "services")).out.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert lines[1].split()[:2] == ["tbl", "ClusterIP"]
    assert "80/TCP" in lines[1].split()


async def test_get_yaml_shows_defaulted_object(kubectl: Kubectl) -> None:
    """`-o yaml` returns the stored object, with schema defaults applied."""
    await kubectl("apply", "-f", "-", stdin=widget("yml", size=1))
    live = yaml.safe_load((await kubectl("get", "widget", "yml", "-o", "yaml")).out)
    assert live["kind"] == "Widget"
    assert live["spec"] == {"size": 1, "color": "red"}
    assert live["metadata"]["namespace"] == kubectl.namespace


async def test_get_json_list_of_several_objects(kubectl: Kubectl) -> None:
    """`get -o json` of a collection returns a List with every item."""
    await kubectl(
        "apply",
        "-f",
        "-",
        stdin={"apiVersion": "v1", "kind": "List", "items": [widget("a"), widget("b")]},
    )
    listing = await kubectl.json("widgets")
    assert listing["kind"] == "List"
    assert sorted(i["metadata"]["name"] for i in listing["items"]) == ["a", "b"]


async def test_describe_custom_resource(kubectl: Kubectl) -> None:
    """`kubectl describe` shows a custom resource's metadata and spec."""
    await kubectl("apply", "-f", "-", stdin=widget("d", size=4, color="green"))
    out = (await kubectl("describe", "widget", "d")).out
    assert "Name:         d" in out
    assert f"Namespace:    {kubectl.namespace}" in out
    assert f"API Version:  {GROUP}/v1" in out
    assert "Color:  green" in out
    assert "Size:   4" in out


async def test_explain_custom_resource_field(kubectl: Kubectl) -> None:
    """`kubectl explain` renders a CRD field's schema: type, enum and description."""
    out = (await kubectl("explain", "widgets.spec.color")).out
    assert f"GROUP:      {GROUP}" in out
    assert "KIND:       Widget" in out
    assert "FIELD: color <string>" in out
    assert "Its colour." in out
    assert "red" in out


async def test_explain_builtin_kind(kubectl: Kubectl) -> None:
    """`kubectl explain deployments` finds the built-in kind and its top-level fields."""
    out = (await kubectl("explain", "deployments")).out
    assert "KIND:       Deployment" in out
    assert "VERSION:    v1" in out
    assert "spec\t<" in out


# -- patch / label / annotate ------------------------------------------------


async def test_patch_merge(kubectl: Kubectl) -> None:
    """`patch --type merge` changes a custom resource field."""
    await kubectl("apply", "-f", "-", stdin=widget("pm", size=1))
    result = await kubectl("patch", "widget", "pm", "--type=merge", "-p", '{"spec":{"size":5}}')
    assert result.out.strip() == f"widget.{GROUP}/pm patched"
    assert (await kubectl.json("widget", "pm"))["spec"]["size"] == 5


async def test_patch_json(kubectl: Kubectl) -> None:
    """`patch --type json` applies RFC 6902 operations."""
    await kubectl("apply", "-f", "-", stdin=widget("pj", size=1, parts=["x"]))
    ops = json.dumps(
        [
            {"op": "replace", "path": "/spec/size", "value": 7},
            {"op": "add", "path": "/spec/parts/-", "value": "y"},
        ]
    )
    await kubectl("patch", "widget", "pj", "--type=json", "-p", ops)
    spec = (await kubectl.json("widget", "pj"))["spec"]
    assert (spec["size"], spec["parts"]) == (7, ["x", "y"])


async def test_patch_strategic_merges_containers_by_name(kubectl: Kubectl) -> None:
    """A strategic merge patch on a Deployment updates one container and keeps the other."""
    containers = [
        {"name": "app", "image": "nginx:1.27"},
        {"name": "sidecar", "image": "busybox:1.36"},
    ]
    await kubectl("apply", "-f", "-", stdin=deployment("smp", containers))
    patch = '{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.28"}]}}}}'
    await kubectl("patch", "deployment", "smp", "--type=strategic", "-p", patch)
    live = await kubectl.json("deployment", "smp")
    images = [(c["name"], c["image"]) for c in live["spec"]["template"]["spec"]["containers"]]
    assert images == [("app", "nginx:1.28"), ("sidecar", "busybox:1.36")]


async def test_patch_strategic_is_refused_for_custom_resources(kubectl: Kubectl) -> None:
    """Custom resources do not support strategic merge patch: the server answers 415."""
    await kubectl("apply", "-f", "-", stdin=widget("ps"))
    result = await kubectl(
        "patch", "widget", "ps", "--type=strategic", "-p", '{"spec":{"size":2}}', check=False
    )
    assert result.code != 0
    assert "application/strategic-merge-patch+json is not supported" in result.err


async def test_label_then_select(kubectl: Kubectl) -> None:
    """`kubectl label` sets a label that `get -l` then selects on."""
    await kubectl(
        "apply",
        "-f",
        "-",
        stdin={"apiVersion": "v1", "kind": "List", "items": [widget("l1"), widget("l2")]},
    )
    result = await kubectl("label", "widget", "l1", "tier=gold")
    assert result.out.strip() == f"widget.{GROUP}/l1 labeled"
    selected = (await kubectl("get", "widgets", "-l", "tier=gold", "-o", "name")).out.split()
    assert selected == [f"widget.{GROUP}/l1"]
    refused = await kubectl("label", "widget", "l1", "tier=silver", check=False)
    assert refused.code != 0
    assert "--overwrite" in refused.err


async def test_annotate(kubectl: Kubectl) -> None:
    """`kubectl annotate` sets and removes annotations."""
    await kubectl("apply", "-f", "-", stdin=widget("an"))
    await kubectl("annotate", "widget", "an", "note=hello")
    assert (await kubectl.json("widget", "an"))["metadata"]["annotations"]["note"] == "hello"
    await kubectl("annotate", "widget", "an", "note-")
    annotations = (await kubectl.json("widget", "an"))["metadata"].get("annotations", {})
    assert "note" not in annotations


# -- delete / wait / watch ---------------------------------------------------


async def test_delete(kubectl: Kubectl) -> None:
    """`kubectl delete` removes the object; a later get is NotFound."""
    await kubectl("apply", "-f", "-", stdin=widget("del"))
    result = await kubectl("delete", "widget", "del")
    # Newer kubectl releases (1.37 does, 1.32 does not) also name the namespace.
    assert result.out.strip() in (
        f'widget.{GROUP} "del" deleted',
        f'widget.{GROUP} "del" deleted from {kubectl.namespace} namespace',
    )
    missing = await kubectl("get", "widget", "del", check=False)
    assert missing.code != 0
    assert f'widgets.{GROUP} "del" not found' in missing.err


async def test_wait_for_delete_returns_when_finalizer_is_removed(kubectl: Kubectl) -> None:
    """`kubectl wait --for=delete` waits while a finalizer holds the object, then returns."""
    held = widget("held")
    held["metadata"]["finalizers"] = ["pyctrl.dev/hold"]
    await kubectl("apply", "-f", "-", stdin=held)
    await kubectl("delete", "widget", "held", "--wait=false")
    assert (await kubectl.json("widget", "held"))["metadata"]["deletionTimestamp"]
    # -v=6 logs each request once answered: after the initial list the wait cannot
    # miss the deletion (it watches from the list's resourceVersion).
    waiter = await kubectl.spawn("wait", "--for=delete", "widget/held", "--timeout=30s", "-v=6")
    try:
        assert waiter.stderr is not None
        await _read_line_containing(waiter.stderr, "fieldSelector=metadata.name", [])
        await kubectl(
            "patch", "widget", "held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
        )
        async with asyncio.timeout(30):
            out, _ = await waiter.communicate()
    finally:
        if waiter.returncode is None:
            waiter.kill()
            await waiter.wait()
    assert waiter.returncode == 0
    assert "condition met" in out.decode()


async def test_get_watch_streams_events_from_other_writers(kubectl: Kubectl) -> None:
    """`kubectl get -w` prints the initial rows, then a row for each change made elsewhere."""
    await kubectl("apply", "-f", "-", stdin=widget("w1", size=1))
    proc = await kubectl.spawn("get", "widgets", "--watch", "--output-watch-events")
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        header = await _read_line_containing(proc.stdout, "EVENT", seen)
        assert header.split() == ["EVENT", "NAME", "SIZE", "COLOR", "AGE"]
        assert (await _read_line_containing(proc.stdout, "w1", seen)).split()[:4] == [
            "ADDED",
            "w1",
            "1",
            "red",
        ]
        await kubectl("apply", "-f", "-", stdin=widget("w2", size=2, color="blue"))
        added = await _read_line_containing(proc.stdout, "w2", seen)
        assert added.split()[:4] == ["ADDED", "w2", "2", "blue"]
        await kubectl("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"size":9}}')
        modified = await _read_line_containing(proc.stdout, "MODIFIED", seen)
        assert modified.split()[:3] == ["MODIFIED", "w1", "9"]
        await kubectl("delete", "widget", "w2")
        deleted = await _read_line_containing(proc.stdout, "DELETED", seen)
        assert deleted.split()[:2] == ["DELETED", "w2"]
    finally:
        if proc.returncode is None:
            proc.terminate()
        await proc.wait()


# -- built-in schemas and describe -------------------------------------------


def _described(out: str) -> list[list[str]]:
    """The whitespace-split lines of `kubectl describe` output (its column widths vary)."""
    return [line.split() for line in out.splitlines()]


async def test_explain_builtin_nested_list_field(kubectl: Kubectl) -> None:
    """`kubectl explain` walks into a built-in kind's nested list and lists its items' fields."""
    out = (await kubectl("explain", "deployment.spec.template.spec.containers")).out
    assert "KIND:       Deployment" in out
    assert "FIELD: containers <[]Container>" in out
    assert "List of containers belonging to the pod." in out
    assert "  image\t<string>" in out
    assert "  ports\t<[]ContainerPort>" in out
    assert "  env\t<[]EnvVar>" in out


async def test_explain_builtin_nested_leaf_fields(kubectl: Kubectl) -> None:
    """Nested built-in leaves show their type and description, IntOrString included."""
    path = "deployment.spec.template.spec.containers.ports.containerPort"
    out = (await kubectl("explain", path)).out
    assert "FIELD: containerPort <integer>" in out
    assert "Number of port to expose on the pod's IP address." in out
    out = (await kubectl("explain", "service.spec.ports.targetPort")).out
    assert "FIELD: targetPort <IntOrString>" in out


async def test_explain_custom_resource_object_field(kubectl: Kubectl) -> None:
    """`kubectl explain` of a custom resource's object field lists its own fields."""
    out = (await kubectl("explain", "widgets.spec")).out
    assert "FIELD: spec <Object>" in out
    assert "Desired state." in out
    assert "  size\t<integer>" in out
    assert "  color\t<string>" in out


async def test_apply_deployment_with_unknown_field_is_refused(kubectl: Kubectl) -> None:
    """An unknown container field fails kubectl's strict apply, client- and server-side."""
    bad = deployment("bogus", [{"name": "app", "image": "nginx:1.27", "bogusField": True}])
    result = await kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert result.code != 0
    assert (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.template.spec.containers[0].bogusField"'
    ) in result.err
    result = await kubectl("apply", "--server-side", "-f", "-", stdin=bad, check=False)
    assert result.code != 0
    assert (
        '.spec.template.spec.containers[name="app"].bogusField: field not declared in schema'
    ) in result.err
    missing = await kubectl("get", "deployment", "bogus", check=False)
    assert missing.code != 0


async def test_apply_without_validation_drops_unknown_field(kubectl: Kubectl) -> None:
    """`--validate=false` creates the Deployment and the server drops the unknown field."""
    lax = deployment("lax", [{"name": "app", "image": "nginx:1.27", "bogusField": True}])
    result = await kubectl("apply", "--validate=false", "-f", "-", stdin=lax)
    assert result.out.strip() == "deployment.apps/lax created"
    live = await kubectl.json("deployment", "lax")
    container = live["spec"]["template"]["spec"]["containers"][0]
    assert container == {
        "name": "app",
        "image": "nginx:1.27",
        "imagePullPolicy": "IfNotPresent",
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }


async def test_describe_deployment(kubectl: Kubectl) -> None:
    """`kubectl describe deployment` shows replicas, strategy and the pod template."""
    web = deployment(
        "web",
        [
            {
                "name": "app",
                "image": "nginx:1.27",
                "ports": [{"containerPort": 80}],
                "env": [{"name": "MODE", "value": "prod"}],
            }
        ],
    )
    web["spec"]["replicas"] = 2
    await kubectl("apply", "-f", "-", stdin=web)
    lines = _described((await kubectl("describe", "deployment", "web")).out)
    assert ["Name:", "web"] in lines
    assert ["Namespace:", kubectl.namespace] in lines
    assert ["Selector:", "app=web"] in lines
    replicas = next(line for line in lines if line[:1] == ["Replicas:"])
    assert replicas[:3] == ["Replicas:", "2", "desired"]
    assert ["StrategyType:", "RollingUpdate"] in lines
    assert ["RollingUpdateStrategy:", "25%", "max", "unavailable,", "25%", "max", "surge"] in lines
    assert ["Image:", "nginx:1.27"] in lines
    assert ["Port:", "80/TCP"] in lines
    assert ["MODE:", "prod"] in lines


async def test_describe_service(kubectl: Kubectl) -> None:
    """`kubectl describe service` shows type, selector, ports and the allocated cluster IP."""
    await kubectl("apply", "-f", "-", stdin=service("api"))
    live = await kubectl.json("service", "api")
    lines = _described((await kubectl("describe", "service", "api")).out)
    assert ["Name:", "api"] in lines
    assert ["Selector:", "app=api"] in lines
    assert ["Type:", "ClusterIP"] in lines
    assert ["IP:", live["spec"]["clusterIP"]] in lines
    assert ["Port:", "http", "80/TCP"] in lines
    assert ["TargetPort:", "8080/TCP"] in lines
    assert ["Session", "Affinity:", "None"] in lines


async def test_apply_prints_every_invalid_field_of_a_service(kubectl: Kubectl) -> None:
    """`kubectl apply` of a Service with two bad ports prints each of the server's causes."""
    bad = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "bad"},
        "spec": {"ports": [{"port": 70000}, {"port": 80, "protocol": "HTTP"}]},
    }
    result = await kubectl("apply", "-f", "-", stdin=bad, check=False)
    assert result.code != 0
    out_of_range = "Invalid value: 70000: must be between 1 and 65535, inclusive"
    assert result.err == (
        'The Service "bad" is invalid: \n'
        "* spec.ports[0].name: Required value\n"
        f"* spec.ports[0].port: {out_of_range}\n"
        f"* spec.ports[0].targetPort: {out_of_range}\n"
        "* spec.ports[1].name: Required value\n"
        '* spec.ports[1].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", '
        '"UDP"\n'
    )
