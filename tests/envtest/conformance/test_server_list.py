"""List semantics: label and field selectors, pagination and resourceVersion."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.envtest.conftest import own

if TYPE_CHECKING:
    from pyctrl.envtest import Environment
    from tests.envtest.conftest import Kube


def cm(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "data": {}}


async def _names(kube: Kube, path: str, **params: str) -> list[str]:
    body = await kube.get_ok(path, params=params)
    return own(i["metadata"]["name"] for i in body["items"])


async def _seed(kube: Kube, ns: str) -> str:
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a", {"env": "prod", "tier": "web"}))
    await kube.create_ok(path, cm("b", {"env": "dev", "tier": "web"}))
    await kube.create_ok(path, cm("c", {"env": "prod"}))
    await kube.create_ok(path, cm("d", {"count": "5"}))
    return path


@pytest.mark.needs_builtin_kinds
async def test_label_selector_equality(kube: Kube, ns: str) -> None:
    """key=value selects objects with that label value."""
    path = await _seed(kube, ns)
    assert await _names(kube, path, labelSelector="env=prod") == ["a", "c"]
    assert await _names(kube, path, labelSelector="env==dev") == ["b"]


@pytest.mark.needs_builtin_kinds
async def test_label_selector_inequality_includes_unlabelled(kube: Kube, ns: str) -> None:
    """key!=value also selects objects without the label."""
    path = await _seed(kube, ns)
    assert await _names(kube, path, labelSelector="env!=prod") == ["b", "d"]


@pytest.mark.needs_builtin_kinds
async def test_label_selector_set_based(kube: Kube, ns: str) -> None:
    """in, notin, exists and !exists work and combine with commas."""
    path = await _seed(kube, ns)
    assert await _names(kube, path, labelSelector="env in (dev,prod),tier") == ["a", "b"]
    assert await _names(kube, path, labelSelector="env notin (prod)") == ["b", "d"]
    assert await _names(kube, path, labelSelector="!tier") == ["c", "d"]
    assert await _names(kube, path, labelSelector="count>3") == ["d"]


@pytest.mark.needs_builtin_kinds
async def test_malformed_label_selector_is_400(kube: Kube, ns: str) -> None:
    """An unparsable label selector is a BadRequest with the parser's message."""
    status, body, _ = await kube.get(
        f"/api/v1/namespaces/{ns}/configmaps", params={"labelSelector": "env in (a"}
    )
    assert status == 400
    assert body["reason"] == "BadRequest"
    assert body["message"].startswith("unable to parse requirement")


@pytest.mark.needs_builtin_kinds
async def test_field_selector_on_name(kube: Kube, ns: str) -> None:
    """metadata.name field selectors pick single objects."""
    path = await _seed(kube, ns)
    assert await _names(kube, path, fieldSelector="metadata.name=b") == ["b"]
    assert await _names(kube, path, fieldSelector="metadata.name!=b") == ["a", "c", "d"]


@pytest.mark.needs_builtin_kinds
async def test_field_selector_on_namespace_across_namespaces(kube: Kube, ns: str) -> None:
    """metadata.namespace field selectors narrow a cluster-wide list."""
    await _seed(kube, ns)
    body = await kube.get_ok(
        "/api/v1/configmaps", params={"fieldSelector": f"metadata.namespace={ns}"}
    )
    assert {i["metadata"]["namespace"] for i in body["items"]} == {ns}


@pytest.mark.needs_builtin_kinds
async def test_unsupported_field_label_is_400(kube: Kube, ns: str) -> None:
    """A field the resource does not index answers 'field label not supported'."""
    status, body, _ = await kube.get(
        f"/api/v1/namespaces/{ns}/configmaps", params={"fieldSelector": "data.x=1"}
    )
    assert status == 400
    assert body["message"] == "field label not supported: data.x"


@pytest.mark.needs_builtin_kinds
async def test_pod_field_selectors(kube: Kube, ns: str) -> None:
    """Pods can be selected by spec.nodeName and status.phase."""
    path = f"/api/v1/namespaces/{ns}/pods"
    for name, node in (("p1", "node-a"), ("p2", "node-b")):
        pod = {
            "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
        }
        await kube.create_ok(path, pod)
    assert await _names(kube, path, fieldSelector="spec.nodeName=node-b") == ["p2"]
    assert await _names(kube, path, fieldSelector="status.phase=Pending") == ["p1", "p2"]
    # Pods on a node wait for its kubelet to confirm their deletion, unless forced.
    for name in ("p1", "p2"):
        await kube.delete(f"{path}/{name}", {"gracePeriodSeconds": 0})


@pytest.mark.needs_builtin_kinds
async def test_secret_type_field_selector(kube: Kube, ns: str) -> None:
    """Secrets can be selected by type."""
    path = f"/api/v1/namespaces/{ns}/secrets"
    await kube.create_ok(path, {"metadata": {"name": "o"}})
    await kube.create_ok(
        path,
        {
            "metadata": {"name": "t"},
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""},
        },
    )
    assert await _names(kube, path, fieldSelector="type=kubernetes.io/tls") == ["t"]


@pytest.mark.needs_builtin_kinds
async def test_pagination_with_limit_and_continue(kube: Kube, ns: str) -> None:
    """limit pages through a list; continue tokens resume; remainingItemCount counts the rest."""
    # Secrets: no cluster controller adds any to a namespace, so the count is exact.
    path = f"/api/v1/namespaces/{ns}/secrets"
    for i in range(5):
        await kube.create_ok(path, {"metadata": {"name": f"item-{i}"}})
    first = await kube.get_ok(path, params={"limit": "2"})
    assert [i["metadata"]["name"] for i in first["items"]] == ["item-0", "item-1"]
    assert first["metadata"]["remainingItemCount"] == 3
    token = first["metadata"]["continue"]
    second = await kube.get_ok(path, params={"limit": "2", "continue": token})
    assert [i["metadata"]["name"] for i in second["items"]] == ["item-2", "item-3"]
    third = await kube.get_ok(
        path, params={"limit": "2", "continue": second["metadata"]["continue"]}
    )
    assert [i["metadata"]["name"] for i in third["items"]] == ["item-4"]
    assert "continue" not in third["metadata"]


@pytest.mark.needs_builtin_kinds
async def test_pages_are_a_consistent_snapshot(kube: Kube, ns: str) -> None:
    """Objects created after the first page do not appear in later pages of that list."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    for name in ("a", "c"):
        await kube.create_ok(path, cm(name))
    first = await kube.get_ok(path, params={"limit": "1"})
    await kube.create_ok(path, cm("b"))
    second = await kube.get_ok(
        path, params={"limit": "5", "continue": first["metadata"]["continue"]}
    )
    assert own(i["metadata"]["name"] for i in second["items"]) == ["c"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


@pytest.mark.embedded_only
async def test_expired_continue_token_is_410(env: Environment, kube: Kube, ns: str) -> None:
    """A continue token from before a compaction answers 410 Expired."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    for name in ("a", "b"):
        await kube.create_ok(path, cm(name))
    first = await kube.get_ok(path, params={"limit": "1"})
    await kube.create_ok(path, cm("c"))
    env.faults.compact()
    status, body, _ = await kube.get(
        path, params={"limit": "1", "continue": first["metadata"]["continue"]}
    )
    assert status == 410
    assert body["reason"] == "Expired"
    assert body["message"].startswith("The provided continue parameter is too old")
    assert body["metadata"]["continue"]


@pytest.mark.needs_builtin_kinds
async def test_list_resource_version_is_current(kube: Kube, ns: str) -> None:
    """A list's metadata.resourceVersion is at least that of its newest item."""
    obj = await kube.create_ok(f"/api/v1/namespaces/{ns}/configmaps", cm("x"))
    body = await kube.get_ok(f"/api/v1/namespaces/{ns}/configmaps", params={"resourceVersion": "0"})
    assert int(body["metadata"]["resourceVersion"]) >= int(obj["metadata"]["resourceVersion"])


@pytest.mark.needs_builtin_kinds
async def test_exact_resource_version_lists_the_past(kube: Kube, ns: str) -> None:
    """resourceVersionMatch=Exact answers the list as it was at that version."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    first = await kube.create_ok(path, cm("a"))
    await kube.create_ok(path, cm("b"))
    body = await kube.get_ok(
        path,
        params={
            "resourceVersion": first["metadata"]["resourceVersion"],
            "resourceVersionMatch": "Exact",
        },
    )
    assert own(i["metadata"]["name"] for i in body["items"]) == ["a"]


@pytest.mark.needs_builtin_kinds
async def test_resource_version_match_without_version_is_invalid(kube: Kube, ns: str) -> None:
    """resourceVersionMatch without resourceVersion is rejected as kube-apiserver does."""
    status, body, _ = await kube.get(
        f"/api/v1/namespaces/{ns}/configmaps", params={"resourceVersionMatch": "NotOlderThan"}
    )
    assert status == 422
    assert "resourceVersionMatch is forbidden unless resourceVersion is provided" in body["message"]


@pytest.mark.needs_builtin_kinds
async def test_too_large_resource_version_is_504(kube: Kube, ns: str) -> None:
    """A list not older than a future resourceVersion times out with ResourceVersionTooLarge."""
    status, body, _ = await kube.get(
        f"/api/v1/namespaces/{ns}/configmaps",
        params={"resourceVersion": "999999999", "resourceVersionMatch": "NotOlderThan"},
    )
    assert status == 504
    assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
