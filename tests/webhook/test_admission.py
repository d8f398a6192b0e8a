"""Admission over HTTPS: defaulting patches and validation verdicts."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import jsonpatch
import orjson
import pytest

from pyctrl.webhook import (
    AdmissionResponse,
    Server,
    current_request,
    mutate_path,
    register_defaulter,
    validate_path,
)

from .conftest import MySrv, mysrv, review

if TYPE_CHECKING:
    from .conftest import Served

MUTATE = mutate_path(MySrv)
VALIDATE = validate_path(MySrv)


def _patch(response: AdmissionResponse) -> list[dict[str, Any]]:
    assert response.allowed
    assert response.patch_type == "JSONPatch"
    assert response.patch is not None
    ops: list[dict[str, Any]] = orjson.loads(base64.b64decode(response.patch))
    return ops


async def test_defaulting_answers_with_a_json_patch(served: Served) -> None:
    """The response patch turns the object as sent into the defaulted object."""
    original = mysrv(name="web")
    ops = _patch(await served.admit(MUTATE, review("CREATE", original)))
    patched = jsonpatch.apply_patch(original, ops)
    assert patched["spec"] == {"name": "web", "port": 80, "image": "nginx"}


async def test_defaulting_with_nothing_to_do_sends_no_patch(served: Served) -> None:
    """An object that is already defaulted is allowed without a patch."""
    response = await served.admit(MUTATE, review("CREATE", mysrv(name="web", port=81, image="x")))
    assert response.allowed
    assert response.patch is None


async def test_defaulting_patch_carries_only_what_default_changed(served: Served) -> None:
    """Round-trip artifacts (a null creationTimestamp, model defaults) stay out of the patch."""
    original = mysrv(name="web")
    original["metadata"]["creationTimestamp"] = None
    original["metadata"]["labels"] = {}
    ops = _patch(await served.admit(MUTATE, review("CREATE", original)))
    assert sorted(ops, key=lambda op: op["path"]) == [
        {"op": "add", "path": "/spec/image", "value": "nginx"},
        {"op": "add", "path": "/spec/port", "value": 80},
    ]
    assert jsonpatch.apply_patch(original, ops)["metadata"]["creationTimestamp"] is None


async def test_defaulting_patch_applies_when_the_model_adds_containers(served: Served) -> None:
    """Without a spec the patch adds one holding only the defaulted fields, not model defaults."""
    original = mysrv()
    del original["spec"]
    ops = _patch(await served.admit(MUTATE, review("CREATE", original)))
    assert ops == [{"op": "add", "path": "/spec", "value": {"port": 80, "image": "nginx"}}]
    assert jsonpatch.apply_patch(original, ops)["spec"] == {"port": 80, "image": "nginx"}


async def test_defaulter_removals_are_patched(cert_dir: Any) -> None:
    """A field the defaulter deletes becomes a remove operation."""

    class DropImage:
        async def default(self, obj: MySrv) -> None:
            obj.spec.image = None

    directory, _ = cert_dir
    server = Server(port=0, cert_dir=directory)
    path = register_defaulter(server, MySrv, DropImage())
    endpoint = server.handler_at(path)
    assert endpoint is not None
    answer = await endpoint.review(review("CREATE", mysrv(name="web", image="x")))
    response = orjson.loads(answer.body)["response"]  # type: ignore[arg-type]
    ops = orjson.loads(base64.b64decode(response["patch"]))
    assert ops == [{"op": "remove", "path": "/spec/image"}]


async def test_validation_denies_with_field_causes(served: Served) -> None:
    """InvalidObjectError becomes a 422 Invalid status listing each field."""
    response = await served.admit(VALIDATE, review("CREATE", mysrv(port=70000)))
    assert not response.allowed
    assert response.status is not None
    assert response.status["code"] == 422
    assert response.status["reason"] == "Invalid"
    causes = response.status["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.name", "spec.port"]
    assert causes[0]["reason"] == "FieldValueRequired"


async def test_validation_returns_warnings(served: Served) -> None:
    """Warnings a validator returns are carried in an allowed response."""
    response = await served.admit(VALIDATE, review("CREATE", mysrv(name="a", port=8080)))
    assert response.allowed
    assert response.warnings == ["port 8080 is often taken"]


async def test_update_sees_old_and_new_and_delete_sees_old_object(served: Served) -> None:
    """Updates get both objects (immutability checks); deletes get oldObject."""
    update = review("UPDATE", mysrv(name="b", port=80), old=mysrv(name="a", port=80))
    denied = await served.admit(VALIDATE, update)
    assert not denied.allowed
    assert denied.status is not None
    assert "immutable" in denied.status["message"]
    delete = review("DELETE", None, old=mysrv("keep", name="a"))
    assert not (await served.admit(VALIDATE, delete)).allowed
    ok = review("DELETE", None, old=mysrv("other", name="a"))
    assert (await served.admit(VALIDATE, ok)).allowed


async def test_user_code_sees_the_request(served: Served) -> None:
    """current_request() exposes dryRun and userInfo inside user code only."""
    await served.admit(VALIDATE, review("CREATE", mysrv(name="a"), dryRun=True))
    [(dry_run, user_info)] = served.checks.seen
    assert dry_run is True
    assert user_info.username == "alice"
    assert user_info.groups == ["system:authenticated"]
    with pytest.raises(LookupError):
        current_request()


async def test_malformed_object_is_a_bad_request(served: Served) -> None:
    """An object that does not fit the type is denied with 400 naming the type."""
    response = await served.admit(VALIDATE, review("CREATE", mysrv(port="eighty")))
    assert not response.allowed
    assert response.status is not None
    assert response.status["code"] == 400
    assert "not a valid MySrv" in response.status["message"]
    missing = await served.admit(VALIDATE, review("CREATE", None))
    assert missing.status is not None
    assert "has no object" in missing.status["message"]


async def test_unexpected_exception_is_reported_not_swallowed(served: Served) -> None:
    """A bug in user code denies with code 500 and the exception's type and message."""
    response = await served.admit(VALIDATE, review("DELETE", None, old=mysrv("crash", name="a")))
    assert not response.allowed
    assert response.status is not None
    assert response.status["code"] == 500
    assert response.status["reason"] == "InternalError"
    assert response.status["message"] == "RuntimeError: validator bug"
