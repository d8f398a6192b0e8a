"""Conversion of custom resources through their CRD's conversion webhook.

As apiextensions-apiserver's ``pkg/apiserver/conversion/webhook_converter.go``: only objects
not yet at the desired version are sent; the answer is checked object by object and the
original metadata kept except labels and annotations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from pyctrl._apimachinery.gofmt import go_quote as _quote
from pyctrl._apimachinery.gofmt import go_type
from pyctrl._apiserver.admission.plugin.webhook.client import (
    CONVERSION_TIMEOUT_SECONDS,
    CallFailedError,
    Client,
)
from pyctrl._apiserver.apimachinery.errors import StatusError
from pyctrl._apiserver.apimachinery.fields import (
    label_value_problem,
    qualified_name_problem,
)
from pyctrl._apiserver.storage.keys import CRDS
from pyctrl._ids import secure_uuid4

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyctrl._apiserver.admission.interfaces import PluginHost

__all__ = ["WebhookConverter"]

# --- conversion -------------------------------------------------------------------------------


def _gvk_text(obj: dict[str, Any]) -> str:
    """Go's ``GroupVersionKind.String()`` of an object."""
    api_version = str(obj.get("apiVersion") or "")
    group_version = api_version if "/" in api_version else f"/{api_version}"
    return f"{group_version}, Kind={obj.get('kind') or ''}"


def _is_empty_object(obj: dict[str, Any]) -> bool:
    return set(obj) == {"apiVersion", "kind"}


def _validate_map(name: str, values: dict[str, str]) -> str:
    """``ValidateLabels`` / ``ValidateAnnotations`` keys (and label values), aggregated."""
    problems: list[str] = []
    path = "metadata.labels" if name == "labels" else "metadata.annotation"
    for key, value in values.items():
        problem = qualified_name_problem(key)
        if problem:
            problems.append(f"{path}: Invalid value: {_quote(key)}: {problem}")
        if name == "labels":
            problem = label_value_problem(value)
            if problem:
                problems.append(f"{path}: Invalid value: {_quote(value)}: {problem}")
    if not problems:
        return ""
    return problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"


def _restore_object_meta(original: dict[str, Any], converted: dict[str, Any]) -> dict[str, Any]:
    """``restoreObjectMeta``: the original metadata with the converted labels and annotations."""
    if "metadata" not in converted:
        raise ValueError("missing metadata in converted object")
    response_meta = converted["metadata"]
    if not isinstance(response_meta, dict):
        raise ValueError(f"invalid metadata of type {go_type(response_meta)} in converted object")
    meta = orjson.loads(orjson.dumps(original.get("metadata") or {}))
    for name in ("labels", "annotations"):
        value = response_meta.get(name)
        if value is None:
            meta.pop(name, None)
            continue
        if not isinstance(value, dict):
            raise ValueError(
                f"invalid metadata.{name} of type {go_type(value)} in converted object"
            )
        for key, item in value.items():
            if not isinstance(item, str):
                raise ValueError(
                    f"metadata.{name}[{key}] must be a string, but is {go_type(item)} in "
                    "converted object"
                )
        if value != (meta.get(name) or {}):
            problem = _validate_map(name, value)
            if problem:
                raise ValueError(problem)
        meta[name] = value
    out = dict(converted)
    out["metadata"] = meta
    return out


def _converted_objects(uid: str, review_version: str, answer: Any) -> list[Any]:
    """``getConvertedObjectsFromResponse``; ValueError with kube-apiserver's wording."""
    if not isinstance(answer, dict):
        raise ValueError("no response provided")
    if review_version == "v1":
        api_version, kind = str(answer.get("apiVersion") or ""), str(answer.get("kind") or "")
        if api_version != "apiextensions.k8s.io/v1" or kind != "ConversionReview":
            gv = api_version if "/" in api_version else f"/{api_version}"
            raise ValueError(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, "
                f"got {gv}, Kind={kind}"
            )
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ValueError("no response provided")
    if review_version == "v1" and response.get("uid") != uid:
        raise ValueError(
            f"expected response.uid={_quote(uid)}, got {_quote(str(response.get('uid') or ''))}"
        )
    result = response.get("result")
    result = result if isinstance(result, dict) else {}
    if result.get("status") != "Success":
        if result.get("message"):
            raise ValueError(str(result["message"]))
        raise ValueError(
            f"response.result.status was '{result.get('status') or ''}', not 'Success'"
        )
    objects = response.get("convertedObjects")
    return list(objects) if isinstance(objects, list) else []


def _conversion_failure(message: str) -> StatusError:
    # A plain error inside kube-apiserver: 500 without a reason.
    return StatusError(500, "", message, details=False)


def _conversion_review(
    uid: str, version: str, desired_api_version: str, objects: list[dict[str, Any]]
) -> dict[str, Any]:
    """The ConversionReview request kube-apiserver sends (``createConversionReview``)."""
    return {
        "kind": "ConversionReview",
        "apiVersion": f"apiextensions.k8s.io/{version}",
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired_api_version,
            "objects": objects,
        },
        "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}},
    }


class WebhookConverter:
    """Converts custom resources through their CRD's conversion webhook (a `ConversionHook`).

    Args:
        server: The server whose stored CRDs say which webhook converts what.
        services: ``"<namespace>/<name>"`` of a Service -> base URL that reaches it.
    """

    def __init__(self, server: PluginHost, *, services: Mapping[str, str] | None = None) -> None:
        self.server = server
        self.client = Client(services)

    @property
    def services(self) -> dict[str, str]:
        """The Service -> base URL map (mutable: later additions take effect)."""
        return self.client.services

    def _conversion(self, crd_name: str) -> dict[str, Any]:
        crd = self.server.store.get(CRDS, "", crd_name) or {}
        conversion = (crd.get("spec") or {}).get("conversion")
        return conversion if isinstance(conversion, dict) else {}

    def handles(self, crd_name: str) -> bool:
        """Whether the CRD's ``spec.conversion.strategy`` is ``Webhook``."""
        return self._conversion(crd_name).get("strategy") == "Webhook"

    async def convert(
        self, crd_name: str, objects: list[dict[str, Any]], desired_api_version: str
    ) -> list[dict[str, Any]]:
        """Convert ``objects`` to ``desired_api_version`` with one ConversionReview.

        Objects already at that version (and empty objects) are not sent.

        Raises:
            StatusError: 500 with kube-apiserver's message when the webhook fails.
        """
        pending = [
            (i, o)
            for i, o in enumerate(objects)
            if o.get("apiVersion") != desired_api_version and not _is_empty_object(o)
        ]
        if not pending:
            return list(objects)
        subject = f"conversion webhook for {_gvk_text(pending[0][1])}"
        webhook = self._conversion(crd_name).get("webhook")
        webhook = webhook if isinstance(webhook, dict) else {}
        versions = [v for v in webhook.get("conversionReviewVersions") or [] if isinstance(v, str)]
        version = next((v for v in versions if v in ("v1", "v1beta1")), None)
        if version is None:
            raise _conversion_failure("no supported conversion review versions")
        try:
            target = self.client.target(webhook.get("clientConfig"), CONVERSION_TIMEOUT_SECONDS)
        except ValueError as exc:
            raise _conversion_failure(f"{subject} failed: {exc}") from None
        uid = secure_uuid4()
        review = _conversion_review(uid, version, desired_api_version, [o for _, o in pending])
        try:
            answer = await self.client.post(target, review, CONVERSION_TIMEOUT_SECONDS)
            converted = _converted_objects(uid, version, answer)
        except (CallFailedError, ValueError) as exc:
            raise _conversion_failure(f"{subject} failed: {exc}") from None
        if len(converted) != len(pending):
            raise _conversion_failure(
                f"{subject} returned {len(converted)} objects, expected {len(pending)}"
            )
        out = list(objects)
        single = len(objects) == 1
        for index, ((position, original), item) in enumerate(zip(pending, converted, strict=True)):
            where = (
                "invalid object at index 0"
                if single
                else f"invalid converted object at index {index}"
            )
            self._check_converted(subject, where, original, item, desired_api_version)
            problem = self._identity_problem(original, item)
            if problem:
                what = "invalid object" if single else f"invalid converted object at index {index}"
                raise _conversion_failure(f"{subject} returned {what}: {problem}")
            try:
                out[position] = _restore_object_meta(original, item)
            except ValueError as exc:
                what = (
                    "invalid metadata" if single else f"invalid metadata in object at index {index}"
                )
                raise _conversion_failure(f"{subject} returned {what}: {exc}") from None
        return out

    @staticmethod
    def _check_converted(
        subject: str, where: str, original: dict[str, Any], item: Any, desired_api_version: str
    ) -> None:
        """The converted object is an object of the desired version and the original kind."""
        if not isinstance(item, dict):
            raise _conversion_failure(
                f"{subject} returned {where}: invalid type, expected=Unstructured, "
                f"got={go_type(item)}"
            )
        got_version = str(item.get("apiVersion") or "")
        if got_version != desired_api_version:
            raise _conversion_failure(
                f"{subject} returned {where}: invalid groupVersion (expected "
                f"{desired_api_version}, received {got_version})"
            )
        if item.get("kind") != original.get("kind"):
            raise _conversion_failure(
                f"{subject} returned {where}: invalid kind (expected {original.get('kind')}, "
                f"received {item.get('kind')})"
            )

    @staticmethod
    def _identity_problem(original: dict[str, Any], converted: dict[str, Any]) -> str:
        """``validateConvertedObject``: kind, name, namespace and uid must not change."""
        before = original.get("metadata") or {}
        after = converted.get("metadata")
        after = after if isinstance(after, dict) else {}
        for label, a, b in (
            ("name", before.get("name") or "", after.get("name") or ""),
            ("namespace", before.get("namespace") or "", after.get("namespace") or ""),
            ("UID", before.get("uid") or "", after.get("uid") or ""),
        ):
            if a != b:
                return f"must have the same {label}: {a} != {b}"
        return ""
