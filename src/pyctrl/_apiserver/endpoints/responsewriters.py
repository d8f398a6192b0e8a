"""Writing answers: k8s.io/apiserver's ``endpoints/handlers/responsewriters``.

`respond` encodes an object as the client negotiated it (JSON, pretty JSON or YAML, with
``Warning`` headers), `status_response` answers a `StatusError` with its ``Status`` body
(``ErrorNegotiated``), and `page_not_found` is the mux's plain-text 404 for paths no API
serves. Every answer carries kube-apiserver's ``Cache-Control`` and an ``Audit-Id``.
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml
from aiohttp import web

from pyctrl._apiserver.apimachinery.errors import StatusError
from pyctrl._apiserver.endpoints.negotiation import JSON, YAML, Negotiated
from pyctrl._apiserver.endpoints.request import truthy
from pyctrl._ids import fast_uuid4

__all__ = [
    "add_warning_first",
    "headers",
    "internal_error",
    "page_not_found",
    "respond",
    "status_response",
    "warning_value",
]


def headers(content_type: str = JSON) -> dict[str, str]:
    """The headers of every API answer."""
    return {
        "Content-Type": content_type,
        "Cache-Control": "no-cache, private",
        "Audit-Id": fast_uuid4(),
    }


def warning_value(text: str) -> str:
    """One ``Warning`` header value (RFC 7234 code 299) carrying ``text``."""
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def page_not_found() -> web.Response:
    """The answer of kube-apiserver's mux for a path no API serves."""
    return web.Response(status=404, text="404 page not found\n", content_type="text/plain")


def status_response(err: StatusError) -> web.Response:
    """Answer a failed request with its ``Status`` body and headers."""
    out = headers()
    out.update(err.headers)
    if err.retry_after is not None and "Retry-After" not in out:
        out["Retry-After"] = str(err.retry_after)
    return web.Response(status=err.code, body=orjson.dumps(err.to_status()), headers=out)


def internal_error(exc: Exception) -> web.Response:
    """500 InternalError for an unexpected exception, as kube-apiserver's recovery answers."""
    return status_response(
        StatusError(500, "InternalError", f"Internal error occurred: {exc}", details=False)
    )


def respond(
    request: web.Request,
    value: Any,
    code: int = 200,
    neg: Negotiated | None = None,
    warnings: list[str] | None = None,
) -> web.Response:
    """Encode ``value`` as negotiated (JSON unless ``neg`` says YAML), with warnings."""
    out = headers()
    if warnings:
        out["Warning"] = ", ".join(warning_value(w) for w in warnings)
    if neg is not None and neg.kind == "yaml":
        out["Content-Type"] = YAML
        body = yaml.safe_dump(value, default_flow_style=False, sort_keys=True).encode()
        return web.Response(status=code, body=body, headers=out)
    if truthy(request.query.get("pretty")):
        body = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    else:
        body = orjson.dumps(value)
    return web.Response(status=code, body=body, headers=out)


def add_warning_first(response: web.StreamResponse, text: str) -> None:
    """Put ``text`` as the first ``Warning`` of a response not yet sent."""
    previous = response.headers.getall("Warning", [])
    response.headers["Warning"] = warning_value(text)
    for value in previous:
        response.headers.add("Warning", value)
