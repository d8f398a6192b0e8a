"""Decoding a request body, as kube-apiserver's codecs do before the registry runs.

A built-in object is decoded into its Go struct (`decode_builtin`), a custom resource
through its CRD's structural schema (`decode_custom`): unknown fields are dropped and, by
``fieldValidation``, ignored, returned as ``Warning`` headers (``Warn``, the default) or
refused (``Strict``). A built-in value of the wrong JSON type fails the decoding whatever
``fieldValidation`` says (`decode_error`). `check_type_meta` is the codec's check of the
body's ``apiVersion`` and ``kind`` against the endpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from pyctrl._apiextensions.pruning import prune
from pyctrl._apimachinery.field import field_invalid
from pyctrl._apimachinery.gofmt import GoLiteral, go_print, go_quote
from pyctrl._apiserver.apimachinery.errors import StatusError, bad_request, invalid
from pyctrl._apiserver.registry.meta import OBJECT_META_FIELDS, meta_of, ro_meta
from pyctrl._apiserver.scheme import builtin as _builtin_schema

if TYPE_CHECKING:
    from pyctrl._apiserver.registry.options import RequestContext
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = [
    "check_type_meta",
    "check_url_name",
    "clean_meta",
    "decode_builtin",
    "decode_custom",
    "decode_error",
    "report_unknown",
    "strict_patched",
]


def decode_error(
    kind: str, version: str, error: str, *, patch_type: str, patch: Any, patched: bytes
) -> StatusError:
    """kube-apiserver's answer to an object that does not decode: a type or strict error.

    A request body answers 400 (the handlers' transformDecodeError); the result of a JSON
    or merge patch, which handlers/patch.go decodes into the Go struct, a 422 naming the
    patched object (``patched``, its JSON), and that of a strategic merge patch, converted
    from the patched map, a 422 naming the patch as Go prints a map.
    """
    if patch_type in ("json", "merge", "strategic"):
        value = go_print(patch) if patch_type == "strategic" else patched.decode()
        return invalid("", "", "", [field_invalid("patch", GoLiteral(go_quote(value)), error)])
    return bad_request(f'{kind} in version "{version}" cannot be handled as a {kind}: {error}')


def strict_patched(opts: RequestContext, obj: dict[str, Any]) -> bytes:
    """The JSON of a patched object, which a strict decoding error of the patch names."""
    if opts.field_validation == "Strict" and opts.patch_type in ("json", "merge"):
        return orjson.dumps(obj)
    return b""


def check_type_meta(rt: ResourceType, obj: dict[str, Any], *, kind: str = "") -> None:
    """400 when the body's apiVersion/kind do not fit the endpoint; fill them in when absent.

    ``kind`` names the kind of a sub-resource's body (``Scale``), whose apiVersion is not
    checked or filled in.
    """
    want_kind = kind or rt.kind
    api_version = obj.get("apiVersion")
    if api_version and api_version != rt.api_version and not kind:
        raise bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rt.api_version})"
        )
    got_kind = obj.get("kind")
    if got_kind and got_kind != want_kind and rt.crd_name and not kind:
        # The unstructured decoder keeps the body's kind; the custom resource
        # validator then refuses it (customResourceValidator.ValidateTypeMeta).
        meta = obj.get("metadata")
        name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
        raise invalid(
            rt.group,
            str(got_kind),
            name,
            [field_invalid("kind", got_kind, f"must be {rt.kind}")],
        )
    if got_kind and got_kind != want_kind:
        raise bad_request(
            f"the kind in the data ({got_kind}) does not match the expected kind ({want_kind})"
        )
    if not kind:
        obj["apiVersion"] = rt.api_version
        obj["kind"] = rt.kind
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        if not kind and _builtin_schema.has_go_type(rt.group, rt.version, rt.kind):
            # Decoding refuses it as kube-apiserver does (`decode_builtin`).
            return
        raise bad_request("metadata must be an object")


def check_url_name(obj: dict[str, Any], name: str) -> None:
    """400 when the body names another object than the URL does."""
    body_name = ro_meta(obj).get("name") or ""
    if body_name != name:
        raise bad_request(
            f"the name of the object ({body_name}) does not match the name on the URL ({name})"
        )


def clean_meta(obj: dict[str, Any], unknown: list[str] | None = None) -> None:
    """Drop ``metadata`` fields ObjectMeta lacks, ``selfLink``, null labels and annotations.

    The unknown fields dropped are listed in ``unknown`` (when given).
    """
    meta = meta_of(obj)
    for key in list(meta):
        if key not in OBJECT_META_FIELDS:
            if unknown is not None:
                unknown.append(f"metadata.{key}")
            del meta[key]
    meta.pop("selfLink", None)
    for key in ("labels", "annotations"):
        if key in meta and meta[key] is None:
            del meta[key]


def decode_custom(rt: ResourceType, obj: dict[str, Any], opts: RequestContext) -> None:
    """Decode a custom resource: unknown metadata and fields its schema prunes are dropped."""
    report = opts.field_validation != "Ignore"
    unknown: list[str] = []
    before = strict_patched(opts, obj)
    clean_meta(obj, unknown if report else None)
    if rt.schema is not None:
        prune(obj, rt.schema, unknown=unknown if report else None)
    if unknown:
        report_unknown(rt.kind, rt.version, unknown, opts, before)


def decode_builtin(
    group: str, version: str, kind: str, obj: dict[str, Any], opts: RequestContext
) -> _builtin_schema.Decoded | None:
    """Decode a built-in object (or a Scale) into its Go type, as kube-apiserver does.

    A value of the wrong JSON type fails whatever ``fieldValidation`` says; unknown
    fields are reported as it asks. Returns what was found (the unknown fields are
    still in ``obj``), or None for a kind without a Go type.
    """
    found = _builtin_schema.decode(group, version, kind, obj)
    if found is None:
        return None
    error = found.type_error(unstructured=opts.patch_type == "strategic")
    if error:
        raise decode_error(
            kind,
            version,
            error,
            patch_type=opts.patch_type,
            patch=opts.patch,
            patched=orjson.dumps(obj),
        )
    if found.paths and opts.field_validation != "Ignore":
        report_unknown(kind, version, found.paths, opts, strict_patched(opts, obj))
    return found


def report_unknown(
    kind: str, version: str, unknown: list[str], opts: RequestContext, before: bytes
) -> None:
    """Warn about unknown fields, or raise kube-apiserver's strict decoding error.

    ``before`` is the JSON of the patched object before its unknown fields were
    dropped (`strict_patched`).
    """
    if opts.field_validation != "Strict":
        # An update retried after a conflict decodes again: warn once, as the
        # deduplicating warning recorder does.
        for path in unknown:
            warning = f'unknown field "{path}"'
            if warning not in opts.warnings:
                opts.warnings.append(warning)
        return
    text = "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in unknown)
    raise decode_error(
        kind, version, text, patch_type=opts.patch_type, patch=opts.patch, patched=before
    )
