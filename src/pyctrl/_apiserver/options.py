"""Plugging the webhook admission plugin and the conversion webhook into a server.

As ``k8s.io/apiserver/pkg/server/options/admission.go`` wires admission plugins.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyctrl._apiserver.admission.plugin.webhook.dispatcher import WebhookDispatcher
from pyctrl._apiserver.conversion.webhook import WebhookConverter

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pyctrl._apiserver.endpoints.server import APIServer

__all__ = ["install"]


def install(server: APIServer, *, services: Mapping[str, str] | None = None) -> None:
    """Make ``server`` call admission and conversion webhooks, as kube-apiserver does.

    Appends a `WebhookDispatcher` to ``server.admission`` and sets a `WebhookConverter`
    as ``server.conversion``. Calling it again adds nothing twice; ``services`` entries
    are added to the existing map.

    Args:
        server: The embedded API server.
        services: ``"<namespace>/<name>"`` of a Service named in a ``clientConfig`` ->
            the base URL (``https://127.0.0.1:9443``) that reaches it.

    Raises:
        ValueError: ``server.conversion`` is already another hook.
    """
    if server.conversion is not None and not isinstance(server.conversion, WebhookConverter):
        raise ValueError(
            f"server.conversion is already set to {server.conversion!r}; install() would replace it"
        )
    dispatcher = next((h for h in server.admission if isinstance(h, WebhookDispatcher)), None)
    if dispatcher is None:
        dispatcher = WebhookDispatcher(server, authorize=server.policies.authorize)
        server.admission.append(dispatcher)
    converter = server.conversion
    if converter is None:
        converter = WebhookConverter(server)
        server.conversion = converter
    dispatcher.services.update(services or {})
    converter.services.update(services or {})
