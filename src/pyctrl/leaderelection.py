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
    "LeaseLock",
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


class LeaseLock:
    """One Lease as one candidate sees it: what it observed, and how it claims the Lease.

    The acquire, renew and release rules of client-go's ``LeaderElector``, without the
    I/O, so that one Lease (the manager's leader lease) and many (the slot leases of
    `pyctrl.shardelection`) follow the same rules:

    - `observe` records the Lease as read, and *when this process first saw that
      record*: a holder is presumed gone only once its record has stayed the same for its
      ``leaseDurationSeconds`` by this process's own clock (`expired`);
    - `claim` builds the Lease to write to take or renew it, or None while another holder
      is valid; the write must be a create (no Lease yet) or a compare-and-swap update;
    - `succeeded` records a write that went through, with the monotonic time it was sent:
      the holder may act until ``sent_at`` plus its renew deadline (`valid_until`);
    - `release` builds the Lease that gives it up (empty holder).

    Args:
        name: The Lease's name.
        namespace: The Lease's namespace.
        identity: This candidate's identity.
        lease_duration: Seconds a Lease stays valid without renewal.
        clock: The monotonic clock.
        labels: Labels put on a Lease this candidate creates.
    """

    def __init__(
        self,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float,
        clock: Clock,
        *,
        labels: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.clock = clock
        self.labels = labels
        self.current: dict[str, Any] | None = None
        """The Lease as last read or written, None before or if it does not exist."""
        self.sent_at: float | None = None
        """When the last successful claim was sent (monotonic), None if none succeeded."""
        self._observed: dict[str, Any] | None = None
        self._observed_at = 0.0

    @property
    def ref(self) -> str:
        """``namespace/name``, for logs."""
        return f"{self.namespace}/{self.name}"

    def holder(self) -> str:
        """The holder identity in the Lease last seen ("" if none)."""
        return str(((self.current or {}).get("spec") or {}).get("holderIdentity") or "")

    def observe(self, lease: dict[str, Any] | None) -> None:
        """Record the Lease as read (None: it does not exist)."""
        self.current = lease
        if lease is None:
            return
        spec = lease.get("spec") or {}
        record = {k: spec.get(k) for k in ("holderIdentity", "renewTime", "leaseDurationSeconds")}
        if record != self._observed:
            self._observed = record
            self._observed_at = self.clock.now()

    def expires_at(self) -> float:
        """When, by this process's clock, the holder last observed is presumed gone."""
        duration = float((self._observed or {}).get("leaseDurationSeconds") or 0)
        return self._observed_at + (duration or self.lease_duration)

    def expired(self) -> bool:
        """Whether the holder last observed has not renewed for its lease duration."""
        return self.expires_at() <= self.clock.now()

    def free(self) -> bool:
        """Whether a claim would succeed on the Lease last seen (absent, empty, mine, expired)."""
        holder = self.holder()
        return self.current is None or not holder or holder == self.identity or self.expired()

    def claim(self) -> dict[str, Any] | None:
        """The Lease to write to take or renew it, or None while another holder is valid."""
        now_wall = _now_micro()
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "acquireTime": now_wall,
            "renewTime": now_wall,
            "leaseTransitions": 0,
        }
        current = self.current
        if current is None:
            metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
            if self.labels:
                metadata["labels"] = dict(self.labels)
            return {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": metadata,
                "spec": spec,
            }
        old = current.get("spec") or {}
        holder = old.get("holderIdentity") or ""
        if holder and holder != self.identity and not self.expired():
            return None
        if holder == self.identity:
            spec["acquireTime"] = old.get("acquireTime", now_wall)
            spec["leaseTransitions"] = old.get("leaseTransitions", 0)
        else:
            spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
        return {**current, "spec": spec}

    def succeeded(self, written: dict[str, Any], sent_at: float) -> None:
        """Record a claim the server accepted, sent at monotonic time ``sent_at``."""
        self.observe(written)
        self.sent_at = sent_at

    def valid_until(self, renew_deadline: float) -> float:
        """Until when the holder may act (monotonic; 0 when no claim succeeded).

        That is the last successful claim's send time plus ``renew_deadline``: others take
        over only ``lease_duration`` after they saw the claim, which is after it was sent.
        """
        return 0.0 if self.sent_at is None else self.sent_at + renew_deadline

    def release(self) -> dict[str, Any] | None:
        """The Lease to write to give it up, or None if this candidate does not hold it."""
        current = self.current
        if current is None or self.holder() != self.identity:
            return None
        self.sent_at = None
        spec = {
            **(current.get("spec") or {}),
            "holderIdentity": None,
            "leaseDurationSeconds": 1,
            "renewTime": _now_micro(),
        }
        return {**current, "spec": spec}


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
        self._lock = LeaseLock(
            config.name, config.namespace, config.identity, config.lease_duration, self.clock
        )
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
        lock = self._lock
        try:
            current = await self.store.get(self.config.namespace, self.config.name)
            lock.observe(current)
            body = lock.claim()
            if body is None:
                return False
            sent_at = self.clock.now()
            written = await (
                self.store.create(body) if current is None else self.store.update(body)
            )
        except (AlreadyExistsError, ConflictError):
            return False
        except (APIError, OSError, TimeoutError) as exc:
            _log.warning("error reading or writing the leader lease", error=str(exc))
            return False
        lock.succeeded(written, sent_at)
        # The fence counts from when the write was sent: the server wrote the record later.
        self._last_renew = sent_at
        return True

    async def _release(self) -> None:
        try:
            self._lock.observe(await self.store.get(self.config.namespace, self.config.name))
            body = self._lock.release()
            if body is None:
                return
            await self.store.update(body)
            _log.info("released leader lease", lease=self._lease_ref())
        except (APIError, OSError, TimeoutError) as exc:
            _log.warning("could not release the leader lease", error=str(exc))
