"""What the certificate rotation tests share: the served issuer, a rotator's pass, traffic.

Used by tests/webhook/test_self_managed_certs_e2e.py (admission) and
tests/envtest/test_webhooks_conversion_certs.py (conversion).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING

from cryptography import x509

from pyctrl.testing import eventually

if TYPE_CHECKING:
    from pyctrl.clock import FakeClock
    from pyctrl.webhook import CertRotator


async def served_issuer(port: int) -> str:
    """The issuer of the certificate the webhook server on ``port`` presents now."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    async with asyncio.timeout(10):
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    assert der is not None
    return x509.load_der_x509_certificate(der).issuer.rfc4514_string()


async def passes(rotator: CertRotator, clock: FakeClock, seconds: float) -> None:
    """Advance the clock and wait for the rotator's pass that follows."""
    rotator.checked.clear()
    clock.advance(seconds)
    async with asyncio.timeout(30):
        await rotator.checked.wait()


class Traffic:
    """Calls made one after another by `run` until `stop` is set, the failures kept."""

    def __init__(self) -> None:
        self.made = 0
        self.failures: list[str] = []
        self.stop = asyncio.Event()

    async def made_more(self) -> None:
        """Wait until a few more calls were made (successful or not)."""
        mark = self.made

        async def more() -> bool:
            return self.made > mark + 3

        await eventually(more)
