"""Pointing the API server at a local webhook server, and undoing it.

The counterpart of controller-runtime's ``pkg/envtest/webhook.go``
(``WebhookInstallOptions``): the Mutating- and ValidatingWebhookConfigurations for what
a `pyctrl.webhook.Server` serves are created (or replaced), and the installed CRDs whose
conversion it serves get a conversion webhook. A `WebhookInstaller` remembers what it
changed, so that `WebhookInstaller.uninstall` can put an existing cluster back as it was.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog

from pyctrl.envtest._crd import CRD_API, wait_for_crds
from pyctrl.errors import APIError, NotFoundError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pyctrl.envtest._rest import Rest
    from pyctrl.webhook import ClientConfig
    from pyctrl.webhook import Server as WebhookServer

__all__ = ["WebhookInstaller"]

logger = structlog.get_logger("pyctrl.envtest")


class WebhookInstaller:
    """Installs webhook configurations and CRD conversions; remembers what they replaced."""

    def __init__(self) -> None:
        # Each configuration's previous state (None: it was created), each CRD's previous
        # spec.conversion (None: it had none).
        self._webhook_previous: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._conversion_previous: dict[str, dict[str, Any] | None] = {}

    async def install(
        self,
        rest: Rest,
        webhook_server: WebhookServer,
        *,
        ca_bundle: bytes,
        host: str,
        failure_policy: str,
        timeout_seconds: int,
        crds: Sequence[dict[str, Any]],
        crd_timeout: float,
    ) -> list[dict[str, Any]]:
        """Install the webhooks ``webhook_server`` serves, reached at ``host``.

        Returns:
            The configuration objects as created.
        """
        from pyctrl.webhook import ClientConfig, converted_kinds, webhook_configurations

        await webhook_server.wait_started()
        client = ClientConfig(url=f"https://{host}:{webhook_server.port}", ca_bundle=ca_bundle)
        configurations = webhook_configurations(
            webhook_server, client, failure_policy=failure_policy, timeout_seconds=timeout_seconds
        )
        created = [await self._put_configuration(rest, config) for config in configurations]
        kinds = converted_kinds(webhook_server)
        converting = [
            crd["metadata"]["name"]
            for crd in crds
            if (crd["spec"]["group"], crd["spec"]["names"]["kind"]) in kinds
        ]
        await self._set_conversion(rest, client, converting, crd_timeout)
        return created

    async def _put_configuration(self, rest: Rest, config: dict[str, Any]) -> Any:
        """Create the configuration, or replace the one of the same name."""
        base = f"/apis/admissionregistration.k8s.io/v1/{config['kind'].lower()}s"
        name = config["metadata"]["name"]
        try:
            created = await rest.request("POST", base, config)
            self._webhook_previous.setdefault((base, name), None)
            return created
        except APIError as exc:
            if exc.reason != "AlreadyExists":
                raise
        live = await rest.request("GET", f"{base}/{name}")
        self._webhook_previous.setdefault((base, name), live)
        replacement = {
            **config,
            "metadata": {
                **config["metadata"],
                "resourceVersion": live["metadata"]["resourceVersion"],
            },
        }
        return await rest.request("PUT", f"{base}/{name}", replacement)

    async def _set_conversion(
        self, rest: Rest, client: ClientConfig, names: Sequence[str], crd_timeout: float
    ) -> None:
        """Point the named CRDs' ``spec.conversion`` at the webhook; wait until served."""
        from pyctrl.webhook import conversion_stanza

        for name in names:
            live = await rest.request("GET", f"{CRD_API}/{name}")
            self._conversion_previous.setdefault(name, live["spec"].get("conversion"))
            live["spec"]["conversion"] = conversion_stanza(client)
            await rest.request("PUT", f"{CRD_API}/{name}", live)
        if names:
            await wait_for_crds(rest, names, max_time=crd_timeout)

    async def uninstall(self, rest: Rest, deleted_crds: Sequence[str]) -> None:
        """Restore the CRDs' conversion and the configurations as they were before.

        Best effort, like the CRD removal: what cannot be undone is logged. CRDs in
        ``deleted_crds`` are skipped (they go away with their conversion).
        """
        for name, conversion in self._conversion_previous.items():
            if name in deleted_crds:
                continue  # deleted with the CRD
            try:
                live = await rest.request("GET", f"{CRD_API}/{name}")
                live["spec"]["conversion"] = conversion or {"strategy": "None"}
                await rest.request("PUT", f"{CRD_API}/{name}", live)
            except APIError as exc:
                logger.warning("cannot restore the CRD's conversion", crd=name, error=str(exc))
        for (base, name), previous in self._webhook_previous.items():
            try:
                if previous is None:
                    await rest.request("DELETE", f"{base}/{name}")
                    continue
                live = await rest.request("GET", f"{base}/{name}")
                metadata = {k: v for k, v in previous["metadata"].items() if k != "managedFields"}
                metadata["resourceVersion"] = live["metadata"]["resourceVersion"]
                restored = {**previous, "metadata": metadata}
                await rest.request("PUT", f"{base}/{name}", restored)
            except NotFoundError:
                pass
            except APIError as exc:
                logger.warning("cannot remove the webhook configuration", name=name, error=str(exc))
        self._conversion_previous = {}
        self._webhook_previous = {}
