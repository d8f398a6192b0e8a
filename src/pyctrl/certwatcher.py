"""Certificate watcher: a TLS server's certificate reloaded when its files change.

controller-runtime's ``pkg/certwatcher``: the webhook server and the secure metrics
server keep their SSL context in step with a certificate and key on disk (a cert-manager
Secret mounted into the pod), so a rotated certificate is served without a restart.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import tempfile
from pathlib import Path
from typing import Any

from pyctrl.clock import Clock, RealClock
from pyctrl.log import get_logger

__all__ = ["CertWatcher"]

_log = get_logger("pyctrl.certwatcher")


class CertWatcher:
    """Keeps an SSL context's certificate in step with the files on disk.

    The files are checked every `interval` seconds (by modification time, size and
    inode) and re-read at least every 10 seconds even when they look unchanged, as
    controller-runtime's certwatcher does; new TLS handshakes use the new certificate,
    open connections are unaffected. A pair that does not load (a rotation half done,
    with the certificate replaced and the key not yet) is kept out: the previous
    certificate stays in use until a matching pair is on disk.

    Args:
        cert_file: The certificate (PEM, with any intermediates after it).
        key_file: Its private key (PEM).
        interval: Seconds between checks of the files.
        clock: Where time is read and waited for (a `pyctrl.clock.FakeClock` in tests).
        what: What the certificate serves, for messages (``webhook serving certificate``).
    """

    FORCED_RELOAD_SECONDS = 10.0
    """The files are re-read this long after the last load even if they look unchanged."""

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        *,
        interval: float = 1.0,
        clock: Clock | None = None,
        what: str = "webhook serving certificate",
    ) -> None:
        self.cert_file, self.key_file = cert_file, key_file
        self.what = what
        self.interval = interval
        self.clock: Clock = clock or RealClock()
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._stamp: tuple[Any, ...] | None = None
        self._loaded_at = 0.0
        self._changed: asyncio.Condition | None = None
        self.reloads = 0
        """How many times a certificate pair has been loaded."""
        self.read_errors = 0
        """How many reloads failed (files missing or not a matching pair)."""

    def _file_stamp(self) -> tuple[Any, ...]:
        stats = [os.stat(p) for p in (self.cert_file, self.key_file)]
        return tuple((s.st_mtime_ns, s.st_size, s.st_ino) for s in stats)

    def load(self) -> None:
        """Load the certificate pair now; on failure the previous pair stays in use.

        Raises:
            FileNotFoundError: a file is missing (the message names it).
            ssl.SSLError: the files do not hold a matching certificate and key.
        """
        for path in (self.cert_file, self.key_file):
            if not path.is_file():
                raise FileNotFoundError(f"{self.what} file {path} does not exist")
        stamp = self._file_stamp()
        cert_pem, key_pem = self.cert_file.read_bytes(), self.key_file.read_bytes()
        # load_cert_chain reads paths only, and both loads below must see the same bytes
        # even if the files are replaced in between: copy them to a private directory.
        with tempfile.TemporaryDirectory(prefix="pyctrl-tls-") as tmp:
            cert, key = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
            cert.write_bytes(cert_pem)
            key.write_bytes(key_pem)
            # A failed load_cert_chain leaves its context half updated (the new
            # certificate without a key: every handshake fails), so the live context
            # only gets a pair that a scratch context accepted.
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)
            self.context.load_cert_chain(cert, key)
        self._stamp, self._loaded_at = stamp, self.clock.now()
        self.reloads += 1

    def maybe_reload(self) -> bool:
        """Reload if the files changed or 10 s passed since the last load; True if loaded."""
        try:
            stamp = self._file_stamp()
            if (
                stamp == self._stamp
                and self.clock.now() - self._loaded_at < self.FORCED_RELOAD_SECONDS
            ):
                return False
            self.load()
        except OSError as exc:  # ssl.SSLError is an OSError
            self.read_errors += 1
            _log.warning(f"keeping the previous {self.what}", error=str(exc))
            return False
        return True

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def wait_for_change(self, seen: int) -> int:
        """Wait until more than ``seen`` pairs were loaded (`reloads`); return the count."""
        changed = self._condition()
        async with changed:
            await changed.wait_for(lambda: self.reloads > seen)
            return self.reloads

    async def wait_for_error(self, seen: int) -> int:
        """Wait until more than ``seen`` reloads failed (`read_errors`); return the count."""
        changed = self._condition()
        async with changed:
            await changed.wait_for(lambda: self.read_errors > seen)
            return self.read_errors

    async def watch(self) -> None:
        """Poll for changes until cancelled."""
        changed = self._condition()
        while True:
            await self.clock.sleep(self.interval)
            stamp = self._stamp
            if self.maybe_reload() and self._stamp != stamp:
                _log.info(f"{self.what} reloaded", cert=str(self.cert_file))
            # Every check wakes the waiters; each re-checks its own count.
            async with changed:
                changed.notify_all()
