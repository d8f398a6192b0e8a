"""ConfigMaps (kube-apiserver's pkg/registry/core/configmap/strategy.go).

A ConfigMap's ``binaryData`` values are base64: one that does not decode fails the
decoding of the body (400), as the Go ``[]byte`` field does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apimachinery.meta import ro_meta
from pyctrl._apiserver.apimachinery.errors import bad_request
from pyctrl._apiserver.registry import validation as _validation
from pyctrl._apiserver.registry.printing import (
    AGE,
    INTEGER,
    NAME,
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

__all__ = ["ConfigMapStrategy"]


def _configmap(obj: dict[str, Any], now: datetime) -> Cells:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [ro_meta(obj).get("name", ""), count, age(ro_meta(obj).get("creationTimestamp"), now)]


class ConfigMapStrategy(Strategy):
    """The rules of ConfigMaps."""

    printer = Printer(
        (NAME, ("Data", INTEGER, 0), AGE),
        _configmap,
    )

    def default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        """400 for ``binaryData`` that is not base64 (a ConfigMap has no defaults)."""
        problem = _validation.base64_problem(obj, "binaryData")
        if problem:
            raise bad_request(
                f'ConfigMap in version "v1" cannot be handled as a ConfigMap: {problem}'
            )

    def validate_create(self, rt: ResourceType, obj: dict[str, Any]) -> list[Cause]:
        """``ValidateConfigMap``."""
        return _core.validate_configmap(obj)

    def validate_update(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[Cause]:
        """``ValidateConfigMapUpdate``: immutable data stays."""
        return _core.validate_configmap_update(obj, old)
