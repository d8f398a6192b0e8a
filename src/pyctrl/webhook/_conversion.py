"""Conversion webhooks: ConversionReview v1 and hub-and-spoke conversion."""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Literal, Protocol, Self, runtime_checkable

import orjson
from aiohttp import web
from pydantic import Field, ValidationError

from pyctrl import metrics
from pyctrl.log import get_logger
from pyctrl.resource import CustomResource, accessor
from pyctrl.webhook._admission import BadReviewError, Wire

__all__ = [
    "CONVERSION_DATA_ANNOTATION",
    "ConversionHandler",
    "ConversionRequest",
    "ConversionResponse",
    "ConversionReview",
    "Spoke",
]

CONVERSION_DATA_ANNOTATION = "pyctrl.dev/conversion-data"
"""Annotation where a spoke keeps the hub fields it cannot represent, so none are lost."""

_log = get_logger("pyctrl.webhook")


class ConversionRequest(Wire):
    """``apiextensions.k8s.io/v1`` ConversionRequest: objects to convert to one version."""

    uid: str
    desired_api_version: str = Field(alias="desiredAPIVersion")
    objects: list[dict[str, Any]]


class ConversionResponse(Wire):
    """``apiextensions.k8s.io/v1`` ConversionResponse: the converted objects, or why not.

    ``result`` is a ``Status``: ``{"status": "Success"}``, or ``"Failure"`` with a
    ``message`` the API server passes on to its client.
    """

    uid: str
    converted_objects: list[dict[str, Any]]
    result: dict[str, Any]


class ConversionReview(Wire):
    """``apiextensions.k8s.io/v1`` ConversionReview: the request in, the response out."""

    api_version: Literal["apiextensions.k8s.io/v1"] = Field(
        default="apiextensions.k8s.io/v1", alias="apiVersion"
    )
    kind: Literal["ConversionReview"] = "ConversionReview"
    request: ConversionRequest | None = None
    response: ConversionResponse | None = None


@runtime_checkable
class Spoke(Protocol):
    """A non-hub version: converts itself to the hub and builds itself from the hub.

    The hub is the version every other converts through, usually the storage version;
    it needs no methods.
    """

    def to_hub(self) -> CustomResource:
        """Return this object as the hub version."""
        ...

    @classmethod
    def from_hub(cls, hub: Any) -> Self:
        """Build this version from a hub object."""
        ...


class ConversionHandler:
    """Converts objects between the versions of one kind through the hub.

    A spoke built from the hub records the hub's full content in the
    `CONVERSION_DATA_ANNOTATION` annotation; converting that spoke back to the hub
    restores every field the spoke version cannot hold, and drops the annotation. So a
    round trip v1 -> v1alpha1 -> v1 loses nothing even if v1alpha1 is narrower.

    Args:
        hub: The hub version's class.
        spokes: The other versions' classes, each implementing `Spoke`.
    """

    name: ClassVar[str] = "/convert"

    def __init__(self, hub: type[CustomResource], spokes: list[type[CustomResource]]) -> None:
        group, kind = hub.gvk().group, hub.gvk().kind
        self.hub = hub
        self.versions: dict[str, type[CustomResource]] = {hub.gvk().api_version: hub}
        for spoke in spokes:
            gvk = spoke.gvk()
            if (gvk.group, gvk.kind) != (group, kind):
                raise TypeError(f"{spoke.__name__} is not a version of {group} {kind}")
            if not (hasattr(spoke, "to_hub") and hasattr(spoke, "from_hub")):
                raise TypeError(f"{spoke.__name__} must define to_hub() and from_hub()")
            self.versions[gvk.api_version] = spoke

    def convert(self, obj: dict[str, Any], desired_api_version: str) -> dict[str, Any]:
        """Convert one object (wire form) to ``desired_api_version``.

        Raises:
            ValueError: an unknown version, or an object its class refuses (message says).
        """
        source = self.versions.get(str(obj.get("apiVersion")))
        target = self.versions.get(desired_api_version)
        if source is None:
            raise ValueError(f"cannot convert from unknown version {obj.get('apiVersion')!r}")
        if target is None:
            raise ValueError(f"cannot convert to unknown version {desired_api_version!r}")
        if source is target:
            return copy.deepcopy(obj)
        typed = source.model_validate(obj)
        hub = self._to_hub(typed, obj)
        if target is self.hub:
            return hub.to_dict()
        spoke = target.from_hub(hub)  # type: ignore[attr-defined]
        out: dict[str, Any] = spoke.to_dict()
        hub_data = hub.to_dict()
        hub_data.pop("metadata", None)
        annotations = accessor(out).annotations
        annotations[CONVERSION_DATA_ANNOTATION] = orjson.dumps(hub_data).decode()
        accessor(out).annotations = annotations
        return out

    def _to_hub(self, typed: CustomResource, wire: dict[str, Any]) -> CustomResource:
        if isinstance(typed, self.hub):
            return typed
        hub_data = typed.to_hub().to_dict()  # type: ignore[attr-defined]
        stored = accessor(wire).annotations.get(CONVERSION_DATA_ANNOTATION)
        if stored:
            try:
                saved = orjson.loads(stored)
                saved_hub = self.hub.model_validate({**saved, "metadata": hub_data["metadata"]})
                lossy = type(typed).from_hub(saved_hub).to_hub().to_dict()  # type: ignore[attr-defined]
            except (orjson.JSONDecodeError, ValidationError, TypeError, ValueError) as exc:
                _log.warning(
                    "ignoring unusable conversion-data annotation",
                    name=accessor(wire).name,
                    error=str(exc),
                )
            else:
                for key in ("spec", "status"):
                    merged = _restore(
                        saved.get(key, _MISSING),
                        lossy.get(key, _MISSING),
                        hub_data.get(key, _MISSING),
                    )
                    if merged is not _MISSING:
                        hub_data[key] = merged
        annotations = accessor(hub_data).annotations
        annotations.pop(CONVERSION_DATA_ANNOTATION, None)
        accessor(hub_data).annotations = annotations
        return self.hub.model_validate(hub_data)

    async def review(self, body: Any) -> web.Response:
        """Answer a ConversionReview (``apiextensions.k8s.io/v1``)."""
        if not isinstance(body, dict):
            raise _bad("request body is not a JSON object")
        if (
            body.get("kind") != "ConversionReview"
            or body.get("apiVersion") != "apiextensions.k8s.io/v1"
        ):
            raise _bad(
                "expected apiVersion apiextensions.k8s.io/v1, kind ConversionReview; got "
                f"apiVersion {body.get('apiVersion')!r}, kind {body.get('kind')!r}"
            )
        request = body.get("request")
        if not isinstance(request, dict):
            raise _bad("ConversionReview has no request")
        uid, desired, objects = (
            request.get("uid"),
            request.get("desiredAPIVersion"),
            request.get("objects"),
        )
        if (
            not isinstance(uid, str)
            or not isinstance(desired, str)
            or not isinstance(objects, list)
        ):
            raise _bad("ConversionReview request needs uid, desiredAPIVersion and objects")
        try:
            converted = [self._convert_item(item, desired) for item in objects]
            return _answer(uid, converted, {"status": "Success"})
        except (ValueError, ValidationError, TypeError, RecursionError) as exc:
            # Includes objects nested deeper than Python, pydantic or orjson handle.
            message = f"conversion failed: {exc}"
        except Exception as exc:
            # A bug in to_hub/from_hub: the API server gets a Failure it reports to the
            # client, never a bare 500, and the failure is counted like a Go panic.
            metrics.conversion_webhook_panics_total.inc()
            _log.exception("conversion raised", uid=uid, desired_api_version=desired)
            message = f"conversion failed: {type(exc).__name__}: {exc}"
        return _answer(uid, [], {"status": "Failure", "message": message})

    def _convert_item(self, item: Any, desired: str) -> dict[str, Any]:
        if not isinstance(item, dict):
            raise ValueError("an object in the request is not a JSON object")
        return self.convert(item, desired)


def _answer(uid: str, converted: list[dict[str, Any]], result: dict[str, Any]) -> web.Response:
    out = ConversionReview(
        response=ConversionResponse(uid=uid, converted_objects=converted, result=result)
    )
    return web.Response(
        body=orjson.dumps(out.model_dump(mode="json", by_alias=True, exclude_none=True)),
        content_type="application/json",
    )


def _bad(message: str) -> Exception:
    return BadReviewError(message)


_MISSING: Any = object()


def _restore(saved: Any, lossy: Any, current: Any) -> Any:
    """Three-way merge for the hub content of a spoke converted back.

    ``saved`` is the hub as it was before it became the spoke, ``lossy`` what a plain
    hub -> spoke -> hub round trip of ``saved`` yields, ``current`` what the spoke (perhaps
    edited) converts to. Where ``current`` equals ``lossy`` the spoke did not touch the
    value, so the saved one wins; where they differ, the edit made through the spoke wins.
    """
    if current is _MISSING:
        # Absent now: the spoke cannot hold it (saved wins) unless a round trip keeps it.
        return saved if lossy is _MISSING else _MISSING
    if saved is _MISSING:
        return current
    if current == lossy:
        return saved
    if isinstance(saved, dict) and isinstance(lossy, dict) and isinstance(current, dict):
        out = {}
        for key in {**saved, **current}:
            value = _restore(
                saved.get(key, _MISSING), lossy.get(key, _MISSING), current.get(key, _MISSING)
            )
            if value is not _MISSING:
                out[key] = value
        return out
    return current
