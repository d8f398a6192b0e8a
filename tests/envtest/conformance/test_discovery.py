from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pyctrl._apiserver.discovery import negotiate_discovery, sort_versions, storage_version_hash
from pyctrl.envtest import Environment
from tests.envtest.conformance.test_server_delete import wait_gone

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.envtest.conftest import Kube

# Root discovery (/api, /apis) and built-in groups: the CRD-only server serves neither.
pytestmark = pytest.mark.needs_builtin_kinds


GROUP = "discovery.pyctrl.dev"
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
KUBECTL_ACCEPT = f"{AGGREGATED_V2},{AGGREGATED_V2BETA1},application/json"


def crd(plural: str, kind: str, *, versions: tuple[str, ...] = ("v1",)) -> dict[str, Any]:
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
                "shortNames": [plural[:2]],
                "categories": ["all"],
            },
            "scope": "Cluster",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": version == versions[0],
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                        },
                    },
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
                for version in versions
            ],
        },
    }


@pytest.fixture
async def env() -> AsyncIterator[Environment]:
    async with Environment(crds=[crd("gears", "Gear", versions=("v1", "v1beta1"))]) as e:
        yield e


def _by_name(resources: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in resources}


@pytest.mark.embedded_only
async def test_version_reports_kubernetes_1_32(kube: Kube) -> None:
    """/version answers a version.Info of Kubernetes 1.32."""
    status, info, _ = await kube.get("/version")
    assert status == 200
    assert (info["major"], info["minor"]) == ("1", "32")
    assert info["gitVersion"] == "v1.32.0+pyctrl"
    assert info["platform"] == "linux/amd64"


async def test_api_lists_the_core_version(kube: Kube) -> None:
    """/api answers APIVersions with v1 when the client asks for plain JSON."""
    status, body, headers = await kube.get("/api", accept="application/json")
    assert status == 200
    assert headers["Content-Type"].startswith("application/json")
    assert body["kind"] == "APIVersions"
    assert body["versions"] == ["v1"]
    assert body["serverAddressByClientCIDRs"][0]["clientCIDR"] == "0.0.0.0/0"


async def test_core_resources_carry_verbs_short_names_and_subresources(kube: Kube) -> None:
    """/api/v1 lists each resource with kind, scope, verbs, short names and status entries."""
    _, body, _ = await kube.get("/api/v1")
    assert (body["kind"], body["groupVersion"]) == ("APIResourceList", "v1")
    resources = _by_name(body["resources"])
    namespaces = resources["namespaces"]
    assert namespaces["namespaced"] is False
    assert namespaces["kind"] == "Namespace"
    assert namespaces["singularName"] == "namespace"
    assert namespaces["shortNames"] == ["ns"]
    # As kube-apiserver 1.36: the namespace storage has no DeleteCollection.
    assert namespaces["verbs"] == ["create", "delete", "get", "list", "patch", "update", "watch"]
    assert resources["namespaces/status"]["verbs"] == ["get", "patch", "update"]
    assert resources["pods"]["storageVersionHash"] == "xPOwRZ+Yhw8="


async def test_scale_subresource_has_autoscaling_kind(kube: Kube) -> None:
    """A scale subresource is listed with kind Scale of autoscaling/v1."""
    _, body, _ = await kube.get("/apis/apps/v1")
    scale = _by_name(body["resources"])["deployments/scale"]
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    assert _by_name(body["resources"])["deployments"]["categories"] == ["all"]


async def test_group_list_names_preferred_versions(kube: Kube) -> None:
    """/apis lists every group with its versions, the preferred (highest priority) first."""
    _, body, _ = await kube.get("/apis", accept="application/json")
    assert body["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in body["groups"]}
    assert groups["apps"]["preferredVersion"] == {"groupVersion": "apps/v1", "version": "v1"}
    assert [v["version"] for v in groups[GROUP]["versions"]] == ["v1", "v1beta1"]
    assert "" not in groups


async def test_group_document(kube: Kube) -> None:
    """/apis/{group} answers the group's APIGroup."""
    status, body, _ = await kube.get(f"/apis/{GROUP}")
    assert status == 200
    assert body["kind"] == "APIGroup"
    assert body["preferredVersion"]["groupVersion"] == f"{GROUP}/v1"


async def test_unknown_group_version_is_the_mux_404(kube: Kube) -> None:
    """An unknown group gets the mux's plain-text 404; an unknown built-in version a Status."""
    assert (await kube.get("/apis/nope.example.com"))[:2] == (404, "404 page not found\n")
    # /api and each built-in /apis/<group> are go-restful web services: they claim the
    # path, and go-restful's 404 is answered as a Status (server/handler.go).
    for path in ("/apis/apps/v7", "/api/v2"):
        status, body, _ = await kube.get(path)
        assert (status, body["reason"]) == (404, "NotFound"), path


async def test_aggregated_discovery_answers_kubectl_accept_header(kube: Kube) -> None:
    """/apis answers kubectl's Accept with an apidiscovery.k8s.io/v2 list and its Content-Type."""
    status, body, headers = await kube.get("/apis", accept=KUBECTL_ACCEPT)
    assert status == 200
    assert headers["Content-Type"] == AGGREGATED_V2
    assert headers["Vary"] == "Accept"
    assert (body["kind"], body["apiVersion"]) == (
        "APIGroupDiscoveryList",
        "apidiscovery.k8s.io/v2",
    )
    groups = {g["metadata"]["name"]: g for g in body["items"]}
    assert [v["version"] for v in groups[GROUP]["versions"]] == ["v1", "v1beta1"]
    gears = {r["resource"]: r for r in groups[GROUP]["versions"][0]["resources"]}["gears"]
    assert gears["responseKind"] == {"group": GROUP, "version": "v1", "kind": "Gear"}
    assert gears["scope"] == "Cluster"
    assert gears["singularResource"] == "gear"
    assert gears["shortNames"] == ["ge"]
    subresources = {s["subresource"]: s for s in gears["subresources"]}
    assert subresources["scale"]["responseKind"] == {
        "group": "autoscaling",
        "version": "v1",
        "kind": "Scale",
    }
    assert subresources["status"]["verbs"] == ["get", "patch", "update"]
    assert groups[GROUP]["versions"][0]["freshness"] == "Current"


async def test_aggregated_core_group_has_no_name(kube: Kube) -> None:
    """/api answers an aggregated list with one unnamed group holding v1."""
    _, body, headers = await kube.get("/api", accept=KUBECTL_ACCEPT)
    assert headers["Content-Type"] == AGGREGATED_V2
    [core] = body["items"]
    assert "name" not in core["metadata"]
    assert [v["version"] for v in core["versions"]] == ["v1"]
    resources = {r["resource"] for r in core["versions"][0]["resources"]}
    assert {"pods", "namespaces", "configmaps"} <= resources


async def test_v2beta1_is_served_when_only_it_is_accepted(kube: Kube) -> None:
    """A client that accepts only v2beta1 aggregated discovery gets v2beta1."""
    _, body, headers = await kube.get("/apis", accept=AGGREGATED_V2BETA1)
    assert headers["Content-Type"] == AGGREGATED_V2BETA1
    assert body["apiVersion"] == "apidiscovery.k8s.io/v2beta1"


async def test_unsupported_accept_is_not_acceptable(kube: Kube) -> None:
    """/apis answers 406 when the client accepts nothing the server produces."""
    status, body, _ = await kube.get("/apis", accept="application/vnd.kubernetes.protobuf")
    assert status == 406
    assert body["reason"] == "NotAcceptable"


async def test_aggregated_etag_gives_not_modified(kube: Kube) -> None:
    """The aggregated document carries an ETag; sending it back gets 304 Not Modified."""
    _, _, headers = await kube.get("/apis", accept=KUBECTL_ACCEPT)
    etag = headers["ETag"]
    status, body, again = await kube.get(
        "/apis", accept=KUBECTL_ACCEPT, headers={"If-None-Match": etag}
    )
    assert status == 304
    assert again["ETag"] == etag
    assert body is None


async def test_crd_appears_in_and_leaves_discovery(env: Environment, kube: Kube) -> None:
    """A new CRD shows up in discovery once installed and goes when deleted; the ETag changes."""
    _, _, before = await kube.get("/apis", accept=KUBECTL_ACCEPT)
    await env.install_crds([crd("sprockets", "Sprocket")])
    _, body, after = await kube.get("/apis", accept=KUBECTL_ACCEPT)
    assert after["ETag"] != before["ETag"]
    names = {
        r["resource"]
        for g in body["items"]
        if g["metadata"]["name"] == GROUP
        for r in g["versions"][0]["resources"]
    }
    assert {"gears", "sprockets"} <= names
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/sprockets.{GROUP}"
    status, _, _ = await kube.delete(path)
    assert status == 200
    await wait_gone(kube, path)
    _, listing, _ = await kube.get(f"/apis/{GROUP}/v1")
    assert {r["name"] for r in listing["resources"]} == {"gears", "gears/scale", "gears/status"}


def test_versions_sort_by_kubernetes_priority() -> None:
    """Versions sort GA before beta before alpha, higher first, other names last."""
    shuffled = ["v1alpha1", "foo", "v2", "v1beta2", "v1", "v10", "v1beta1", "bar", "v2alpha3"]
    assert sort_versions(shuffled) == [
        "v10",
        "v2",
        "v1",
        "v1beta2",
        "v1beta1",
        "v2alpha3",
        "v1alpha1",
        "bar",
        "foo",
    ]


def test_storage_version_hash_matches_kube_apiserver() -> None:
    """The storage version hash is kube-apiserver's (known value for apps/v1 Deployment)."""
    assert storage_version_hash("apps", "v1", "Deployment") == "8aSe+NMegvE="


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (KUBECTL_ACCEPT, "v2"),
        (f"{AGGREGATED_V2BETA1},application/json", "v2beta1"),
        ("application/json, */*", ""),
        (None, ""),
        ("*/*", ""),
        (
            "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
            None,
        ),
        ("text/html", None),
    ],
)
def test_discovery_format_negotiation(accept: str | None, expected: str | None) -> None:
    """The Accept header picks the aggregated version, the classic document, or nothing."""
    assert negotiate_discovery(accept) == expected
