"""A binding's parameter objects (``generic.CollectParams``), read live from the store.

A policy with ``paramKind`` is evaluated once per parameter object its binding's
``paramRef`` selects: the object ``name``d (in ``namespace``, else the request's
namespace for a namespaced kind), or every object the ``selector`` matches. With none
found, ``parameterNotFoundAction: Deny`` is a configuration error; ``Allow`` skips the
binding. The objects are read from the store on every request, so a changed parameter
takes effect at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyctrl._apiserver.apimachinery.fields import SelectorError, selector_from_object

if TYPE_CHECKING:
    from pyctrl._apiserver.admission.interfaces import PluginHost

__all__ = ["ConfigurationError", "collect_params"]


class ConfigurationError(Exception):
    """A policy or binding that cannot be evaluated (``failed to configure binding: ...``)."""


def _param_kind_text(param_kind: tuple[str, str]) -> str:
    return f"&ParamKind{{APIVersion:{param_kind[0]},Kind:{param_kind[1]},}}"


def collect_params(
    host: PluginHost,
    param_kind: tuple[str, str] | None,
    param_ref: dict[str, Any] | None,
    namespace: str,
) -> list[dict[str, Any] | None]:
    """The parameter objects to evaluate a binding with (``[None]``: no parameters).

    Raises:
        ConfigurationError: The kind is unknown, a namespace is missing, or no object was
            found under ``parameterNotFoundAction: Deny``.
    """
    if param_kind is None or param_ref is None:
        return [None]
    api_version, kind = param_kind
    group, _, version = api_version.rpartition("/")
    rt = host.registry.by_kind(group, version, kind)
    if rt is None:
        raise ConfigurationError(f"paramKind kind `{_param_kind_text(param_kind)}` not known")
    ref_namespace = str(param_ref.get("namespace") or "")
    if rt.namespaced:
        ref_namespace = ref_namespace or namespace
        if not ref_namespace:
            raise ConfigurationError(
                "cannot use namespaced paramRef in policy binding that matches "
                "cluster-scoped resources"
            )
    elif ref_namespace:
        raise ConfigurationError(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
        )
    name = str(param_ref.get("name") or "")
    raw_selector = param_ref.get("selector")
    if name:
        found = host.store.get(rt.storage_key, ref_namespace, name)
        params = [found] if found is not None else []
    elif isinstance(raw_selector, dict):
        try:
            selector = selector_from_object(raw_selector)
        except SelectorError as exc:
            raise ConfigurationError(str(exc)) from None
        params = [
            o
            for o in host.store.items(rt.storage_key, ref_namespace if rt.namespaced else None)
            if selector is not None and selector.matches((o.get("metadata") or {}).get("labels"))
        ]
    else:
        raise ConfigurationError("one of name or selector must be provided")
    if not params and param_ref.get("parameterNotFoundAction") == "Deny":
        raise ConfigurationError(
            "no params found for policy binding with `Deny` parameterNotFoundAction"
        )
    return [host.api.to_external(rt, p) for p in params]
