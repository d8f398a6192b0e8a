"""Secrets (kube-apiserver's pkg/registry/core/secret/strategy.go).

A Secret's ``data`` values are base64: one that does not decode fails the decoding of
the body (400), as the Go ``[]byte`` field does.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.apimachinery.errors import bad_request
from pyctrl._apiserver.registry import validation as _validation
from pyctrl._apiserver.registry.printing import (
    AGE,
    INTEGER,
    NAME,
    STRING,
    Cells,
    Printer,
    age,
)
from pyctrl._apiserver.registry.rest import Strategy
from pyctrl._apiserver.registry.validation import core as _core

if TYPE_CHECKING:
    from datetime import datetime

    from pyctrl._apimachinery.field import Cause
    from pyctrl._apiserver.scheme.resources import ResourceType

__all__ = ["SecretStrategy"]


def _secret(obj: dict[str, Any], now: datetime) -> Cells:
    return [
        ro_meta(obj).get("name", ""),
        obj.get("type", ""),
        len(obj.get("data") or {}),
        age(ro_meta(obj).get("creationTimestamp"), now),
    ]


def set_defaults(obj: dict[str, Any]) -> None:
    """Secret type ``Opaque`` by default; ``stringData`` merged into ``data`` (base64)."""
    obj.setdefault("type", "Opaque")
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data")
        if not isinstance(data, dict):
            data = {}
        for k, v in string_data.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data


class SecretStrategy(Strategy):
    """The rules of Secrets."""

    printer = Printer(
        (NAME, ("Type", STRING, 0), ("Data", INTEGER, 0), AGE),
        _secret,
    )

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """The defaults (``type: Opaque``), then 400 for ``data`` that is not base64."""
        set_defaults(obj)
        problem = _validation.base64_problem(obj)
        if problem:
            raise bad_request(f'Secret in version "v1" cannot be handled as a Secret: {problem}')

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``ValidateSecret``."""
        return _core.validate_secret(obj)

    def validate_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause]:
        """``ValidateSecretUpdate``: type and immutable data stay."""
        return _core.validate_secret_update(obj, old)
