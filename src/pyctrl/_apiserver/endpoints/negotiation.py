"""Content negotiation: k8s.io/apiserver's ``endpoints/handlers/negotiation``.

`negotiate` picks the representation of an answer from the ``Accept`` header (JSON, YAML,
``Table``, ``PartialObjectMetadata``) or refuses with 406 NotAcceptable, as
``NegotiateOutputMediaType`` does; `input_media_type` names the decoder of a request body
from its ``Content-Type`` or refuses with 415 UnsupportedMediaType, as
``NegotiateInputSerializer`` does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyctrl._apiserver.apimachinery.errors import not_acceptable, unsupported_media_type

if TYPE_CHECKING:
    from aiohttp import web

__all__ = [
    "JSON",
    "PATCH_TYPES",
    "PROTOBUF",
    "YAML",
    "YAML_ALIASES",
    "Negotiated",
    "input_media_type",
    "negotiate",
    "negotiate_request",
]

JSON = "application/json"
"""The JSON media type, the default of requests and answers."""
YAML = "application/yaml"
"""The YAML media type."""
PROTOBUF = "application/vnd.kubernetes.protobuf"
"""Kubernetes' protobuf envelope (decoded for request bodies, never produced)."""
YAML_ALIASES = frozenset({YAML, "application/x-yaml", "text/yaml"})
"""Content types decoded as YAML."""
PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply-cbor",
}
"""PATCH content types to the patch format they name."""


@dataclass(frozen=True)
class Negotiated:
    """What representation the client asked for.

    Attributes:
        kind: ``"json"``, ``"yaml"``, ``"table"`` or ``"meta"`` (PartialObjectMetadata).
        version: The ``meta.k8s.io`` version of a Table or PartialObjectMetadata.
    """

    kind: str
    version: str = "v1"


def _parse_media(header: str) -> list[tuple[str, dict[str, str]]]:
    out: list[tuple[str, float, int, dict[str, str]]] = []
    for index, part in enumerate(header.split(",")):
        pieces = [p.strip() for p in part.split(";")]
        if not pieces[0]:
            continue
        params: dict[str, str] = {}
        q = 1.0
        for piece in pieces[1:]:
            if "=" in piece:
                k, v = piece.split("=", 1)
                k, v = k.strip().lower(), v.strip().strip('"')
                if k == "q":
                    try:
                        q = float(v)
                    except ValueError:
                        q = 0.0
                else:
                    params[k] = v
        out.append((pieces[0].lower(), q, index, params))
    out.sort(key=lambda t: (-t[1], t[2]))
    return [(m, p) for m, q, _, p in out if q > 0]


@functools.lru_cache(maxsize=256)
def negotiate(accept: str, *, allow_transform: bool) -> Negotiated:
    """Pick the response representation from an Accept header, or raise 406."""
    if not accept.strip():
        return Negotiated("json")
    for media, params in _parse_media(accept):
        as_ = params.get("as")
        if media in (JSON, "application/*", "*/*", "application/json;stream=watch"):
            if not as_:
                return Negotiated("json")
            if params.get("g") != "meta.k8s.io" or params.get("v") not in ("v1", "v1beta1"):
                continue
            if not allow_transform:
                continue
            if as_ == "Table":
                return Negotiated("table", params["v"])
            if as_ in ("PartialObjectMetadata", "PartialObjectMetadataList"):
                return Negotiated("meta", params["v"])
        elif media in (YAML, "application/*+yaml") and not as_:
            return Negotiated("yaml")
    raise not_acceptable([JSON, YAML, PROTOBUF])


def negotiate_request(request: web.Request, *, allow_transform: bool) -> Negotiated:
    """`negotiate` on the request's Accept header."""
    return negotiate(request.headers.get("Accept", ""), allow_transform=allow_transform)


def input_media_type(request: web.Request) -> str:
    """The media type that decodes the request's body, or raise 415.

    Without a Content-Type the first supported type (JSON) decodes; aiohttp would report
    application/octet-stream, which kube-apiserver refuses when sent.
    """
    if "Content-Type" not in request.headers:
        return JSON
    content_type = request.content_type.lower()
    if content_type in (JSON, ""):
        return JSON
    if content_type == PROTOBUF:
        return PROTOBUF
    if content_type in YAML_ALIASES:
        return YAML
    raise unsupported_media_type([JSON, YAML, PROTOBUF])
