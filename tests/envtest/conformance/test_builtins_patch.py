"""Strategic merge patches of built-in lists over HTTP: merged by key, not replaced.

kube-apiserver merges the lists of built-in types that carry a ``patchMergeKey``: container
ports by ``containerPort``, Service ports by ``port``, env by ``name``, volumes by ``name``
(with ``retainKeys``), status conditions by ``type``. Items a patch does not name are kept
and ``$patch: delete`` removes one. The merged list keeps the live order, and a new item
goes before the live items it is not ordered against (strategicpatch's
``normalizeElementOrder``), so kubectl patches carry ``$setElementOrder`` when order matters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.envtest.conftest import deployment

if TYPE_CHECKING:
    from tests.envtest.conftest import Kube


# Built-in kinds: the CRD-only server has none.
pytestmark = pytest.mark.needs_builtin_kinds


async def _smp(kube: Kube, path: str, patch: dict[str, Any]) -> dict[str, Any]:
    status, obj, _ = await kube.patch(path, patch, "strategic")
    assert status == 200, obj
    assert isinstance(obj, dict)
    return obj


def _pod_patch(**pod: Any) -> dict[str, Any]:
    return {"spec": {"template": {"spec": pod}}}


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = obj["spec"]["template"]["spec"]["containers"][0]
    return container


async def test_container_ports_merge_by_container_port(kube: Kube, ns: str) -> None:
    """A patched port list adds and deletes ports by containerPort, keeping the others."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    ports = [{"name": "http", "containerPort": 80}, {"name": "https", "containerPort": 443}]
    await kube.create_ok(path, deployment("web", container={"ports": ports}))
    added = _pod_patch(
        containers=[{"name": "app", "ports": [{"name": "metrics", "containerPort": 9090}]}]
    )
    obj = await _smp(kube, f"{path}/web", added)
    assert [(p["containerPort"], p["name"]) for p in _container(obj)["ports"]] == [
        (9090, "metrics"),
        (80, "http"),
        (443, "https"),
    ]
    deleted = _pod_patch(
        containers=[{"name": "app", "ports": [{"containerPort": 443, "$patch": "delete"}]}]
    )
    obj = await _smp(kube, f"{path}/web", deleted)
    assert [p["containerPort"] for p in _container(obj)["ports"]] == [9090, 80]


async def test_service_ports_merge_by_port(kube: Kube, ns: str) -> None:
    """A Service's ports merge by port: a patch changes one and adds one."""
    path = f"/api/v1/namespaces/{ns}/services"
    service = {
        "metadata": {"name": "api"},
        "spec": {
            "selector": {"app": "api"},
            "ports": [
                {"name": "http", "port": 80, "targetPort": 8080},
                {"name": "grpc", "port": 9000, "targetPort": 9000},
            ],
        },
    }
    await kube.create_ok(path, service)
    patch = {
        "spec": {
            "ports": [
                {"port": 80, "targetPort": 8081},
                {"name": "https", "port": 443, "targetPort": 8443},
            ]
        }
    }
    obj = await _smp(kube, f"{path}/api", patch)
    assert [(p["name"], p["port"], p["targetPort"]) for p in obj["spec"]["ports"]] == [
        ("http", 80, 8081),
        ("https", 443, 8443),
        ("grpc", 9000, 9000),
    ]


async def test_env_merges_by_name(kube: Kube, ns: str) -> None:
    """Environment variables merge by name: one changed, one added, one deleted, one kept."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    env = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}]
    await kube.create_ok(path, deployment("web", container={"env": env}))
    patch = _pod_patch(
        containers=[
            {
                "name": "app",
                "env": [
                    {"name": "B", "value": "20"},
                    {"name": "C", "$patch": "delete"},
                    {"name": "D", "value": "4"},
                ],
            }
        ]
    )
    obj = await _smp(kube, f"{path}/web", patch)
    assert [(e["name"], e["value"]) for e in _container(obj)["env"]] == [
        ("A", "1"),
        ("B", "20"),
        ("D", "4"),
    ]


async def test_volumes_merge_by_name_and_retain_keys(kube: Kube, ns: str) -> None:
    """Volumes merge by name; ``$retainKeys`` swaps a volume's source without mixing them."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    volumes = [
        {"name": "config", "configMap": {"name": "settings"}},
        {"name": "cache", "emptyDir": {}},
    ]
    await kube.create_ok(path, deployment("web", pod={"volumes": volumes}))
    added = _pod_patch(volumes=[{"name": "secrets", "secret": {"secretName": "creds"}}])
    obj = await _smp(kube, f"{path}/web", added)
    pod = obj["spec"]["template"]["spec"]
    assert [v["name"] for v in pod["volumes"]] == ["secrets", "config", "cache"]
    swapped = _pod_patch(
        volumes=[{"name": "config", "emptyDir": {}, "$retainKeys": ["emptyDir", "name"]}]
    )
    obj = await _smp(kube, f"{path}/web", swapped)
    volumes = obj["spec"]["template"]["spec"]["volumes"]
    assert [v["name"] for v in volumes] == ["secrets", "config", "cache"]
    assert volumes[1] == {"name": "config", "emptyDir": {}}


async def test_status_conditions_merge_by_type(kube: Kube, ns: str) -> None:
    """Conditions patched through the status subresource merge by type."""
    path = f"/apis/apps/v1/namespaces/{ns}/deployments"
    await kube.create_ok(path, deployment("web"))
    conditions = [
        {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"},
        {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"},
    ]
    await _smp(kube, f"{path}/web/status", {"status": {"conditions": conditions}})
    patch = {
        "status": {
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}
            ]
        }
    }
    obj = await _smp(kube, f"{path}/web/status", patch)
    assert [(c["type"], c["status"], c["reason"]) for c in obj["status"]["conditions"]] == [
        ("Available", "True", "MinimumReplicasAvailable"),
        ("Progressing", "True", "ReplicaSetUpdated"),
    ]
