"""Serving-certificate reloads: rotation under load, half-written pairs, forced reloads."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections import Counter
from typing import TYPE_CHECKING

import aiohttp
import orjson
import pytest
from cryptography import x509

from pyctrl.certs import CertificateAuthority, issue_serving_cert, write_cert_dir
from pyctrl.clock import FakeClock
from pyctrl.webhook import CertWatcher, validate_path

from .conftest import MySrv, Served, mysrv, review

if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable
    from pathlib import Path

VALIDATE = validate_path(MySrv)
BODY = orjson.dumps(review("CREATE", mysrv(name="a")))
ENOUGH = 20
"""Requests each phase of the rotation test must see succeed."""


def _replace(path: Path, data: bytes) -> None:
    """Replace one file atomically, as a Secret volume update or write_cert_dir does."""
    fd, tmp = tempfile.mkstemp(dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


async def _serial(port: int, context: ssl.SSLContext) -> int:
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return x509.load_der_x509_certificate(der).serial_number


async def _fresh_request(served: Served) -> int:
    """POST on a new TLS connection; return the serial of the certificate it was served with."""
    reader, writer = await asyncio.open_connection("127.0.0.1", served.server.port, ssl=served.ssl)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        writer.write(
            b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
            % (VALIDATE.encode(), len(BODY), BODY)
        )
        answer = await reader.read()
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    head, _, payload = answer.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200 ") or b'"allowed":true' not in payload:
        raise AssertionError(f"unexpected answer: {answer[:200]!r}")
    return x509.load_der_x509_certificate(der).serial_number


class _Load:
    """Clients hammering the server: fresh connections and one keep-alive session."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.by_serial: Counter[int] = Counter()
        self.keep_alive_ok = 0
        self.keep_alive_connections = 0
        self.failures: list[str] = []
        self.stop = asyncio.Event()
        self._progress = asyncio.Condition()

    async def _tick(self) -> None:
        async with self._progress:
            self._progress.notify_all()

    async def until(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(20), self._progress:
            await self._progress.wait_for(lambda: condition() or bool(self.failures))

    async def fresh_client(self) -> None:
        while not self.stop.is_set():
            try:
                self.by_serial[await _fresh_request(self.served)] += 1
            except Exception as exc:  # every failure is the test's finding
                self.failures.append(f"fresh connection: {exc!r}")
            await self._tick()

    async def keep_alive_client(self) -> None:
        async def created(*_: object) -> None:
            self.keep_alive_connections += 1

        trace = aiohttp.TraceConfig()
        trace.on_connection_create_end.append(created)
        connector = aiohttp.TCPConnector(limit=1, ssl=self.served.ssl)
        async with aiohttp.ClientSession(connector=connector, trace_configs=[trace]) as session:
            while not self.stop.is_set():
                try:
                    async with session.post(
                        self.served.url + VALIDATE,
                        data=BODY,
                        headers={"Content-Type": "application/json"},
                    ) as resp:
                        await resp.read()
                        if resp.status != 200:
                            self.failures.append(f"keep-alive: status {resp.status}")
                        else:
                            self.keep_alive_ok += 1
                except Exception as exc:  # every failure is the test's finding
                    self.failures.append(f"keep-alive: {exc!r}")
                await self._tick()


async def test_rotated_certificate_is_picked_up_without_dropping_requests(served: Served) -> None:
    """Rotations, one half-written, under concurrent load: no request fails, new cert served."""
    certs = served.server.certs
    old = await _serial(served.server.port, served.ssl)
    second, third = issue_serving_cert(served.ca), issue_serving_cert(served.ca)
    load = _Load(served)
    async with asyncio.TaskGroup() as tg:
        for _ in range(3):
            tg.create_task(load.fresh_client())
        tg.create_task(load.keep_alive_client())
        await load.until(lambda: load.by_serial[old] >= ENOUGH and load.keep_alive_ok >= ENOUGH)

        # Half written: the new certificate is on disk, its key not yet.
        errors = certs.read_errors
        _replace(served.cert_dir / "tls.crt", second.cert_pem)
        async with asyncio.timeout(10):
            await certs.wait_for_error(errors)
        during = load.by_serial[old]
        await load.until(lambda: load.by_serial[old] >= during + ENOUGH)

        reloads = certs.reloads
        _replace(served.cert_dir / "tls.key", second.key_pem)
        async with asyncio.timeout(10):
            await certs.wait_for_change(reloads)
        kept_alive = load.keep_alive_ok
        serial = second.cert.serial_number
        await load.until(
            lambda: load.by_serial[serial] >= ENOUGH and load.keep_alive_ok >= kept_alive + ENOUGH
        )

        # A whole directory rewritten by write_cert_dir.
        reloads = certs.reloads
        write_cert_dir(served.cert_dir, third)
        async with asyncio.timeout(10):
            await certs.wait_for_change(reloads)
        serial = third.cert.serial_number
        await load.until(lambda: load.by_serial[serial] >= ENOUGH)
        load.stop.set()
    assert load.failures == []
    assert set(load.by_serial) <= {old, second.cert.serial_number, third.cert.serial_number}
    assert load.keep_alive_connections == 1
    assert await _serial(served.server.port, served.ssl) == third.cert.serial_number


async def test_mismatched_pair_keeps_the_previous_certificate(
    cert_dir: tuple[Path, CertificateAuthority],
) -> None:
    """A certificate whose key is not there yet is refused; handshakes keep the old pair."""
    import ssl

    directory, ca = cert_dir
    watcher = CertWatcher(directory / "tls.crt", directory / "tls.key")
    watcher.load()
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    listener = await asyncio.start_server(
        lambda _r, w: w.close(), "127.0.0.1", 0, ssl=watcher.context
    )
    async with listener:
        port = listener.sockets[0].getsockname()[1]
        old = await _serial(port, client)
        new = issue_serving_cert(ca)
        _replace(directory / "tls.crt", new.cert_pem)
        assert watcher.maybe_reload() is False
        assert (watcher.reloads, watcher.read_errors) == (1, 1)
        assert await _serial(port, client) == old
        _replace(directory / "tls.key", new.key_pem)
        assert watcher.maybe_reload() is True
        assert await _serial(port, client) == new.cert.serial_number


async def test_unchanged_files_are_reloaded_every_ten_seconds(
    cert_dir: tuple[Path, CertificateAuthority],
) -> None:
    """Checks run every interval; unchanged files are re-read once 10 s have passed."""
    directory, _ = cert_dir
    clock = FakeClock()
    watcher = CertWatcher(directory / "tls.crt", directory / "tls.key", clock=clock)
    watcher.load()
    async with asyncio.TaskGroup() as tg:
        task = tg.create_task(watcher.watch())
        async with asyncio.timeout(10):
            for _ in range(9):
                await clock.wait_for_timers()
                clock.advance(1.0)
            await clock.wait_for_timers()
        assert watcher.reloads == 1
        clock.advance(1.0)
        async with asyncio.timeout(10):
            assert await watcher.wait_for_change(1) == 2
        task.cancel()
    assert watcher.read_errors == 0


def test_forced_reload_counts_from_the_last_load(
    cert_dir: tuple[Path, CertificateAuthority],
) -> None:
    """maybe_reload with unchanged files loads at 10 s after the last load, not before."""
    directory, _ = cert_dir
    clock = FakeClock(100.0)
    watcher = CertWatcher(directory / "tls.crt", directory / "tls.key", clock=clock)
    watcher.load()
    clock.set(109.9)
    assert watcher.maybe_reload() is False
    clock.set(110.0)
    assert watcher.maybe_reload() is True
    clock.set(119.0)
    assert watcher.maybe_reload() is False
    assert watcher.reloads == 2


def test_missing_files_are_a_read_error_not_a_crash(
    cert_dir: tuple[Path, CertificateAuthority],
) -> None:
    """A key removed mid-rotation is counted as a read error; the watcher keeps going."""
    directory, _ = cert_dir
    watcher = CertWatcher(directory / "tls.crt", directory / "tls.key")
    watcher.load()
    (directory / "tls.key").unlink()
    assert watcher.maybe_reload() is False
    assert watcher.read_errors == 1
    with pytest.raises(FileNotFoundError, match=r"tls\.key does not exist"):
        watcher.load()
