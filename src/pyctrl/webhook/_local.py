"""A local webhook development loop: the cluster calls the webhooks on the developer's machine.

kopf's webhook "servers and tunnels" let an operator run on a laptop while a real
cluster (kind, k3d, minikube, a remote one) calls its admission webhooks. pyctrl does it
with two pieces, which ``pyctrl run --webhook-host ADDRESS`` puts together:

- `write_local_certs` makes a fresh CA and a serving certificate for ``ADDRESS`` in a
  directory the webhook server then serves from;
- `LocalWebhooks`, a runnable, registers the Mutating/ValidatingWebhookConfigurations for
  what the webhook server serves, with ``https://ADDRESS:PORT/...`` URLs and the CA
  bundle, once the server listens; when it stops it deletes the configurations it
  created and restores any it replaced, so nothing keeps calling a machine that is gone.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from typing import TYPE_CHECKING, Any

from pyctrl.errors import AlreadyExistsError, APIError, NotFoundError
from pyctrl.log import get_logger

if TYPE_CHECKING:
    import os

    from pyctrl.client import RESTClient
    from pyctrl.webhook._server import Server

__all__ = ["LocalWebhooks", "write_local_certs"]

_log = get_logger("pyctrl.webhook")
_API = "/apis/admissionregistration.k8s.io/v1"
_JSON = "application/json"


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def write_local_certs(host: str, directory: str | os.PathLike[str]) -> bytes:
    """Write a serving certificate for ``host`` (signed by a new CA) into ``directory``.

    Args:
        host: The name or IP address the cluster reaches this machine at.
        directory: Where ``tls.crt``, ``tls.key`` and ``ca.crt`` go (the webhook
            server's ``cert_dir``).

    Returns:
        The CA certificate (PEM), for the configurations' ``caBundle``.
    """
    if not host or (any(c in host for c in "/: ") and not _is_ip(host)):
        raise ValueError(f"invalid webhook host {host!r}: expected a DNS name or an IP address")
    from pyctrl.certs import generate_ca, issue_serving_cert, write_cert_dir

    ca = generate_ca("pyctrl-local-webhook-ca")
    write_cert_dir(directory, issue_serving_cert(ca, [host]))
    return ca.cert_pem


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _url_host(host: str) -> str:
    return f"[{host}]" if _is_ip(host) and ":" in host else host


class LocalWebhooks:
    """Registers a webhook server's configurations pointing at this machine, while it runs.

    A `pyctrl.manager.Runnable` that does not need leader election.

    Args:
        rest: A REST client for the cluster (the Manager's ``rest``).
        server: The webhook server (the Manager's ``webhook_server``).
        host: The address the cluster reaches this machine at.
        ca_bundle: PEM of the CA that signed the server's certificate.
        name_prefix: Prefixes the configurations' names (``<prefix>mutating-webhook-
            configuration``); keep it distinct from the deployed operator's.
        failure_policy: ``Fail`` or ``Ignore`` (``Ignore`` keeps the cluster usable
            when this machine goes away without cleaning up).
        timeout_seconds: Per-call timeout the API server applies.
    """

    need_leader_election = False

    def __init__(
        self,
        rest: RESTClient,
        server: Server,
        *,
        host: str,
        ca_bundle: bytes,
        name_prefix: str = "",
        failure_policy: str = "Fail",
        timeout_seconds: int = 10,
    ) -> None:
        self.name = "local-webhooks"
        self._rest, self._server = rest, server
        self.host, self.ca_bundle, self.name_prefix = host, ca_bundle, name_prefix
        self.failure_policy, self.timeout_seconds = failure_policy, timeout_seconds
        self.registered = asyncio.Event()
        """Set once the configurations are in the cluster."""
        self._previous: dict[str, dict[str, Any] | None] = {}

    def configurations(self) -> list[dict[str, Any]]:
        """The configuration objects to register (the server must have started)."""
        from pyctrl.webhook._config import ClientConfig, webhook_configurations

        client = ClientConfig(
            url=f"https://{_url_host(self.host)}:{self._server.port}", ca_bundle=self.ca_bundle
        )
        return webhook_configurations(
            self._server,
            client,
            name_prefix=self.name_prefix,
            failure_policy=self.failure_policy,
            timeout_seconds=self.timeout_seconds,
        )

    async def start(self) -> None:
        """Register once the server listens; unregister when cancelled."""
        await self._server.wait_started()
        try:
            for config in self.configurations():
                await self._register(config)
            self.registered.set()
            _log.info(
                "registered local webhooks",
                host=self.host,
                port=self._server.port,
                configurations=sorted(self._previous),
            )
            await asyncio.Event().wait()
        finally:
            async with asyncio.timeout(30):
                await self._unregister()

    async def _register(self, config: dict[str, Any]) -> None:
        path = f"{_API}/{config['kind'].lower()}s"
        name = config["metadata"]["name"]
        try:
            await self._rest.request("POST", path, body=_json(config), content_type=_JSON)
            self._previous[f"{path}/{name}"] = None
        except AlreadyExistsError:
            live = (await self._rest.request("GET", f"{path}/{name}")).json()
            self._previous[f"{path}/{name}"] = live
            config["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
            await self._rest.request(
                "PUT", f"{path}/{name}", body=_json(config), content_type=_JSON
            )

    async def _unregister(self) -> None:
        for url, previous in self._previous.items():
            try:
                if previous is None:
                    await self._rest.request("DELETE", url)
                    continue
                live = (await self._rest.request("GET", url)).json()
                metadata = {k: v for k, v in previous["metadata"].items() if k != "managedFields"}
                metadata["resourceVersion"] = live["metadata"]["resourceVersion"]
                restored = {**previous, "metadata": metadata}
                await self._rest.request("PUT", url, body=_json(restored), content_type=_JSON)
            except NotFoundError:
                pass
            except APIError as exc:
                _log.warning("cannot remove a local webhook configuration", url=url, error=str(exc))
        if self._previous:
            _log.info("removed local webhooks", configurations=sorted(self._previous))
        self._previous = {}
