"""The v2 OpenAPI document in gnostic's protobuf encoding (``openapi_v2.Document``).

client-go's discovery asks for ``/openapi/v2`` as
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``; kube-apiserver answers
with kube-openapi's gnostic encoding. Field numbers are gnostic's ``OpenAPIv2.proto``.
"""

from __future__ import annotations

import struct
from typing import Any

import orjson

__all__ = ["openapi_v2_protobuf"]

_U64 = (1 << 64) - 1


class _Pb:
    """Minimal protobuf (proto3 wire format) message writer."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    @staticmethod
    def _varint(value: int) -> bytes:
        value &= _U64
        out = bytearray()
        while True:
            low = value & 0x7F
            value >>= 7
            if value:
                out.append(low | 0x80)
            else:
                out.append(low)
                return bytes(out)

    def _key(self, field: int, wire: int) -> None:
        self._parts.append(self._varint(field << 3 | wire))

    def string(self, field: int, value: str | None) -> None:
        if value:
            self.message(field, value.encode())

    def strings(self, field: int, values: Any) -> None:
        for value in values or ():
            self.message(field, str(value).encode())

    def boolean(self, field: int, value: Any, *, force: bool = False) -> None:
        if value or force:
            self._key(field, 0)
            self._parts.append(b"\x01" if value else b"\x00")

    def int64(self, field: int, value: Any) -> None:
        if isinstance(value, int | float) and value:
            self._key(field, 0)
            self._parts.append(self._varint(int(value)))

    def double(self, field: int, value: Any) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool) and value:
            self._key(field, 1)
            self._parts.append(struct.pack("<d", float(value)))

    def message(self, field: int, data: bytes) -> None:
        self._key(field, 2)
        self._parts.append(self._varint(len(data)))
        self._parts.append(data)

    def build(self) -> bytes:
        return b"".join(self._parts)


def _pb_any(value: Any) -> bytes:
    # gnostic's Any carries the value as YAML text; JSON is YAML.
    pb = _Pb()
    pb.string(2, orjson.dumps(value).decode())
    return pb.build()


def _pb_named_any(name: str, value: Any) -> bytes:
    pb = _Pb()
    pb.string(1, name)
    pb.message(2, _pb_any(value))
    return pb.build()


def _pb_extensions(pb: _Pb, field: int, source: dict[str, Any]) -> None:
    for key, value in source.items():
        if key.startswith("x-"):
            pb.message(field, _pb_named_any(key, value))


def _pb_schema(schema: dict[str, Any]) -> bytes:  # noqa: PLR0915 - gnostic's Schema message, one statement per field
    pb = _Pb()
    pb.string(1, schema.get("$ref"))
    pb.string(2, schema.get("format"))
    pb.string(3, schema.get("title"))
    pb.string(4, schema.get("description"))
    if "default" in schema:
        pb.message(5, _pb_any(schema["default"]))
    pb.double(6, schema.get("multipleOf"))
    pb.double(7, schema.get("maximum"))
    pb.boolean(8, schema.get("exclusiveMaximum"))
    pb.double(9, schema.get("minimum"))
    pb.boolean(10, schema.get("exclusiveMinimum"))
    pb.int64(11, schema.get("maxLength"))
    pb.int64(12, schema.get("minLength"))
    pb.string(13, schema.get("pattern"))
    pb.int64(14, schema.get("maxItems"))
    pb.int64(15, schema.get("minItems"))
    pb.boolean(16, schema.get("uniqueItems"))
    pb.int64(17, schema.get("maxProperties"))
    pb.int64(18, schema.get("minProperties"))
    pb.strings(19, schema.get("required"))
    for value in schema.get("enum") or ():
        pb.message(20, _pb_any(value))
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        item = _Pb()
        item.message(1, _pb_schema(additional))
        pb.message(21, item.build())
    elif isinstance(additional, bool):
        item = _Pb()
        item.boolean(2, additional, force=True)
        pb.message(21, item.build())
    kind = schema.get("type")
    if kind:
        type_item = _Pb()
        type_item.strings(1, kind if isinstance(kind, list) else [kind])
        pb.message(22, type_item.build())
    items = schema.get("items")
    if items is not None:
        items_item = _Pb()
        for sub in items if isinstance(items, list) else [items]:
            items_item.message(1, _pb_schema(sub))
        pb.message(23, items_item.build())
    for sub in schema.get("allOf") or ():
        pb.message(24, _pb_schema(sub))
    if "properties" in schema:
        properties = _Pb()
        for name, sub in schema["properties"].items():
            named = _Pb()
            named.string(1, name)
            named.message(2, _pb_schema(sub))
            properties.message(1, named.build())
        pb.message(25, properties.build())
    pb.boolean(27, schema.get("readOnly"))
    if "example" in schema:
        pb.message(30, _pb_any(schema["example"]))
    _pb_extensions(pb, 31, schema)
    return pb.build()


def _pb_parameter(param: dict[str, Any]) -> bytes:
    parameter = _Pb()
    where = param.get("in")
    if where == "body":
        body = _Pb()
        body.string(1, param.get("description"))
        body.string(2, param.get("name"))
        body.string(3, where)
        body.boolean(4, param.get("required"))
        body.message(5, _pb_schema(param.get("schema") or {}))
        parameter.message(1, body.build())
    else:
        sub = _Pb()
        sub.boolean(1, param.get("required"))
        sub.string(2, where)
        sub.string(3, param.get("description"))
        sub.string(4, param.get("name"))
        # Query and path sub-schemas number their later fields differently.
        if where == "query":
            sub.string(6, param.get("type"))
            sub.boolean(20, param.get("uniqueItems"))
            variant = 3
        else:
            sub.string(5, param.get("type"))
            sub.boolean(19, param.get("uniqueItems"))
            variant = 4
        non_body = _Pb()
        non_body.message(variant, sub.build())
        parameter.message(2, non_body.build())
    item = _Pb()
    item.message(1, parameter.build())
    return item.build()


def _pb_operation(op: dict[str, Any]) -> bytes:
    pb = _Pb()
    pb.strings(1, op.get("tags"))
    pb.string(3, op.get("description"))
    pb.string(5, op.get("operationId"))
    pb.strings(6, op.get("produces"))
    pb.strings(7, op.get("consumes"))
    for param in op.get("parameters") or ():
        pb.message(8, _pb_parameter(param))
    responses = _Pb()
    for code, response in (op.get("responses") or {}).items():
        body = _Pb()
        body.string(1, response.get("description"))
        if "schema" in response:
            schema_item = _Pb()
            schema_item.message(1, _pb_schema(response["schema"]))
            body.message(2, schema_item.build())
        value = _Pb()
        value.message(1, body.build())
        named = _Pb()
        named.string(1, code)
        named.message(2, value.build())
        responses.message(1, named.build())
    pb.message(9, responses.build())
    pb.strings(10, op.get("schemes"))
    _pb_extensions(pb, 13, op)
    return pb.build()


_PB_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _pb_path_item(item: dict[str, Any]) -> bytes:
    pb = _Pb()
    for method, field in _PB_METHODS.items():
        if method in item:
            pb.message(field, _pb_operation(item[method]))
    for param in item.get("parameters") or ():
        pb.message(9, _pb_parameter(param))
    _pb_extensions(pb, 10, item)
    return pb.build()


def openapi_v2_protobuf(document: dict[str, Any]) -> bytes:
    """Encode a Swagger 2.0 document as gnostic's ``openapi_v2.Document`` protobuf.

    This is the encoding client-go's ``OpenAPISchema()`` requests (and kubectl uses
    for client-side validation and ``explain --output=plaintext-openapiv2``).

    Args:
        document: The document, as `openapi_v2` builds it.

    Returns:
        The protobuf bytes.
    """
    pb = _Pb()
    pb.string(1, document.get("swagger"))
    info = _Pb()
    info.string(1, document["info"].get("title"))
    info.string(2, document["info"].get("version"))
    pb.message(2, info.build())
    paths = _Pb()
    for path, item in document.get("paths", {}).items():
        named = _Pb()
        named.string(1, path)
        named.message(2, _pb_path_item(item))
        paths.message(2, named.build())
    pb.message(8, paths.build())
    definitions = _Pb()
    for name, schema in document.get("definitions", {}).items():
        named = _Pb()
        named.string(1, name)
        named.message(2, _pb_schema(schema))
        definitions.message(1, named.build())
    pb.message(9, definitions.build())
    for requirement in document.get("security") or ():
        entries = _Pb()
        for name, scopes in requirement.items():
            scope_list = _Pb()
            scope_list.strings(1, scopes)
            named = _Pb()
            named.string(1, name)
            named.message(2, scope_list.build())
            entries.message(1, named.build())
        pb.message(12, entries.build())
    security = _Pb()
    for name, scheme in (document.get("securityDefinitions") or {}).items():
        api_key = _Pb()
        api_key.string(1, scheme.get("type"))
        api_key.string(2, scheme.get("name"))
        api_key.string(3, scheme.get("in"))
        api_key.string(4, scheme.get("description"))
        item = _Pb()
        item.message(2, api_key.build())
        named = _Pb()
        named.string(1, name)
        named.message(2, item.build())
        security.message(1, named.build())
    pb.message(13, security.build())
    return pb.build()
