"""Sharded controllers: many active replicas, each reconciling its own slots.

Leader election makes every replica but one an idle standby. Sharding lets all of them
work: the 64-bit hash space of an object's uid (`pyctrl.sharding`) is cut into a fixed
number of *slots* (64 by default), and each slot is held through its own
``coordination.k8s.io/v1`` Lease, with the same acquire, renew and release rules as the
manager's leader Lease (`pyctrl.leaderelection.LeaseLock`). A slot therefore has at most
one holder, and the API server arbitrates.

How a `SlotElector` (one per replica, run by the Manager) behaves, every retry period:

- it renews its *member* Lease, and reads every Lease of the ring in one list; the
  replicas whose member Lease is live are the ring, and each one's fair share is the
  number of slots divided by their number (the remainder goes to the first ones in
  identity order);
- it renews the slot Leases it holds; while it holds fewer than its share it takes free
  slots (no Lease yet, released, or expired by its own clock);
- while it holds more than its share (a replica joined) it *drains* the surplus: it stops
  taking those slots' keys at once, lets the reconciles in flight finish (at most
  ``drain_timeout``), then releases the Lease, and another replica takes it;
- a replica that dies stops renewing: its Leases expire ``lease_duration`` after the
  others last saw them change, and they take its slots over.

What a replica holds is published in a `pyctrl.sharding.SlotAssignment`. The informers of
a sharded type ask the API server for those slots only (``shardSelector``, KEP-5866; see
`pyctrl.cache.Cache.shard`), and a sharded controller's `ShardGate` admits a key only if
the cached object's uid hashes into a held slot. Owned objects follow their owner:
`SlotElector.owner_filter` passes an event only if the controller owner's uid hashes into
a held slot.

One object is never reconciled by two replicas at once. That rests on:

- a slot changes hands only through its Lease: released after draining, or expired;
- a holder works on a slot only while ``now < sent + renew_deadline`` by its own monotonic
  clock, where ``sent`` is when its last successful renewal was sent: each slot has its
  own `pyctrl.leaderelection.LeaseFence` (`SlotElector.fence_of`), the manager's leader
  fence's rules; the check is made on every admission, and a reconcile still running when
  that moment passes is cancelled;
- others take over only ``lease_duration`` after they *saw* the last renewal, by their own
  clocks; since ``renew_deadline < lease_duration``, the holder stops first, as long as the
  clocks' *rates* differ by less than that margin (their offsets do not matter).

`/readyz` fails while the replica holds no slot (`SlotElector.check_ready`). Metrics:
``pyctrl_shard_slots_held``, ``pyctrl_shard_slot_moves_total{direction}``,
``pyctrl_shard_handover_seconds`` (from the start of a drain to the release), and the
cache's ``pyctrl_shard_objects`` and ``pyctrl_shard_server_filtering``.

For per-object work outside reconciles (daemons), `SlotElector.is_mine` says whether an
object belongs to this replica now, `SlotElector.on_slot_lost` calls back when a slot
leaves it (drain start, lapse or release), and `SlotElector.fence` bounds a block of work
by the slot's validity the way reconciles are.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import Counter, Gauge, Histogram

from pyctrl import metrics
from pyctrl._fence import fenced_by
from pyctrl.cache import cached_uid, keys_in_slots
from pyctrl.clock import Clock, RealClock
from pyctrl.errors import AlreadyExistsError, APIError, ConflictError, PyctrlError
from pyctrl.leaderelection import (
    LeaseFence,
    LeaseLock,
    LeaseStore,
    RESTLeaseStore,
    default_identity,
)
from pyctrl.log import get_logger
from pyctrl.resource import accessor
from pyctrl.sharding import FIELD_UID, SlotAssignment, hash_field

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from pyctrl.cache import Informer
    from pyctrl.client import RESTClient
    from pyctrl.event import CreateEvent, DeleteEvent, GenericEvent, UpdateEvent
    from pyctrl.handler import Queue
    from pyctrl.reconcile import Request
    from pyctrl.resource import ObjectAccessor

__all__ = [
    "RING_LABEL",
    "SLOT_LABEL",
    "RingLeaseStore",
    "RingStore",
    "ShardGate",
    "ShardLostError",
    "ShardingOptions",
    "SlotElector",
]

_log = get_logger("pyctrl.shardelection")
_JITTER = 1.2

RING_LABEL = "pyctrl.io/shard-ring"
"""Label on every Lease of a ring: the ring's name."""
SLOT_LABEL = "pyctrl.io/shard-slot"
"""Label on a slot Lease: the slot number."""
MEMBER_LABEL = "pyctrl.io/shard-member"
"""Label on a member Lease."""

slots_held = Gauge(
    "pyctrl_shard_slots_held",
    "Shard slots this replica holds and works on.",
    ["ring"],
    registry=metrics.registry,
)
slot_moves_total = Counter(
    "pyctrl_shard_slot_moves_total",
    "Shard slots taken (in), released after draining (out) or lost by lapse (lost).",
    ["ring", "direction"],
    registry=metrics.registry,
)
handover_seconds = Histogram(
    "pyctrl_shard_handover_seconds",
    "Seconds from the start of a slot's drain to the release of its Lease.",
    ["ring"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=metrics.registry,
)


class ShardLostError(PyctrlError):
    """A reconcile outlived its slot's validity and was cancelled; it is retried."""


@dataclass(frozen=True)
class ShardingOptions:
    """How a manager shards its controllers.

    Attributes:
        name: The ring's name: it prefixes every Lease, so it must be a valid Lease name
            prefix (lowercase letters, digits, ``-``; at most 40 characters).
        namespace: Where the Leases live (default: the pod's namespace, as for leader
            election).
        slots: How many slots the hash space is cut into; at least the largest number of
            replicas you will run. Fixed for the life of the ring.
        lease_duration: Seconds a Lease stays valid without renewal.
        renew_deadline: Seconds after the last successful renewal was sent during which the
            holder works on a slot; less than ``lease_duration``.
        retry_period: Seconds between rounds (list, renew, take, release).
        identity: This replica's identity (default host name plus a unique suffix).
        drain_timeout: Seconds a surplus slot's in-flight reconciles get before they are
            cancelled and the slot released.
        release_on_cancel: Release every Lease on shutdown, for a fast hand-over.
        field: What is hashed: ``object.metadata.uid`` (default) or
            ``object.metadata.namespace`` (all of a namespace in one slot).
    """

    name: str
    namespace: str = ""
    slots: int = 64
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str = ""
    drain_timeout: float = 30.0
    release_on_cancel: bool = True
    field: str = FIELD_UID

    def __post_init__(self) -> None:
        if not self.name or len(self.name) > 40 or not _dns_label(self.name):
            raise ValueError(
                f"ShardingOptions.name {self.name!r} must be 1-40 lowercase letters, digits "
                "or '-', starting and ending with a letter or digit"
            )
        if not 1 <= self.slots <= 4096:
            raise ValueError(f"ShardingOptions.slots must be between 1 and 4096, got {self.slots}")
        if self.retry_period <= 0:
            raise ValueError("ShardingOptions.retry_period must be positive")
        if not self.lease_duration > self.renew_deadline:
            raise ValueError("ShardingOptions.lease_duration must be greater than renew_deadline")
        if not self.renew_deadline > _JITTER * self.retry_period:
            raise ValueError(
                "ShardingOptions.renew_deadline must be greater than retry_period * 1.2"
            )
        if self.drain_timeout < 0:
            raise ValueError("ShardingOptions.drain_timeout must be >= 0")
        if not self.identity:
            object.__setattr__(self, "identity", default_identity())


def _dns_label(name: str) -> bool:
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789-")
    return set(name) <= allowed and name[0] != "-" and name[-1] != "-"


class RingStore(LeaseStore, Protocol):
    """The Leases of a ring (an extension point; `RingLeaseStore` is the real one)."""

    async def list(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        """Every Lease in ``namespace`` matching ``label_selector``."""
        ...


class RingLeaseStore(RESTLeaseStore):
    """The Leases of a ring: `RESTLeaseStore`, plus a list by label."""

    def __init__(self, rest: RESTClient, *, timeout: float = 5.0) -> None:
        super().__init__(rest, timeout=timeout)
        self._client = rest

    async def list(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        """Every Lease in ``namespace`` matching ``label_selector``."""
        response = await self._client.request(
            "GET",
            self._path(namespace),
            query={"labelSelector": label_selector},
            timeout=self._timeout,
        )
        items = response.json().get("items") or []
        return [item for item in items if isinstance(item, dict)]


class SlotElector:
    """Holds this replica's fair share of a ring's slots (see the module documentation).

    A runnable: `start` runs rounds until cancelled, then (with ``release_on_cancel``)
    releases every Lease. The Manager runs it when `pyctrl.manager.Options.sharding` is
    set, and its builder wires sharded controllers to it.

    Args:
        store: Where the Leases live.
        options: The ring.
        clock: The monotonic clock (tests pass a FakeClock).
        rng: Jitter source.
    """

    need_leader_election = False

    def __init__(
        self,
        store: RingStore,
        options: ShardingOptions,
        *,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not options.namespace:
            raise ValueError("ShardingOptions.namespace is required here")
        self.store = store
        self.options = options
        self.name = f"shards-{options.name}"
        self.clock = clock or RealClock()
        self._rng = rng or random.Random()
        self.assignment = SlotAssignment(options.slots, field=options.field, clock=self.clock)
        self.identity = options.identity
        self._selector = f"{RING_LABEL}={options.name}"
        self._slots = [
            self._lock(f"{options.name}-slot-{i}", {SLOT_LABEL: str(i)})
            for i in range(options.slots)
        ]
        self._fences = [
            LeaseFence(options.renew_deadline, clock=self.clock, name=lock.ref)
            for lock in self._slots
        ]
        """Each slot's term, as the manager's leader Lease has one (`LeaseFence`)."""
        self._member = self._lock(
            f"{options.name}-member-{hash_field(self.identity):016x}", {MEMBER_LABEL: "true"}
        )
        self._members: dict[str, LeaseLock] = {}
        self._draining: dict[int, float] = {}
        self._inflight: dict[int, set[asyncio.Timeout]] = {}
        self._lost_callbacks: list[Callable[[int], None]] = []
        self._wake = asyncio.Event()
        self._ready = asyncio.Event()
        self._rounds = 0
        self._expiry_timer: Any = None
        self._published: frozenset[int] = frozenset()
        self._held_gauge = slots_held.labels(options.name)
        self._held_gauge.set(0)
        offset = hash_field(self.identity) % options.slots
        # Each replica prefers different free slots, so that takers rarely collide.
        self._preference = sorted(range(options.slots), key=lambda s: (s - offset) % options.slots)

    def _lock(self, name: str, labels: dict[str, str]) -> LeaseLock:
        return LeaseLock(
            name,
            self.options.namespace,
            self.identity,
            self.options.lease_duration,
            self.clock,
            labels={RING_LABEL: self.options.name, **labels},
        )

    # public view ---------------------------------------------------------------------------

    def held(self) -> frozenset[int]:
        """The slots this replica works on now (held, valid, not draining)."""
        return self.assignment.held()

    def is_mine(self, obj: Any) -> bool:
        """Whether ``obj`` (typed, or decoded JSON; with its uid) belongs to this replica now."""
        meta = accessor(obj)
        if self.assignment.field == FIELD_UID:
            return self.assignment.owns_value(meta.uid)
        return self.assignment.owns_value(meta.namespace)

    def owns_uid(self, uid: str) -> bool:
        """Whether the object with this uid belongs to this replica now (uid rings)."""
        return self.assignment.owns_value(uid)

    def on_slot_lost(self, callback: Callable[[int], None]) -> Callable[[], None]:
        """Call ``callback(slot)`` when a slot leaves this replica; returns the remover.

        It is called when a drain starts (the keys stop being admitted), and when a slot's
        validity lapses without renewal.
        """
        self._lost_callbacks.append(callback)

        def remove() -> None:
            if callback in self._lost_callbacks:
                self._lost_callbacks.remove(callback)

        return remove

    def lapsed(self, slot: int) -> bool:
        """Whether this replica holds ``slot``'s Lease but let its validity run out.

        It may still renew it (then the slot comes back), unless another replica takes it.
        """
        return (
            slot not in self._draining
            and self._slots[slot].holder() == self.identity
            and self._fences[slot].lost
        )

    def fence_of(self, slot: int) -> LeaseFence:
        """``slot``'s `pyctrl.leaderelection.LeaseFence`: its term on this replica.

        Work held under the slot can check it (``valid()``, ``raise_if_lost()``) or be told
        when it ends (``on_lost``), as the manager's leader-only work uses its own.
        """
        return self._fences[slot]

    def members(self) -> list[str]:
        """The identities of the live replicas of the ring, as last seen."""
        return self._alive()

    def check_ready(self) -> None:
        """A readiness check: raises while this replica holds no slot."""
        if not self.held():
            raise RuntimeError(f"shard ring {self.options.name}: this replica holds no slot yet")

    async def wait_holding(self) -> None:
        """Wait until this replica holds at least one slot."""
        await self._ready.wait()

    @contextlib.asynccontextmanager
    async def fence(self, slot: int) -> AsyncIterator[None]:
        """Bound a block of work by ``slot``'s validity, and count it as in flight.

        A draining slot is released only once no fenced block is in flight; a block still
        running when the slot lapses is cancelled and raises `ShardLostError`. The slot's
        `LeaseFence` is bound to the block (`pyctrl._fence.fenced_by`): every write the
        block makes, from a task or from blocking code's thread, is refused by the client
        (`pyctrl.errors.LeaseLostError`) once the slot's renew deadline has passed, however
        late the cancellation comes (a paused process that resumes).

        Raises:
            ShardLostError: the slot is not held now, or was lost during the block.
        """
        if not self.assignment.owns_slot(slot):
            raise ShardLostError(f"slot {slot} of shard ring {self.options.name} is not held")
        timeout = asyncio.timeout(None)
        blocks = self._inflight.setdefault(slot, set())
        try:
            async with timeout:
                blocks.add(timeout)
                try:
                    with fenced_by(self._fences[slot]):  # the client refuses writes past it
                        yield
                finally:
                    blocks.discard(timeout)
        except TimeoutError:
            if timeout.expired():
                raise ShardLostError(
                    f"slot {slot} of shard ring {self.options.name} was lost; work cancelled"
                ) from None
            raise
        finally:
            if not blocks:
                self._inflight.pop(slot, None)
                if slot in self._draining:
                    self._wake.set()

    def owner_filter(self) -> OwnerFilter:
        """A predicate for owned objects: passes if their controller owner is in a held slot."""
        return OwnerFilter(self.assignment)

    def gate_for(self, informer: Informer[Any]) -> ShardGate:
        """The gate of a controller reconciling ``informer``'s (sharded) type.

        Give it to the controller (``Controller(..., gate=...)``), which starts it.
        """
        return ShardGate(self, informer)

    # running -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Run rounds until cancelled; then release the Leases (``release_on_cancel``)."""
        _log.info(
            "joining shard ring",
            ring=self.options.name,
            identity=self.identity,
            slots=self.options.slots,
        )
        try:
            while True:
                await self._round()
                await self._pause()
        except asyncio.CancelledError:
            self._stop()
            if self.options.release_on_cancel:
                await self._release_all()
            raise

    async def _pause(self) -> None:
        delay = self.options.retry_period * (1 + self._rng.random() * (_JITTER - 1))
        deadline = self.clock.now() + delay
        # Wake early for a Lease that expires before then (takeover within lease_duration
        # of the last renewal seen), or when a drained slot's last reconcile finishes.
        for lock in (*self._slots, *self._members.values()):
            if lock.current is not None and lock.holder() and lock.holder() != self.identity:
                expiry = lock.expires_at()
                if self.clock.now() < expiry < deadline:
                    deadline = expiry
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            async with self.clock.timeout_at(deadline):
                await self._wake.wait()

    async def _round(self) -> None:
        try:
            leases = await self.store.list(self.options.namespace, self._selector)
        except (APIError, OSError, TimeoutError) as exc:
            _log.warning("could not list the shard ring's Leases", error=str(exc))
            self._publish()
            return
        self._observe(leases)
        await self._write(self._member)
        self._rounds += 1
        held = self._holding()
        quota = self._quota()
        now = self.clock.now()
        # Renew what is held (draining slots too: they are still ours until released).
        await self._write_all(held)
        held = self._holding()
        working = [s for s in held if s not in self._draining]
        if len(working) < quota and self._draining:
            # The share grew back (a replica left): keep draining slots instead.
            for slot in sorted(self._draining)[: quota - len(working)]:
                self._draining.pop(slot)
            working = [s for s in held if s not in self._draining]
        if len(working) > quota:
            surplus = sorted(working, key=self._preference.index)[quota:]
            for slot in surplus:
                self._draining[slot] = now
            _log.info("draining surplus slots", ring=self.options.name, slots=surplus, share=quota)
        self._publish()
        await self._release_drained()
        if self._rounds > 1 and len(working) < quota:
            # From the second round on: the first one only announces this replica, so
            # that replicas starting together do not all grab every slot first.
            free = [s for s in self._preference if s not in held and self._slots[s].free()]
            taken = await self._write_all(free[: quota - len(working)])
            if taken:
                slot_moves_total.labels(self.options.name, "in").inc(len(taken))
                _log.info("took slots", ring=self.options.name, slots=sorted(taken), share=quota)
        self._publish()

    def _observe(self, leases: list[dict[str, Any]]) -> None:
        seen_members: dict[str, LeaseLock] = {}
        seen_slots: set[int] = set()
        for lease in leases:
            meta = lease.get("metadata") or {}
            labels = meta.get("labels") or {}
            if labels.get(MEMBER_LABEL) == "true":
                name = str(meta.get("name") or "")
                lock = self._members.get(name)
                if name == self._member.name:
                    lock = self._member
                elif lock is None:
                    lock = self._lock(name, {MEMBER_LABEL: "true"})
                lock.observe(lease)
                seen_members[name] = lock
            elif SLOT_LABEL in labels:
                try:
                    slot = int(labels[SLOT_LABEL])
                except ValueError:
                    continue
                if 0 <= slot < self.options.slots:
                    self._slots[slot].observe(lease)
                    seen_slots.add(slot)
        for slot, lock in enumerate(self._slots):
            if slot not in seen_slots:
                lock.observe(None)
        if self._member.name not in seen_members:
            self._member.observe(None)
        self._members = {k: v for k, v in seen_members.items() if k != self._member.name}

    def _alive(self) -> list[str]:
        alive = {self.identity}
        for lock in self._members.values():
            holder = lock.holder()
            if holder and not lock.expired():
                alive.add(holder)
        return sorted(alive)

    def _quota(self) -> int:
        alive = self._alive()
        base, extra = divmod(self.options.slots, len(alive))
        return base + (1 if alive.index(self.identity) < extra else 0)

    def _holding(self) -> list[int]:
        return [
            s
            for s, lock in enumerate(self._slots)
            if lock.holder() == self.identity and self._fences[s].valid()
        ]

    async def _write(self, lock: LeaseLock) -> bool:
        body = lock.claim()
        if body is None:
            return False
        sent_at = self.clock.now()
        try:
            if lock.current is None:
                written = await self.store.create(body)
            else:
                written = await self.store.update(body)
        except (AlreadyExistsError, ConflictError):
            return False
        except (APIError, OSError, TimeoutError) as exc:
            _log.warning("could not write a shard Lease", lease=lock.ref, error=str(exc))
            return False
        lock.succeeded(written, sent_at)
        return True

    async def _write_all(self, slots: list[int]) -> list[int]:
        async with asyncio.TaskGroup() as group:
            tasks = {s: group.create_task(self._write(self._slots[s])) for s in slots}
        written = [s for s, task in tasks.items() if task.result()]
        for slot in written:
            sent_at = self._slots[slot].sent_at
            assert sent_at is not None
            # A new term after a lapse or a take, else the term goes on.
            self._fences[slot].acquired(sent_at)
        return written

    async def _release_drained(self) -> None:
        now = self.clock.now()
        for slot, since in list(self._draining.items()):
            blocks = self._inflight.get(slot)
            if blocks and now - since < self.options.drain_timeout:
                continue
            for block in list(blocks or ()):
                block.reschedule(asyncio.get_running_loop().time())
            if blocks:
                continue  # cancelled: released once they have unwound
            lock = self._slots[slot]
            self._fences[slot].release()
            body = lock.release()
            self._draining.pop(slot, None)
            if body is None:
                continue
            try:
                lock.observe(await self.store.update(body))
            except (APIError, OSError, TimeoutError) as exc:
                # Not released: it lapses on its own after lease_duration.
                _log.warning("could not release a slot Lease", lease=lock.ref, error=str(exc))
                continue
            slot_moves_total.labels(self.options.name, "out").inc()
            handover_seconds.labels(self.options.name).observe(self.clock.now() - since)
            _log.info("released slot", ring=self.options.name, slot=slot)
        self._publish()

    def _publish(self) -> None:
        valid: dict[int, float] = {}
        for slot, fence in enumerate(self._fences):
            until = fence.deadline
            if until is not None and self._slots[slot].holder() == self.identity:
                valid[slot] = until
        self.assignment.update(valid, self._draining)
        held = self.assignment.held()
        for slot in sorted(self._published - held):
            if slot not in self._draining:
                slot_moves_total.labels(self.options.name, "lost").inc()
                _log.warning("slot lost without release", ring=self.options.name, slot=slot)
                for block in list(self._inflight.get(slot, ())):
                    block.reschedule(asyncio.get_running_loop().time())
            for callback in list(self._lost_callbacks):
                try:
                    callback(slot)
                except Exception:
                    _log.exception("slot-lost callback raised", slot=slot)
        self._published = held
        self._held_gauge.set(len(held))
        if held:
            self._ready.set()
        else:
            self._ready.clear()
        self._arm_expiry(valid)

    def _arm_expiry(self, valid: dict[int, float]) -> None:
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        now = self.clock.now()
        upcoming = [t for t in valid.values() if t > now]
        if upcoming:
            self._expiry_timer = self.clock.call_at(min(upcoming), self._publish)

    def _stop(self) -> None:
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None

    async def _release_all(self) -> None:
        held = [s for s, lock in enumerate(self._slots) if lock.holder() == self.identity]
        for fence in self._fences:
            fence.release()
        self.assignment.update({})
        self._held_gauge.set(0)
        self._ready.clear()

        async def release(lock: LeaseLock) -> None:
            body = lock.release()
            if body is None:
                return
            with contextlib.suppress(APIError, OSError, TimeoutError):
                await self.store.update(body)

        async with asyncio.TaskGroup() as group:
            for slot in held:
                group.create_task(release(self._slots[slot]))
            group.create_task(release(self._member))
        if held:
            slot_moves_total.labels(self.options.name, "out").inc(len(held))
        _log.info("left shard ring", ring=self.options.name, released=len(held))


class ShardGate:
    """Admits a sharded controller's keys only while their object's slot is held.

    The controller asks `admits` before each reconcile (a key of a slot it does not hold is
    forgotten: its holder reconciles it), and runs the reconcile inside `fence`. It is also
    a `pyctrl.source.Source`, which the controller starts with its sources: when a slot
    arrives (or comes back after a lapse), the gate queues every cached object of that
    slot, so keys skipped meanwhile are not lost; objects not cached yet arrive with the
    informer's re-list.

    Args:
        elector: The replica's slot elector.
        informer: The informer of the controller's (sharded) type, to find a key's uid.
    """

    def __init__(self, elector: SlotElector, informer: Informer[Any]) -> None:
        self._elector = elector
        self._informer = informer
        self._queue: Queue | None = None
        self._held = elector.assignment.held()
        self._lapsed: set[Request] = set()
        self._lapse = asyncio.Event()

    async def start(self, queue: Queue) -> None:
        """Queue the keys of slots that arrive, and of lapsed ones, until cancelled."""
        if self._queue is not None:
            raise RuntimeError("a ShardGate gates one controller: it was already started")
        self._queue = queue
        self._held = self._elector.assignment.held()
        remove = self._elector.assignment.add_listener(self._changed)
        try:
            while True:
                await self._lapse.wait()
                # Looked at again a retry period later, when the renewal may have gone through.
                await self._elector.clock.sleep(self._elector.options.retry_period)
                self._lapse.clear()
                lapsed, self._lapsed = self._lapsed, set()
                for request in lapsed:
                    queue.add(request)
        finally:
            remove()
            self._queue = None

    def _changed(self) -> None:
        held = self._elector.assignment.held()
        arrived, self._held = held - self._held, held
        if not arrived or self._queue is None:
            return
        for request in keys_in_slots(self._informer, self._elector.assignment, arrived):
            self._queue.add(request)

    def slot_of(self, request: Request) -> int | None:
        """The slot of the request's object, or None if the object is not in this cache."""
        uid = cached_uid(self._informer, request.namespace or "", request.name)
        if uid is None:
            return None
        assignment = self._elector.assignment
        if assignment.field == FIELD_UID:
            return assignment.slot_of_value(uid)
        return assignment.slot_of_value(request.namespace or "")

    def admits(self, request: Request) -> bool:
        """Whether this replica may reconcile ``request`` now.

        A key of a slot whose Lease this replica still holds but has not renewed in time
        (a stalled process) is looked at again a retry period later, when the renewal may
        have gone through; other keys not admitted are dropped.
        """
        slot = self.slot_of(request)
        if slot is None:
            return False
        if self._elector.assignment.owns_slot(slot):
            return True
        if self._queue is not None and self._elector.lapsed(slot):
            self._lapsed.add(request)
            self._lapse.set()
        return False

    @contextlib.asynccontextmanager
    async def fence(self, request: Request) -> AsyncIterator[None]:
        """Run a reconcile of ``request`` as in-flight work of its slot (`SlotElector.fence`)."""
        slot = self.slot_of(request)
        if slot is None:
            raise ShardLostError(f"{request} is no longer in this replica's cache")
        async with self._elector.fence(slot):
            yield


class OwnerFilter:
    """A predicate: an object passes if its controller owner hashes into a held slot.

    For ``owns()`` watches of a sharded controller. An object without a controller owner
    passes (its handler enqueues nothing anyway).
    """

    def __init__(self, assignment: SlotAssignment) -> None:
        self._assignment = assignment

    def _passes(self, meta: ObjectAccessor) -> bool:
        for ref in meta.owner_references:
            if not ref.controller:
                continue
            if self._assignment.field == FIELD_UID:
                return self._assignment.owns_value(ref.uid)
            return self._assignment.owns_value(meta.namespace)
        return True

    def create(self, event: CreateEvent[Any]) -> bool:
        """Pass if the owner is in a held slot."""
        return self._passes(event.meta)

    def update(self, event: UpdateEvent[Any]) -> bool:
        """Pass if the (new or old) owner is in a held slot."""
        return self._passes(event.meta_new) or self._passes(event.meta_old)

    def delete(self, event: DeleteEvent[Any]) -> bool:
        """Pass if the owner is in a held slot."""
        return self._passes(event.meta)

    def generic(self, event: GenericEvent[Any]) -> bool:
        """Pass if the owner is in a held slot."""
        return self._passes(event.meta)
