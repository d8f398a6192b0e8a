"""Health and readiness probes: named checks served on ``/healthz`` and ``/readyz``.

A check is a function, plain or coroutine, that returns on success and raises on
failure; its exception message is the reason. `ping` always succeeds. The Manager
registers checks (its own readiness check reports cache sync and informer health) and
users add theirs::

    manager.add_readyz_check("database", check_database)

The HTTP contract is kube-apiserver's, which kubelet probes and people expect:

- ``GET /healthz`` (or ``/readyz``): 200 ``ok`` when every check passes, else 500 with
  one line per check (``[+]name ok`` / ``[-]name failed: reason``);
- ``?verbose`` lists every check even on success;
- ``?exclude=name`` (repeatable) skips checks;
- ``GET /healthz/<name>``: that single check.

`ProbeServer` serves both endpoints as a runnable (``start()`` blocks until
cancelled) with aiohttp.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from pyctrl.log import get_logger

# aiohttp's server is imported where it is used: a manager that serves no probes
# does not load it.
if TYPE_CHECKING:
    from aiohttp import web

__all__ = ["Checker", "ProbeServer", "ping", "run_checks"]

Checker = Callable[[], Awaitable[None] | None]
"""A health check: returns on success, raises with the reason on failure."""

_log = get_logger("pyctrl.healthz")
_CHECK_TIMEOUT = 10.0


def ping() -> None:
    """A check that always passes: the process is up and serving."""


async def _run_one(check: Checker) -> str | None:
    try:
        async with asyncio.timeout(_CHECK_TIMEOUT):
            result = check()
            if inspect.isawaitable(result):
                await result
    except TimeoutError:
        return f"check timed out after {_CHECK_TIMEOUT:g}s"
    except Exception as exc:
        return str(exc) or type(exc).__name__
    return None


async def run_checks(
    checks: Mapping[str, Checker], *, exclude: frozenset[str] = frozenset()
) -> dict[str, str | None]:
    """Run checks concurrently; map each name to None (passed) or its failure reason."""
    names = [name for name in checks if name not in exclude]
    results = await asyncio.gather(*(_run_one(checks[name]) for name in names))
    return dict(zip(names, results, strict=True))


def _render(kind: str, results: Mapping[str, str | None], verbose: bool) -> web.Response:
    from aiohttp import web

    failed = any(reason is not None for reason in results.values())
    if not failed and not verbose:
        return web.Response(text="ok")
    lines = [
        f"[+]{name} ok" if reason is None else f"[-]{name} failed: {reason}"
        for name, reason in results.items()
    ]
    lines.append(f"{kind} check failed" if failed else f"{kind} check passed")
    return web.Response(text="\n".join(lines) + "\n", status=500 if failed else 200)


class ProbeServer:
    """Serves ``/healthz`` and ``/readyz`` for the given checks.

    Args:
        host: Address to bind, e.g. ``"0.0.0.0"``.
        port: Port to bind; 0 picks a free one (see `port` after start).
        healthz: Liveness checks by name.
        readyz: Readiness checks by name.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        healthz: Mapping[str, Checker],
        readyz: Mapping[str, Checker],
    ) -> None:
        self._host, self._port = host, port
        self._checks = {"healthz": healthz, "readyz": readyz}
        self._bound = asyncio.Event()
        self.port = port

    def _app(self) -> web.Application:
        from aiohttp import web

        app = web.Application()
        for kind in self._checks:
            app.router.add_get(f"/{kind}", self._all(kind))
            app.router.add_get(f"/{kind}/{{name}}", self._single(kind))
        return app

    def _all(self, kind: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            exclude = frozenset(request.query.getall("exclude", []))
            unknown = exclude - set(self._checks[kind])
            if unknown:
                _log.warning("probe excludes unknown checks", kind=kind, checks=sorted(unknown))
            results = await run_checks(self._checks[kind], exclude=exclude)
            return _render(kind, results, "verbose" in request.query)

        return handle

    def _single(self, kind: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        from aiohttp import web

        async def handle(request: web.Request) -> web.Response:
            name = request.match_info["name"]
            check = self._checks[kind].get(name)
            if check is None:
                return web.Response(status=404, text=f"no {kind} check named {name!r}\n")
            reason = await _run_one(check)
            if reason is None:
                return web.Response(text="ok")
            return web.Response(status=500, text=f"{kind} check {name!r} failed: {reason}\n")

        return handle

    @property
    def address(self) -> str | None:
        """``host:port`` this server listens on (the bound port), or None until it listens.

        The host is as given (``0.0.0.0`` or empty for every interface; an IPv6 host in
        brackets). Bind port 0 and read the port here.
        """
        if not self._bound.is_set():
            return None
        host = self._host
        return f"[{host}]:{self.port}" if ":" in host else f"{host}:{self.port}"

    async def wait_started(self) -> None:
        """Wait until the server is listening (`port` is then the bound port)."""
        await self._bound.wait()

    async def start(self) -> None:
        """Serve until cancelled."""
        from aiohttp import web

        runner = web.AppRunner(self._app(), access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self._host, self._port)
            await site.start()
            self.port = int(runner.addresses[0][1])
            _log.info("serving health probes", host=self._host, port=self.port)
            self._bound.set()
            await asyncio.Event().wait()
        finally:
            self._bound.clear()
            await runner.cleanup()
