"""Leader election on a ``coordination.k8s.io/v1`` Lease.

When several replicas of an operator run, exactly one should reconcile. The replicas
compete for a Lease object, client-go's way (``tools/leaderelection``):

- a candidate takes the Lease when it does not exist, when it holds it already, or
  when its holder has not renewed it for ``lease_duration`` (15 s) as observed *by this
  candidate's own clock* since the record last changed, so clock skew between machines
  does not matter;
- every write is a compare-and-swap on ``resourceVersion``: of two candidates writing at
  once, one gets a Conflict and stays a follower;
- the leader renews every ``retry_period`` (2 s); if it cannot renew for
  ``renew_deadline`` (10 s) it gives up leadership with `LeaderElectionLostError`.
  Because the renew deadline is shorter than the lease duration, the old leader stops
  before anyone else may take over, so two managers never lead at once;
- with ``release_on_cancel`` the leader empties the Lease's holder when it stops, so a
  successor takes over at once instead of waiting out the lease;
- the elector feeds a `LeaseFence` (`LeaderElector.fence`): by the local monotonic clock,
  it ends the leader's term ``renew_deadline`` after the start of the last successful
  renew, even if the renewing task has not run since (a paused process). The Manager
  hands it to its client (writes refused with `pyctrl.errors.LeaseLostError`) and to its
  controllers (no new reconcile; in-flight ones cancelled). Any other Lease-held work
  (a shard's slot, a per-object daemon) can hold an elector's fence the same way.

The Manager runs an `LeaderElector`: `LeaderElector.acquire` blocks until leading,
then `LeaderElector.hold` renews until cancelled (or raises when leadership is lost).
The Lease lives in the namespace given, or by default the pod's own
(`in_cluster_namespace`); outside a cluster there is no default.
``leader_election_master_status`` reports 1 while leading.
"""

from __future__ import annotations

import asyncio
import random
import socket
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pyctrl import config, metrics
from pyctrl._fence import LeaseFence
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import (
    AlreadyExistsError,
    APIError,
    ConfigError,
    ConflictError,
    NotFoundError,
    PyctrlError,
)
from pyctrl.log import get_logger
from pyctrl.meta import format_time

if TYPE_CHECKING:
    import os

__all__ = [
    "LeaderElectionConfig",
    "LeaderElectionLostError",
    "LeaderElector",
    "LeaseFence",
    "LeaseStore",
    "RESTLeaseStore",
    "default_identity",
    "in_cluster_namespace",
]

_log = get_logger("pyctrl.leaderelection")
_JITTER = 1.2


class LeaderElectionLostError(PyctrlError):
    """This process was the leader and could not renew its Lease in time."""


def default_identity() -> str:
    """The host name plus a unique suffix, as controller-runtime builds identities."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def in_cluster_namespace(service_account_dir: str | os.PathLike[str] | None = None) -> str:
    """The namespace of the pod this process runs in: the default Lease namespace.

    controller-runtime reads it from the service account's ``namespace`` file, and
    refuses to guess outside a cluster.

    Args:
        service_account_dir: Where the service account is mounted (default
            `pyctrl.config.SERVICE_ACCOUNT_DIR`).

    Raises:
        ConfigError: Not running in a cluster (no namespace file), or the file is
            unreadable or empty.
    """
    path = Path(service_account_dir or config.SERVICE_ACCOUNT_DIR) / "namespace"
    ask = (
        "give the Lease's namespace: Options(leader_election_namespace=...), "
        "or --leader-election-namespace"
    )
    try:
        namespace = path.read_text().strip()
    except FileNotFoundError:
        raise ConfigError(
            f"leader election: not running in a cluster ({path} does not exist), so {ask}"
        ) from None
    except OSError as exc:
        raise ConfigError(f"leader election: cannot read {path}: {exc}; {ask}") from None
    if not namespace:
        raise ConfigError(f"leader election: {path} is empty; {ask}")
    return namespace


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Where and how to elect (controller-runtime's defaults).

    Attributes:
        name: The Lease's name (controller-runtime's ``LeaderElectionID``).
        namespace: The Lease's namespace.
        identity: This candidate's identity; unique per process.
        lease_duration: Seconds a lease stays valid without renewal.
        renew_deadline: Seconds the leader keeps trying to renew before giving up.
        retry_period: Seconds between attempts to acquire or renew.
        release_on_cancel: Give the Lease up when stopped, for a fast hand-over.
    """

    name: str
    namespace: str
    identity: str = ""
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = False

    def __post_init__(self) -> None:
        if not self.identity:
            object.__setattr__(self, "identity", default_identity())
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if not self.renew_deadline > _JITTER * self.retry_period:
            raise ValueError("renew_deadline must be greater than retry_period * 1.2")
        if self.retry_period <= 0:
            raise ValueError("retry_period must be positive")


class LeaseStore(Protocol):
    """Reads and writes one Lease (an extension point; `RESTLeaseStore` is the real one)."""

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The Lease, or None if it does not exist."""
        ...

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        """Create the Lease; raises AlreadyExistsError if it exists."""
        ...

    async def update(self, lease: dict[str, Any]) -> dict[str, Any]:
        """Replace the Lease; raises ConflictError on a stale resourceVersion."""
        ...


class _Requester(Protocol):
    async def request(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        content_type: str | None = None,
        timeout: float = 60.0,  # noqa: ASYNC109 - RESTClient bounds each request itself
    ) -> Any: ...


class RESTLeaseStore:
    """A LeaseStore over `pyctrl.client.RESTClient`, with a per-request timeout."""

    def __init__(self, rest: _Requester, *, timeout: float = 5.0) -> None:
        self._rest = rest
        self._timeout = timeout

    @staticmethod
    def _path(namespace: str, name: str = "") -> str:
        base = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        return f"{base}/{name}" if name else base

    async def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """GET the Lease; None on 404."""
        try:
            response = await self._rest.request(
                "GET", self._path(namespace, name), timeout=self._timeout
            )
        except NotFoundError:
            return None
        lease: dict[str, Any] = response.json()
        return lease

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        """POST the Lease."""
        import orjson

        meta = lease["metadata"]
        response = await self._rest.request(
            "POST",
            self._path(meta["namespace"]),
            body=orjson.dumps(lease),
            content_type="application/json",
            timeout=self._timeout,
        )
        created: dict[str, Any] = response.json()
        return created

    async def update(self, lease: dict[str, Any]) -> dict[str, Any]:
        """PUT the Lease (optimistic concurrency on its resourceVersion)."""
        import orjson

        meta = lease["metadata"]
        response = await self._rest.request(
            "PUT",
            self._path(meta["namespace"], meta["name"]),
            body=orjson.dumps(lease),
            content_type="application/json",
            timeout=self._timeout,
        )
        updated: dict[str, Any] = response.json()
        return updated


def _now_micro() -> str:
    return format_time(datetime.now(UTC), micro=True)


class LeaderElector:
    """Competes for a Lease and holds it while leading.

    Args:
        store: Where the Lease lives.
        config: Name, namespace, identity and timings.
        clock: Time source (tests use a FakeClock).
        rng: Jitter source.
        fence: The fence to feed (default: a new one on ``clock``); see `fence`.
    """

    def __init__(
        self,
        store: LeaseStore,
        config: LeaderElectionConfig,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        fence: LeaseFence | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock or RealClock()
        self.fence = fence or LeaseFence(
            config.renew_deadline, clock=self.clock, name=f"{config.namespace}/{config.name}"
        )
        """Ends this candidate's term by the local clock (see `LeaseFence`)."""
        self._rng = rng or random.Random()
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._leading = False
        self._status = metrics.leader_election_master_status.labels(config.name)
        self._status.set(0)

    @property
    def identity(self) -> str:
        """This candidate's identity."""
        return self.config.identity

    @property
    def is_leader(self) -> bool:
        """True while this candidate holds the Lease."""
        return self._leading

    async def acquire(self) -> None:
        """Block until this candidate holds the Lease, retrying every retry period."""
        _log.info("attempting to acquire leader lease", lease=self._lease_ref())
        while True:
            if await self._try_acquire_or_renew():
                self.fence.acquired(self._last_renew)
                self._leading = True
                self._status.set(1)
                _log.info("acquired leader lease", lease=self._lease_ref(), identity=self.identity)
                return
            delay = self.config.retry_period * (1 + self._rng.random() * (_JITTER - 1))
            await self.clock.sleep(delay)

    async def hold(self) -> None:
        """Renew until cancelled; raise `LeaderElectionLostError` if renewal fails too long.

        On cancellation the Lease is released when ``release_on_cancel`` is set.
        """
        if not self._leading:
            raise RuntimeError("hold() called before acquire()")
        try:
            while True:
                await self.clock.sleep(self.config.retry_period)
                deadline = self._last_renew + self.config.renew_deadline
                renewed = False
                while not renewed and self.clock.now() < deadline:
                    try:
                        async with self.clock.timeout_at(deadline):
                            renewed = await self._try_acquire_or_renew()
                    except TimeoutError:
                        break
                    if not renewed:
                        wait = min(self.config.retry_period, max(0.0, deadline - self.clock.now()))
                        await self.clock.sleep(wait)
                # A renewal that lands after the fence closed does not revive the term.
                if not renewed or not self.fence.renewed(self._last_renew):
                    self._lost()
                    raise LeaderElectionLostError(
                        f"leader election lost: could not renew lease {self._lease_ref()} "
                        f"within {self.config.renew_deadline:g}s"
                    )
        except asyncio.CancelledError:
            self.fence.release()  # work stops before a successor can take the Lease
            if self._leading and self.config.release_on_cancel:
                await self._release()
            self._lost()
            raise

    def _lost(self) -> None:
        self.fence.release()
        if self._leading:
            _log.warning("stopped leading", lease=self._lease_ref(), identity=self.identity)
        self._leading = False
        self._status.set(0)

    def _lease_ref(self) -> str:
        return f"{self.config.namespace}/{self.config.name}"

    async def _try_acquire_or_renew(self) -> bool:
        # The fence counts from before the request: the server writes the record later.
        started = self.clock.now()
        now_wall = _now_micro()
        spec = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": round(self.config.lease_duration),
            "acquireTime": now_wall,
            "renewTime": now_wall,
            "leaseTransitions": 0,
        }
        try:
            current = await self.store.get(self.config.namespace, self.config.name)
            if current is None:
                created = await self.store.create(
                    {
                        "apiVersion": "coordination.k8s.io/v1",
                        "kind": "Lease",
                        "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                        "spec": spec,
                    }
                )
                self._observe(created)
                self._last_renew = started
                return True
            self._observe(current)
            old = current.get("spec") or {}
            holder = old.get("holderIdentity") or ""
            if holder and holder != self.identity and not self._expired():
                return False
            if holder == self.identity:
                spec["acquireTime"] = old.get("acquireTime", now_wall)
                spec["leaseTransitions"] = old.get("leaseTransitions", 0)
            else:
                spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
            updated = await self.store.update({**current, "spec": spec})
        except (AlreadyExistsError, ConflictError):
            return False
        except (APIError, OSError, TimeoutError) as exc:
            _log.warning("error reading or writing the leader lease", error=str(exc))
            return False
        self._observe(updated)
        self._last_renew = started
        return True

    def _observe(self, lease: dict[str, Any]) -> None:
        spec = lease.get("spec") or {}
        record = {k: spec.get(k) for k in ("holderIdentity", "renewTime", "leaseDurationSeconds")}
        if record != self._observed:
            self._observed = record
            self._observed_at = self.clock.now()

    def _expired(self) -> bool:
        duration = float((self._observed or {}).get("leaseDurationSeconds") or 0)
        duration = duration or self.config.lease_duration
        return self._observed_at + duration <= self.clock.now()

    async def _release(self) -> None:
        try:
            current = await self.store.get(self.config.namespace, self.config.name)
            if (
                current is None
                or (current.get("spec") or {}).get("holderIdentity") != self.identity
            ):
                return
            spec = {
                **current["spec"],
                "holderIdentity": None,
                "leaseDurationSeconds": 1,
                "renewTime": _now_micro(),
            }
            await self.store.update({**current, "spec": spec})
            _log.info("released leader lease", lease=self._lease_ref())
        except (APIError, OSError, TimeoutError) as exc:
            _log.warning("could not release the leader lease", error=str(exc))
