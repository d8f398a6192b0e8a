"""HTTP-level answers on built-in paths, as kube-apiserver gives them.

The tests of CustomResourceDefinition paths run against the real CRD-only server too
(``nox -s realserver``): it serves the apiextensions.k8s.io group with the same
k8s.io/apiserver code as kube-apiserver serves every built-in group, so they check the
shared machinery on a real server; the others need kube-apiserver's own kinds.

Every built-in group version is a go-restful web service in kube-apiserver, and so are
``/api`` and each built-in ``/apis/<group>``: a path under one of them that no route
serves gets go-restful's 404 or 405, answered as a ``Status`` by ``serviceErrorHandler``
(``apierrors.NewGenericServerResponse``), where a path under no web service (an unknown
group, a custom resource's) falls through to the mux's plain-text ``404 page not found``.
A body is decoded by the legacy scheme into the type its ``apiVersion`` and ``kind`` name,
then converted to the endpoint's type; what fails is answered by ``transformDecodeError``.
Each expectation here follows kube-apiserver's source (``server/handler.go``,
``endpoints/installer.go``, ``endpoints/handlers/rest.go``, go-restful's router,
apimachinery's JSON serializer and scheme).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from tests.envtest.conformance.test_server_crd import crd, install
from tests.envtest.conformance.test_server_crud import cm, deployment
from tests.envtest.conftest import unique
from tests.kubectl import Kubectl

if TYPE_CHECKING:
    from pathlib import Path

    from pyctrl.envtest import Environment
    from tests.envtest.conftest import Kube

PAGE_NOT_FOUND = (404, "404 page not found\n")


@pytest.fixture
def group() -> str:
    """An API group no other test uses."""
    return f"{unique('g')}.example.com"


LEGACY_SCHEME = "pkg/api/legacyscheme/scheme.go:30"


def _status(code: int, reason: str, message: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    body.update(extra)
    body["code"] = code
    return body


GO_RESTFUL_404 = _status(
    404, "NotFound", "the server could not find the requested resource", details={}
)


@pytest.mark.needs_builtin_kinds
async def test_unknown_resources_under_builtin_group_versions_are_a_status_404(
    kube: Kube, ns: str
) -> None:
    """A path under a built-in group version that no route serves is go-restful's 404 Status."""
    for path in (
        "/api/v1/widgets",
        f"/api/v1/namespaces/{ns}/widgets",
        f"/apis/apps/v1/namespaces/{ns}/widgets",
        f"/api/v1/namespaces/{ns}/configmaps/x/status",
        "/api/v1/configmaps/x",
        f"/api/v1/namespaces/{ns}/nodes",
        "/apis/authorization.k8s.io/v1/widgets",
    ):
        status, body, headers = await kube.get(path)
        assert (status, body) == (404, GO_RESTFUL_404), path
        assert headers["Content-Type"] == "application/json", path


@pytest.mark.needs_builtin_kinds
async def test_unknown_versions_of_builtin_groups_are_a_status_404(kube: Kube, ns: str) -> None:
    """An unknown version of a built-in group is claimed by the group's web service: 404 Status."""
    for path in (
        "/api/v2",
        f"/api/v2/namespaces/{ns}/configmaps",
        "/apis/apps/v9",
        f"/apis/apps/v9/namespaces/{ns}/deployments",
    ):
        assert (await kube.get(path))[:2] == (404, GO_RESTFUL_404), path


@pytest.mark.needs_builtin_kinds
async def test_paths_under_no_builtin_group_get_the_mux_404(kube: Kube) -> None:
    """An unknown group is no web service's: the mux's plain-text 404 answers."""
    for path in ("/apis/unknown.example.com", "/apis/unknown.example.com/v1/widgets"):
        status, body, headers = await kube.get(path)
        assert (status, body) == PAGE_NOT_FOUND, path
        assert headers["Content-Type"] == "text/plain; charset=utf-8"


@pytest.mark.needs_builtin_kinds
async def test_post_to_a_builtin_object_path_is_405(kube: Kube, ns: str) -> None:
    """POST to a built-in object's path is go-restful's 405, without details."""
    expected = _status(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        details={},
    )
    for path, body in (
        (f"/api/v1/namespaces/{ns}/configmaps/x", cm("x")),
        (f"/apis/apps/v1/namespaces/{ns}/deployments/d", deployment("d")),
    ):
        assert (await kube.post(path, body))[:2] == (405, expected), path
    status, _, _ = await kube.get(f"/api/v1/namespaces/{ns}/configmaps/x")
    assert status == 404


@pytest.mark.needs_builtin_kinds
async def test_unsupported_content_type_on_builtin_create_and_update_is_415(
    kube: Kube, ns: str
) -> None:
    """POST and PUT bodies in a media type no serializer decodes are 415 with the accepted list."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a"))
    expected = _status(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
    )
    raw = orjson.dumps(cm("a"))
    for method, where in (("POST", path), ("PUT", f"{path}/a")):
        status, body, _ = await kube.request(method, where, raw=raw, content_type="text/plain")
        assert (status, body) == (415, expected), method


@pytest.mark.needs_builtin_kinds
async def test_patch_of_builtin_in_no_patch_type_is_go_restfuls_415(kube: Kube, ns: str) -> None:
    """A PATCH whose Content-Type the route does not consume gets go-restful's own 415."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("p"))
    expected = _status(415, "UnsupportedMediaType", "415: Unsupported Media Type", details={})
    for content_type in ("application/json", "text/plain", "application/apply-patch+cbor"):
        status, body, _ = await kube.request(
            "PATCH", f"{path}/p", raw=b'{"data":{}}', content_type=content_type
        )
        assert (status, body) == (415, expected), content_type


@pytest.mark.needs_builtin_kinds
async def test_head_on_builtin_paths_is_405(kube: Kube, ns: str) -> None:
    """kube-apiserver installs no HEAD routes: go-restful answers 405."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("h"))
    for where in (path, f"{path}/h"):
        status, _, _ = await kube.request("HEAD", where)
        assert status == 405, where


@pytest.mark.needs_builtin_kinds
async def test_accept_a_builtin_route_does_not_produce_is_go_restfuls_406(
    kube: Kube, ns: str
) -> None:
    """An Accept naming no media type the route produces is go-restful's 406 with them."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a"))
    produced = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    stream = "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    for where, accept, available in (
        (f"{path}/a", "text/html", produced),
        (path, "application/*", f"{produced}, {stream}"),
    ):
        status, body, _ = await kube.get(where, accept=accept)
        assert (status, body) == (
            406,
            _status(
                406,
                "NotAcceptable",
                f"406: Not Acceptable\n\nAvailable representations: {available}",
                details={},
            ),
        ), accept
    table = "application/json;as=Table;v=v1;g=meta.k8s.io, text/html"
    status, body, _ = await kube.get(path, accept=table)
    assert (status, body["kind"]) == (200, "Table")


@pytest.mark.needs_builtin_kinds
async def test_body_of_another_known_kind_fails_conversion_with_400(kube: Kube, ns: str) -> None:
    """A body naming another kind of the scheme decodes, then fails conversion: 400."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a"))
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}}
    expected = _status(
        400,
        "BadRequest",
        'Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to '
        "(core.ConfigMap): unknown conversion",
    )
    assert (await kube.post(path, secret))[:2] == (400, expected)
    assert (await kube.put(f"{path}/a", secret))[:2] == (400, expected)
    stateful = deployment("d")
    stateful["kind"] = "StatefulSet"
    status, body, _ = await kube.post(f"/apis/apps/v1/namespaces/{ns}/deployments", stateful)
    assert (status, body["message"]) == (
        400,
        'StatefulSet in version "v1" cannot be handled as a Deployment: converting '
        "(v1.StatefulSet) to (apps.Deployment): unknown conversion",
    )


@pytest.mark.needs_builtin_kinds
async def test_body_of_a_kind_its_version_lacks_is_400_not_registered(kube: Kube, ns: str) -> None:
    """A body whose apiVersion has no such kind fails decoding: 400 naming the scheme."""
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await kube.create_ok(path, cm("a"))
    in_apps = cm("a")
    in_apps["apiVersion"] = "apps/v1"
    expected = _status(
        400,
        "BadRequest",
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is '
        f'registered for version "apps/v1" in scheme "{LEGACY_SCHEME}"',
    )
    assert (await kube.put(f"{path}/a", in_apps))[:2] == (400, expected)
    assert (await kube.post(path, in_apps))[:2] == (400, expected)
    in_core = deployment("d")
    in_core["apiVersion"] = "v1"
    status, body, _ = await kube.post(f"/apis/apps/v1/namespaces/{ns}/deployments", in_core)
    assert (status, body["message"]) == (
        400,
        'Deployment in version "v1" cannot be handled as a Deployment: no kind "Deployment" '
        f'is registered for version "v1" in scheme "{LEGACY_SCHEME}"',
    )
    elsewhere = cm("b")
    elsewhere["apiVersion"] = "example.com/v1"
    status, body, _ = await kube.post(path, elsewhere)
    assert (status, body["message"]) == (
        400,
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: no kind "ConfigMap" is '
        f'registered for version "example.com/v1" in scheme "{LEGACY_SCHEME}"',
    )


@pytest.mark.needs_builtin_kinds
async def test_body_of_the_kind_at_another_served_version_is_an_api_version_400(
    kube: Kube, ns: str
) -> None:
    """The same kind at another served group version converts, then the version check refuses it."""
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "reportingController": "example.com/c",
        "reportingInstance": "i",
        "action": "Act",
        "reason": "Why",
        "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": ns},
    }
    status, body, _ = await kube.post(f"/api/v1/namespaces/{ns}/events", event)
    assert (status, body) == (
        400,
        _status(
            400,
            "BadRequest",
            "the API version in the data (events.k8s.io/v1) does not match the expected API "
            "version (v1)",
        ),
    )


@pytest.mark.needs_builtin_kinds
@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"not json", "invalid character 'o' in literal null (expecting 'u') (6e6f74206a736f6e)"),
        (b"{", "unexpected end of JSON input ({)"),
        (b'{"a":}', "invalid character '}' looking for beginning of value ({\"a\":})"),
        (b'{"a" 1}', "invalid character '1' after object key ({\"a\" 1})"),
        (b"", "unexpected end of JSON input (<empty>)"),
        (
            b"[1]",
            "json: cannot unmarshal array into Go value of type struct { APIVersion string "
            '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" } '
            "(5b315d)",
        ),
    ],
)
async def test_body_that_is_not_a_json_object_is_400_unrecognized(
    kube: Kube, ns: str, raw: bytes, problem: str
) -> None:
    """A body Go's JSON decoder refuses is 400 naming the expected kind and the body's start."""
    status, body, _ = await kube.request(
        "POST", f"/api/v1/namespaces/{ns}/configmaps", raw=raw, content_type="application/json"
    )
    assert (status, body) == (
        400,
        _status(
            400,
            "BadRequest",
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
            f"version/kind; json parse error: {problem}",
        ),
    )


@pytest.mark.needs_builtin_kinds
@pytest.mark.kubectl
async def test_kubectl_raw_create_of_another_kind_reports_the_conversion_error(
    env: Environment, ns: str, tmp_path: Path
) -> None:
    """kubectl create --raw relays the 400 of a body whose kind the endpoint cannot take."""
    kubectl = Kubectl(env.kubeconfig_path, tmp_path / "cache", ns)
    body = tmp_path / "secret.json"
    body.write_bytes(
        orjson.dumps({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
    )
    run = await kubectl(
        "create", "--raw", f"/api/v1/namespaces/{ns}/configmaps", "-f", str(body), check=False
    )
    assert run.code != 0
    assert run.err.strip() == (
        'Error from server (BadRequest): Secret in version "v1" cannot be handled as a '
        "ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion"
    )
    run = await kubectl("get", "--raw", "/apis/apps/v9/deployments", check=False)
    assert run.code != 0
    assert run.err.strip() == (
        "Error from server (NotFound): the server could not find the requested resource"
    )


CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
APIEXTENSIONS_SCHEME = r'"(k8s\.io/apiextensions-apiserver/)?pkg/apiserver/apiserver\.go:55"'
"""The apiextensions scheme as its errors name it: a release build prints the path from
``pkg/``, the CRD-only server built in GOPATH mode (``nox -s realserver``) from its import
path."""


async def test_unknown_paths_under_the_apiextensions_group_are_a_status_404(kube: Kube) -> None:
    """Unknown versions, resources and subresources of a built-in group: go-restful's 404."""
    for path in (
        "/apis/apiextensions.k8s.io/v9",
        "/apis/apiextensions.k8s.io/v9/customresourcedefinitions",
        "/apis/apiextensions.k8s.io/v1/widgets",
        f"{CRDS}/widgets.example.com/scale",
    ):
        status, body, headers = await kube.get(path)
        assert (status, body) == (404, GO_RESTFUL_404), path
        assert headers["Content-Type"] == "application/json", path


async def test_router_refusals_on_crd_paths_are_go_restfuls(kube: Kube, group: str) -> None:
    """POST on an object path and HEAD are 405, a non-patch PATCH 415, a foreign Accept 406."""
    name = f"mysrvs.{group}"
    status, body, _ = await kube.post(f"{CRDS}/{name}", crd(group))
    assert (status, body) == (
        405,
        _status(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            details={},
        ),
    )
    for where in (CRDS, f"{CRDS}/{name}"):
        assert (await kube.request("HEAD", where))[0] == 405, where
    status, body, _ = await kube.request(
        "PATCH", f"{CRDS}/{name}", raw=b"{}", content_type="application/json"
    )
    assert (status, body) == (
        415,
        _status(415, "UnsupportedMediaType", "415: Unsupported Media Type", details={}),
    )
    produced = "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    stream = "application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
    for where, accept, available in (
        (f"{CRDS}/{name}", "text/html", produced),
        (CRDS, "application/*", f"{produced}, {stream}"),
    ):
        status, body, _ = await kube.get(where, accept=accept)
        assert (status, body["message"]) == (
            406,
            f"406: Not Acceptable\n\nAvailable representations: {available}",
        ), accept


@pytest.mark.parametrize(
    ("api_version", "kind", "problem"),
    [
        ("v1", "Secret", 'no kind "Secret" is registered for version "v1" in scheme {scheme}'),
        (
            "apps/v1",
            "CustomResourceDefinition",
            'no kind "CustomResourceDefinition" is registered for version "apps/v1" in scheme '
            "{scheme}",
        ),
        (
            "apiextensions.k8s.io/v9",
            "CustomResourceDefinition",
            'no kind "CustomResourceDefinition" is registered for version '
            '"apiextensions.k8s.io/v9" in scheme {scheme}',
        ),
        (
            "apiextensions.k8s.io/v1",
            "crd",
            'no kind "crd" is registered for version "apiextensions.k8s.io/v1" in scheme {scheme}',
        ),
        (
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinitionList",
            "converting (v1.CustomResourceDefinitionList) to "
            "(apiextensions.CustomResourceDefinition): unknown conversion",
        ),
        (
            "v1",
            "Status",
            "converting (v1.Status) to (apiextensions.CustomResourceDefinition): unknown "
            "conversion",
        ),
        (
            "v1",
            "ListOptions",
            "converting (v1.ListOptions) to (apiextensions.CustomResourceDefinition): unknown "
            "conversion",
        ),
    ],
)
async def test_crd_body_its_scheme_cannot_decode_as_one_is_400(
    kube: Kube, group: str, api_version: str, kind: str, problem: str
) -> None:
    """A CRD body naming a kind the apiextensions scheme lacks, or another kind, is a 400."""
    body = crd(group)
    body["apiVersion"], body["kind"] = api_version, kind
    status, answer, _ = await kube.post(CRDS, body)
    version = api_version.rpartition("/")[2]
    expected = re.escape(
        f'{kind} in version "{version}" cannot be handled as a CustomResourceDefinition: '
    ) + re.escape(problem).replace(re.escape("{scheme}"), APIEXTENSIONS_SCHEME)
    assert status == 400
    assert answer["reason"] == "BadRequest"
    assert re.fullmatch(expected, answer["message"]), answer["message"]


async def test_crd_body_of_another_registered_version_is_an_api_version_400(
    kube: Kube, group: str
) -> None:
    """A CRD body at v1beta1 decodes and converts; the API version check refuses it."""
    body = crd(group)
    body["apiVersion"] = "apiextensions.k8s.io/v1beta1"
    assert (await kube.post(CRDS, body))[:2] == (
        400,
        _status(
            400,
            "BadRequest",
            "the API version in the data (apiextensions.k8s.io/v1beta1) does not match the "
            "expected API version (apiextensions.k8s.io/v1)",
        ),
    )


async def test_crd_update_without_a_name_is_400_undeterminable(
    env: Environment, kube: Kube, group: str
) -> None:
    """A PUT whose body names no object is refused before any other check (checkName)."""
    await install(env, crd(group))
    name = f"mysrvs.{group}"
    message = (
        f"the name of the object ({name} based on URL) was undeterminable: name must be provided"
    )
    body = crd(group)
    del body["metadata"]["name"]
    for sent in (body, {}):
        assert (await kube.put(f"{CRDS}/{name}", sent))[:2] == (
            400,
            _status(400, "BadRequest", message),
        )
