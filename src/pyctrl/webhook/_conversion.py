"""Conversion webhooks: ConversionReview v1 and hub-and-spoke conversion."""

from __future__ import annotations

import copy
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

import orjson
from aiohttp import web
from pydantic import ValidationError

from pyctrl.log import get_logger
from pyctrl.resource import CustomResource, accessor
from pyctrl.webhook._admission import BadReviewError

__all__ = ["CONVERSION_DATA_ANNOTATION", "ConversionHandler", "Spoke"]

CONVERSION_DATA_ANNOTATION = "pyctrl.dev/conversion-data"
"""Annotation where a spoke keeps the hub fields it cannot represent, so none are lost."""

_log = get_logger("pyctrl.webhook")


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
        result: dict[str, Any] = {"status": "Success"}
        converted: list[dict[str, Any]] = []
        try:
            for item in objects:
                if not isinstance(item, dict):
                    raise ValueError("an object in the request is not a JSON object")
                converted.append(self.convert(item, desired))
        except (ValueError, ValidationError, TypeError) as exc:
            converted = []
            result = {"status": "Failure", "message": f"conversion failed: {exc}"}
        response = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": {"uid": uid, "convertedObjects": converted, "result": result},
        }
        return web.Response(body=orjson.dumps(response), content_type="application/json")


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
