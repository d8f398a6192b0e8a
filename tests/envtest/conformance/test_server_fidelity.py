"""HTTP-level answers on custom resource paths, as the real API server gives them.

Each expectation here was taken from the real CRD server (kube-apiextensions 0.36, which
kube-apiserver embeds); the file runs against it (``nox -s realserver``) and against the
embedded server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest

from tests.envtest.conformance.test_server_crd import crd, install, srv
from tests.envtest.conftest import unique

if TYPE_CHECKING:
    from pyctrl.envtest import Environment
    from tests.envtest.conftest import Kube

PAGE_NOT_FOUND = (404, "404 page not found\n")


@pytest.fixture
def group() -> str:
    """An API group no other test uses."""
    return f"{unique('g')}.example.com"


def _status(code: int, reason: str, message: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    if reason:
        body["reason"] = reason
    body.update(extra)
    body["code"] = code
    return body


async def test_unknown_groups_versions_and_resources_get_the_mux_404(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Paths no API serves get the mux's plain-text 404, not a Status."""
    await install(env, crd(group))
    for path in (
        f"/apis/unknown.{group}",
        f"/apis/unknown.{group}/v1/widgets",
        f"/apis/{group}/v9/namespaces/{ns}/mysrvs",
        f"/apis/{group}/v1/namespaces/{ns}/widgets",
    ):
        status, body, headers = await kube.get(path)
        assert (status, body) == PAGE_NOT_FOUND, path
        assert headers["Content-Type"] == "text/plain; charset=utf-8"


async def test_unsupported_content_type_is_415(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A body in a media type the server does not decode is 415 UnsupportedMediaType."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "a", port=1))
    raw = orjson.dumps(srv(group, "b", port=1))
    expected = _status(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
    )
    for method, where in (("POST", path), ("PUT", f"{path}/a")):
        status, body, _ = await kube.request(method, where, raw=raw, content_type="text/plain")
        assert (status, body) == (415, expected), method


async def test_body_kind_of_another_type_is_422(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A custom resource body naming another kind is Invalid at field kind."""
    await install(env, crd(group))
    body = srv(group, "b", port=1)
    body["kind"] = "Other"
    status, answer, _ = await kube.post(f"/apis/{group}/v1/namespaces/{ns}/mysrvs", body)
    assert (status, answer) == (
        422,
        _status(
            422,
            "Invalid",
            f'Other.{group} "b" is invalid: kind: Invalid value: "Other": must be MySrv',
            details={
                "name": "b",
                "group": group,
                "kind": "Other",
                "causes": [
                    {
                        "reason": "FieldValueInvalid",
                        "message": 'Invalid value: "Other": must be MySrv',
                        "field": "kind",
                    }
                ],
            },
        ),
    )


async def test_post_to_an_object_path_creates_the_body(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """The CRD handler treats POST on an object path as a create of the body."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    created = await kube.create_ok(f"{path}/zz", srv(group, "zz", port=1))
    assert created["metadata"]["name"] == "zz"
    status, body, _ = await kube.post(f"{path}/zz", srv(group, "zz", port=1))
    assert status == 409
    assert body["reason"] == "AlreadyExists"


async def test_deprecated_version_warns_on_each_request(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Requests through a deprecated CRD version carry its deprecation Warning."""
    definition = crd(group)
    definition["spec"]["versions"][1]["deprecated"] = True
    await install(env, definition)
    path = f"/apis/{group}/v1beta1/namespaces/{ns}/mysrvs"
    body = srv(group, "old", port=1)
    body["apiVersion"] = f"{group}/v1beta1"
    warning = f'299 - "{group}/v1beta1 MySrv is deprecated; use {group}/v1 MySrv"'
    status, _, headers = await kube.post(path, body)
    assert status == 201
    assert headers.getall("Warning") == [warning]
    for where in (path, f"{path}/old"):
        status, _, headers = await kube.get(where)
        assert status == 200
        assert headers.getall("Warning") == [warning]
    status, _, headers = await kube.get(f"/apis/{group}/v1/namespaces/{ns}/mysrvs/old")
    assert status == 200
    assert "Warning" not in headers


async def test_deprecation_warning_text_replaces_the_default(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A version's deprecationWarning is sent as given."""
    definition = crd(group)
    definition["spec"]["versions"][1]["deprecated"] = True
    definition["spec"]["versions"][1]["deprecationWarning"] = 'use "v1" now'
    await install(env, definition)
    _, _, headers = await kube.get(f"/apis/{group}/v1beta1/namespaces/{ns}/mysrvs")
    assert headers.getall("Warning") == ['299 - "use \\"v1\\" now"']


async def test_watch_from_before_the_watch_cache_is_expired(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A watch from a version older than the watch cache's start gets a 410 Expired event."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "a", port=1))
    events = await kube.watch_lines(
        path, params={"resourceVersion": "1"}, stop=lambda events: len(events) >= 1
    )
    assert len(events) == 1
    event = events[0]
    assert event["type"] == "ERROR"
    message = event["object"].pop("message")
    assert message.startswith("too old resource version: 1 (")
    assert event["object"] == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "reason": "Expired",
        "code": 410,
    }


async def test_unparsable_resource_version_answers(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A watch with an unparsable resourceVersion is a 500 without reason; a list is a 400."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    problem = (
        'resourceVersion: Invalid value: "{v}": strconv.ParseUint: parsing "{v}": invalid syntax'
    )
    for value in ("abc", "-1"):
        status, body, _ = await kube.get(path, params={"watch": "true", "resourceVersion": value})
        assert (status, body) == (500, _status(500, "", problem.format(v=value))), value
    status, body, _ = await kube.get(path, params={"resourceVersion": "abc"})
    assert (status, body) == (
        400,
        _status(400, "BadRequest", "invalid resource version: " + problem.format(v="abc")),
    )


async def test_custom_resource_without_name_is_422(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A custom resource with neither name nor generateName is Invalid at metadata.name."""
    await install(env, crd(group))
    body = srv(group, "x", port=1)
    body["metadata"] = {}
    status, answer, _ = await kube.post(f"/apis/{group}/v1/namespaces/{ns}/mysrvs", body)
    assert (status, answer) == (
        422,
        _status(
            422,
            "Invalid",
            f'MySrv.{group} "" is invalid: metadata.name: Required value: name or generateName '
            "is required",
            details={
                "group": group,
                "kind": "MySrv",
                "causes": [
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value: name or generateName is required",
                        "field": "metadata.name",
                    }
                ],
            },
        ),
    )


async def test_new_finalizer_while_deleting_is_reported_by_both_checks(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """Adding a finalizer to a deleting object fails the common and the strategy check."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    body = srv(group, "f", port=1)
    body["metadata"]["finalizers"] = ["example.com/keep"]
    await kube.create_ok(path, body)
    status, _, _ = await kube.delete(f"{path}/f")
    assert status == 200
    adding = {"metadata": {"finalizers": ["example.com/keep", "example.com/new"]}}
    status, answer, _ = await kube.patch(f"{path}/f", adding)
    message = (
        "Forbidden: no new finalizers can be added if the object is being deleted, found new "
        'finalizers []string{"example.com/new"}'
    )
    cause = {"reason": "FieldValueForbidden", "message": message, "field": "metadata.finalizers"}
    assert status == 422
    assert answer["message"] == f'MySrv.{group} "f" is invalid: metadata.finalizers: {message}'
    assert answer["details"]["causes"] == [cause, cause]
    status, _, _ = await kube.patch(f"{path}/f", {"metadata": {"finalizers": []}})
    assert status == 200


async def test_update_reports_every_metadata_error_from_each_check(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A bad label and a new finalizer while deleting: every check reports what it sees.

    The common create-time check sees the label, the common update check and the
    strategy's update check see both: five causes, the message listing each once.
    """
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    body = srv(group, "f", port=1)
    body["metadata"]["finalizers"] = ["example.com/keep"]
    await kube.create_ok(path, body)
    status, _, _ = await kube.delete(f"{path}/f")
    assert status == 200
    adding = {
        "metadata": {
            "finalizers": ["example.com/keep", "example.com/new"],
            "labels": {"bad key!": "v"},
        }
    }
    status, answer, _ = await kube.patch(f"{path}/f", adding)
    assert status == 422, answer
    label = {
        "reason": "FieldValueInvalid",
        "message": (
            'Invalid value: "bad key!": name part must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        ),
        "field": "metadata.labels",
    }
    finalizer = {
        "reason": "FieldValueForbidden",
        "message": (
            "Forbidden: no new finalizers can be added if the object is being deleted, found "
            'new finalizers []string{"example.com/new"}'
        ),
        "field": "metadata.finalizers",
    }
    assert answer["details"]["causes"] == [label, finalizer, label, finalizer, label]
    assert answer["message"] == (
        f'MySrv.{group} "f" is invalid: [metadata.labels: {label["message"]}, '
        f"metadata.finalizers: {finalizer['message']}]"
    )
    status, _, _ = await kube.patch(f"{path}/f", {"metadata": {"finalizers": []}})
    assert status == 200


async def test_create_reports_every_metadata_error_at_once(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A nameless custom resource with bad labels, owner references and finalizers: all causes."""
    await install(env, crd(group))
    body = srv(group, "", port=1)
    del body["metadata"]["name"]
    body["metadata"].update(
        labels={"bad key!": "v"},
        ownerReferences=[{"apiVersion": "v1", "kind": "", "name": "", "uid": ""}],
        finalizers=["orphan", "foregroundDeletion"],
    )
    status, answer, _ = await kube.post(f"/apis/{group}/v1/namespaces/{ns}/mysrvs", body)
    assert status == 422, answer
    empty = 'Invalid value: "": must not be empty'
    assert [(c["field"], c["message"]) for c in answer["details"]["causes"]] == [
        ("metadata.name", "Required value: name or generateName is required"),
        (
            "metadata.labels",
            'Invalid value: "bad key!": name part must consist of alphanumeric characters, '
            "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        ("metadata.ownerReferences.kind", empty),
        ("metadata.ownerReferences.name", empty),
        ("metadata.ownerReferences.uid", empty),
        (
            "metadata.finalizers",
            'Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and '
            "foregroundDeletion cannot be both set",
        ),
    ]


_FIND_KIND = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)


@pytest.mark.parametrize(
    ("raw", "content_type", "problem"),
    [
        (
            b"not json",
            "application/json",
            "couldn't get version/kind; json parse error: invalid character 'o' in literal "
            "null (expecting 'u') (6e6f74206a736f6e)",
        ),
        (
            b"{",
            "application/json",
            "couldn't get version/kind; json parse error: unexpected end of JSON input ({)",
        ),
        (
            b"",
            "application/json",
            "couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)",
        ),
        (
            b"[1]",
            "application/json",
            f"couldn't get version/kind; json parse error: json: cannot unmarshal array into "
            f"Go value of type {_FIND_KIND} (5b315d)",
        ),
        (
            b'"x"',
            "application/json",
            f"couldn't get version/kind; json parse error: json: cannot unmarshal string into "
            f"Go value of type {_FIND_KIND} (227822)",
        ),
        *(
            (raw, "application/json", f"couldn't get version/kind; json parse error: {error}")
            for raw, error in (
                (b"01", "invalid character '1' after top-level value (3031)"),
                (
                    b'{"a":1,}',
                    "invalid character '}' looking for beginning of object key string ({\"a\":1,})",
                ),
                (b'{"a" 1}', "invalid character '1' after object key ({\"a\" 1})"),
                (
                    b'{"a":1 "b"}',
                    'invalid character \'"\' after object key:value pair ({"a":1 "b"})',
                ),
                (b"[1 2]", "invalid character '2' after array element (5b3120325d)"),
                (b"[1,]", "invalid character ']' looking for beginning of value (5b312c5d)"),
            )
        ),
        (b"null", "application/json", "Object 'Kind' is missing in 'null' (6e756c6c)"),
        (b" null ", "application/json", "Object 'Kind' is missing in ' null ' (206e756c6c20)"),
        (b"", "application/yaml", "Object 'Kind' is missing in '' (<empty>)"),
        (b"~\n", "application/yaml", "Object 'Kind' is missing in '~\n' (7e0a)"),
        (
            b"- a\n",
            "application/yaml",
            f"couldn't get version/kind; json parse error: json: cannot unmarshal array into "
            f"Go value of type {_FIND_KIND} (2d20610a)",
        ),
    ],
)
async def test_custom_resource_body_that_is_not_an_object_is_400_unrecognized(
    env: Environment,
    kube: Kube,
    *,
    ns: str,
    group: str,
    raw: bytes,
    content_type: str,
    problem: str,
) -> None:
    """A body that is not a JSON object is 400 with Go's error and the body's start."""
    await install(env, crd(group))
    status, body, _ = await kube.request(
        "POST", f"/apis/{group}/v1/namespaces/{ns}/mysrvs", raw=raw, content_type=content_type
    )
    assert (status, body) == (
        400,
        _status(
            400,
            "BadRequest",
            f"the object provided is unrecognized (must be of type MySrv): {problem}",
        ),
    )


async def test_custom_resource_update_without_a_name_is_400_undeterminable(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """A PUT whose body names no object is update.go's checkName 400."""
    await install(env, crd(group))
    path = f"/apis/{group}/v1/namespaces/{ns}/mysrvs"
    await kube.create_ok(path, srv(group, "a", port=1))
    body = srv(group, "a", port=1)
    del body["metadata"]["name"]
    assert (await kube.put(f"{path}/a", body))[:2] == (
        400,
        _status(
            400,
            "BadRequest",
            "the name of the object (a based on URL) was undeterminable: name must be provided",
        ),
    )


async def test_custom_resource_accept_the_server_cannot_produce_is_406(
    env: Environment, kube: Kube, ns: str, group: str
) -> None:
    """The CRD handler's 406 lists every media type its serializers have."""
    await install(env, crd(group))
    status, body, _ = await kube.get(f"/apis/{group}/v1/namespaces/{ns}/mysrvs", accept="text/html")
    assert (status, body) == (
        406,
        _status(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml, "
            "application/vnd.kubernetes.protobuf",
        ),
    )
