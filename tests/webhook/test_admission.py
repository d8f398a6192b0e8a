"""Admission handlers: defaulting patches and validation verdicts."""

from __future__ import annotations

import base64
from typing import Any

import jsonpatch
import orjson
import pytest

from pyctrl.webhook import AdmissionReview, current_request
from pyctrl.webhook._admission import DefaultingHandler, UserCodeError, ValidatingHandler

from .conftest import Checks, Defaults, MySrv, mysrv, review


def _request(body: dict[str, Any]) -> Any:
    parsed = AdmissionReview.model_validate(body).request
    assert parsed is not None
    return parsed


async def test_defaulting_answers_with_a_json_patch() -> None:
    """The response patch turns the object as sent into the defaulted object."""
    handler = DefaultingHandler(MySrv, Defaults(), "/mutate")
    original = mysrv(name="web")
    response = await handler.handle(_request(review("CREATE", original)))
    assert response.allowed
    assert response.patch_type == "JSONPatch"
    assert response.patch is not None
    ops = orjson.loads(base64.b64decode(response.patch))
    patched = jsonpatch.apply_patch(original, ops)
    assert patched["spec"] == {"name": "web", "port": 80, "image": "nginx"}


async def test_defaulting_with_nothing_to_do_sends_no_patch() -> None:
    """An object that is already defaulted is allowed without a patch."""
    handler = DefaultingHandler(MySrv, Defaults(), "/mutate")
    response = await handler.handle(
        _request(review("CREATE", mysrv(name="web", port=81, image="x")))
    )
    assert response.allowed
    assert response.patch is None


async def test_validation_denies_with_field_causes() -> None:
    """InvalidObjectError becomes a 422 Invalid status listing each field."""
    handler = ValidatingHandler(MySrv, Checks(), "/validate")
    response = await handler.handle(_request(review("CREATE", mysrv(port=70000))))
    assert not response.allowed
    assert response.status is not None
    assert response.status["code"] == 422
    assert response.status["reason"] == "Invalid"
    causes = response.status["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.name", "spec.port"]
    assert causes[0]["reason"] == "FieldValueRequired"


async def test_validation_returns_warnings() -> None:
    """Warnings a validator returns are carried in an allowed response."""
    handler = ValidatingHandler(MySrv, Checks(), "/validate")
    response = await handler.handle(_request(review("CREATE", mysrv(name="a", port=8080))))
    assert response.allowed
    assert response.warnings == ["port 8080 is often taken"]


async def test_update_sees_old_and_new_and_delete_sees_old_object() -> None:
    """Updates get both objects (immutability checks); deletes get oldObject."""
    handler = ValidatingHandler(MySrv, Checks(), "/validate")
    update = _request(review("UPDATE", mysrv(name="b", port=80), old=mysrv(name="a", port=80)))
    denied = await handler.handle(update)
    assert not denied.allowed
    assert denied.status is not None
    assert "immutable" in denied.status["message"]
    delete = _request(review("DELETE", None, old=mysrv("keep", name="a")))
    assert not (await handler.handle(delete)).allowed
    ok = _request(review("DELETE", None, old=mysrv("other", name="a")))
    assert (await handler.handle(ok)).allowed


async def test_user_code_sees_the_request() -> None:
    """current_request() exposes dryRun and userInfo inside user code only."""
    checks = Checks()
    handler = ValidatingHandler(MySrv, checks, "/validate")
    await handler.handle(_request(review("CREATE", mysrv(name="a"), dryRun=True)))
    assert checks.seen_dry_run == [True]
    with pytest.raises(LookupError):
        current_request()


async def test_malformed_object_is_a_bad_request() -> None:
    """An object that does not fit the type is denied with 400 naming the type."""
    handler = ValidatingHandler(MySrv, Checks(), "/validate")
    response = await handler.handle(_request(review("CREATE", mysrv(port="eighty"))))
    assert not response.allowed
    assert response.status is not None
    assert response.status["code"] == 400
    assert "not a valid MySrv" in response.status["message"]
    missing = await handler.handle(_request(review("CREATE", None)))
    assert missing.status is not None
    assert "has no object" in missing.status["message"]


async def test_unexpected_exception_is_reported_not_swallowed() -> None:
    """A bug in user code surfaces as UserCodeError with the original message."""
    handler = ValidatingHandler(MySrv, Checks(), "/validate")
    with pytest.raises(UserCodeError, match="RuntimeError: validator bug"):
        await handler.handle(_request(review("DELETE", None, old=mysrv("crash", name="a"))))
