from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from pyctrl.cache import BackoffPolicy
from pyctrl.cache._reflector import BackingOff, Listing, Reflector, State, Watching
from pyctrl.cache._store import Entry, Key, Store
from pyctrl.clock import FakeClock
from pyctrl.errors import APIError, ForbiddenError, ServiceUnavailableError

from .conftest import wait_until

if TYPE_CHECKING:
    from .fakes import FakeCluster


@dataclass
class Sink:
    """Records what a reflector reports, applying it to a store."""

    store: Store = field(default_factory=Store)
    lists: list[list[str]] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    bookmarks: int = 0

    def replaced(self, reflector: Reflector, items: list[tuple[Key, Entry]]) -> None:
        self.store.replace(items, reflector.namespace)
        self.lists.append([key[1] for key, _ in items])

    def changed(self, reflector: Reflector, event_type: str, key: Key, entry: Entry) -> None:
        self.events.append((event_type, key[1], entry.resource_version))

    def status_changed(self, reflector: Reflector) -> None:
        pass

    def progressed(self, reflector: Reflector) -> None:
        self.bookmarks += 1


def make(
    fake: FakeCluster, clock: FakeClock, sink: Sink | None = None, **kwargs: Any
) -> tuple[Reflector, Sink]:
    sink = sink or Sink()
    kwargs.setdefault("backoff", BackoffPolicy(jitter=0.0))
    reflector = Reflector(
        source=fake,
        sink=sink,
        prepare=sink.store.encode,
        clock=clock,
        random=lambda: 0.5,
        description="v1/ConfigMap",
        **kwargs,
    )
    return reflector, sink


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def watch_step(
    reflector: Reflector, state: Watching, fake: FakeCluster
) -> asyncio.Task[State]:
    """Start a watch step and return once the fake's watch is open."""
    task = asyncio.get_running_loop().create_task(reflector.step(state))
    async with asyncio.timeout(5):
        await fake.watch_opened.wait()
    return task


async def test_listing_pages_through_and_goes_on_to_watch_from_the_list_version(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """A list fetches every page, replaces the store, then watches from the list's version."""
    for name in "abcde":
        fake.put(name)
    reflector, sink = make(fake, clock, page_size=2)
    state = await reflector.step(Listing())
    assert state == Watching("105")
    assert sink.lists == [["a", "b", "c", "d", "e"]]
    assert [call["limit"] for call in fake.list_calls] == [2, 2, 2]
    assert reflector.listed
    assert reflector.failing_since is None


async def test_watch_applies_events_and_rewatches_from_the_last_version(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """Watch events reach the sink in order; a normal end watches again from the last one."""
    reflector, sink = make(fake, clock)
    task = await watch_step(reflector, Watching("100"), fake)
    fake.put("a")
    fake.put("a")
    fake.delete("a")
    fake.bookmark()
    fake.drop_watches()
    assert await task == Watching("103")
    assert sink.events == [("ADDED", "a", "101"), ("MODIFIED", "a", "102"), ("DELETED", "a", "103")]
    call = fake.watch_calls[0]
    assert call["resource_version"] == "100"
    assert 300 <= call["timeout_seconds"] < 600


async def test_bookmarks_move_the_resume_version(fake: FakeCluster, clock: FakeClock) -> None:
    """A bookmark alone advances the version the next watch starts from."""
    reflector, _ = make(fake, clock)
    task = await watch_step(reflector, Watching("100"), fake)
    fake.rv = 250
    fake.bookmark()
    fake.drop_watches()
    assert await task == Watching("250")


async def test_gone_on_watch_leads_to_a_relist(fake: FakeCluster, clock: FakeClock) -> None:
    """410 Gone when opening a watch sends the reflector back to listing, with no backoff."""
    fake.put("a")
    fake.compact()
    reflector, _ = make(fake, clock)
    assert await reflector.step(Watching("100")) == Listing()
    assert reflector.last_error is None


async def test_gone_as_a_watch_event_leads_to_a_relist(fake: FakeCluster, clock: FakeClock) -> None:
    """An ERROR event carrying 410 Expired also sends the reflector back to listing."""
    fake.put("a")
    fake.compact()
    fake.gone_as_event = True
    reflector, _ = make(fake, clock)
    assert await reflector.step(Watching("100")) == Listing()


async def test_a_failed_list_backs_off_then_lists_again(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """A list failure is recorded and retried after the backoff delay."""
    fake.fail_next("list", ServiceUnavailableError(code=503, message="busy"))
    reflector, _ = make(fake, clock)
    state = await reflector.step(Listing())
    assert isinstance(state, BackingOff)
    assert state.then == Listing()
    assert state.delay == pytest.approx(0.8)
    assert "busy" in state.error
    assert reflector.last_error is not None
    assert "busy" in reflector.last_error
    assert reflector.failing_since == clock.now()
    task = asyncio.get_running_loop().create_task(reflector.step(state))
    await clock.wait_for_timers(1)
    clock.advance(0.8)
    assert await task == Listing()


async def test_consecutive_failures_back_off_longer(fake: FakeCluster, clock: FakeClock) -> None:
    """Each further failure doubles the delay."""
    fake.fail_next("list", ServiceUnavailableError(code=503), times=3)
    reflector, _ = make(fake, clock)
    delays = []
    for _ in range(3):
        state = await reflector.step(Listing())
        assert isinstance(state, BackingOff)
        delays.append(state.delay)
    assert delays == pytest.approx([0.8, 1.6, 3.2])


async def test_retry_after_from_the_server_lengthens_the_delay(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """A Retry-After longer than the backoff delay is honoured."""
    fake.fail_next("list", APIError.from_status(429, b"", retry_after="7"))
    reflector, _ = make(fake, clock)
    state = await reflector.step(Listing())
    assert isinstance(state, BackingOff)
    assert state.delay == pytest.approx(7.0)


async def test_server_errors_on_watch_retry_the_watch_not_the_list(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """A 503 on a watch backs off and then resumes watching from the same version."""
    fake.fail_next("watch", ServiceUnavailableError(code=503))
    reflector, _ = make(fake, clock)
    state = await reflector.step(Watching("100"))
    assert isinstance(state, BackingOff)
    assert state.then == Watching("100")


async def test_connection_errors_on_watch_retry_the_watch(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """A refused connection backs off and then resumes watching from the same version."""
    fake.fail_next("watch", ConnectionRefusedError("refused"))
    reflector, _ = make(fake, clock)
    state = await reflector.step(Watching("100"))
    assert isinstance(state, BackingOff)
    assert state.then == Watching("100")


async def test_other_api_errors_on_watch_lead_to_a_relist(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """A 403 on a watch backs off and then lists again."""
    fake.fail_next("watch", ForbiddenError(code=403, message="no"))
    reflector, _ = make(fake, clock)
    state = await reflector.step(Watching("100"))
    assert isinstance(state, BackingOff)
    assert state.then == Listing()


async def test_an_idle_watch_is_reopened_without_counting_a_failure(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """The idle watchdog firing on an open watch re-watches at once, healthy."""
    reflector, _ = make(fake, clock, idle_timeout=5.0)
    task = await watch_step(reflector, Watching("100"), fake)
    fake.fail_watches(TimeoutError("stalled"))
    assert await task == Watching("100")
    assert reflector.last_error is None
    assert fake.watch_calls[0]["idle_timeout"] == 5.0


async def test_a_watch_closed_at_once_without_events_backs_off(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """A watch that ends immediately with nothing sent is a failure, not a timeout."""
    reflector, _ = make(fake, clock)
    task = await watch_step(reflector, Watching("100"), fake)
    fake.drop_watches()
    state = await task
    assert isinstance(state, BackingOff)
    assert state.then == Watching("100")
    assert "without sending anything" in state.error


async def test_a_quiet_watch_that_lasted_is_simply_renewed(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """A watch the server ends after its timeout, even with no events, is renewed at once."""
    reflector, _ = make(fake, clock)
    task = await watch_step(reflector, Watching("100"), fake)
    clock.advance(300)
    fake.drop_watches()
    assert await task == Watching("100")
    assert reflector.reconnects == 0


async def test_an_expired_continue_token_falls_back_to_one_full_list(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """410 on a list continuation lists again without pagination."""
    for name in "abc":
        fake.put(name)
    fake.expire_continue = True
    reflector, sink = make(fake, clock, page_size=2)
    assert await reflector.step(Listing()) == Watching("103")
    assert sink.lists == [["a", "b", "c"]]
    assert [call["limit"] for call in fake.list_calls] == [2, 2, None]


async def test_a_bad_object_is_a_failure_and_leads_to_a_relist(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """An object the reflector cannot store fails the watch loudly, then re-lists."""
    reflector, _ = make(fake, clock)
    task = await watch_step(reflector, Watching("100"), fake)
    for watch in fake.watches:
        watch.queue.put_nowait({"type": "ADDED", "object": {"metadata": {}}})
    state = await task
    assert isinstance(state, BackingOff)
    assert state.then == Listing()
    assert "metadata.name" in state.error


async def test_run_recovers_from_failures_and_counts_reconnects(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """The run loop lists, watches, survives a failed re-watch and keeps going."""
    fake.put("a")
    reflector, sink = make(fake, clock)
    task = asyncio.get_running_loop().create_task(reflector.run())
    try:
        async with asyncio.timeout(5):
            await fake.watch_opened.wait()
        fake.fail_next("watch", ServiceUnavailableError(code=503))
        clock.advance(400)
        fake.drop_watches()
        await clock.wait_for_timers(1)
        failing_while_backing_off = reflector.failing_since is not None
        clock.advance(1.0)
        await wait_until(lambda: bool(fake.watches))
        fake.put("b")
        await wait_until(lambda: len(sink.events) >= 1)
        assert sink.events == [("ADDED", "b", "102")]
        assert failing_while_backing_off
        assert reflector.failing_since is None
        assert reflector.reconnects == 2
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_watch_dropped_as_soon_as_it_opens_never_ends_the_failure(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """Opening a watch is no recovery: a flapping server keeps failing_since where it was."""
    reflector, _ = make(fake, clock)
    fake.fail_next("watch", ServiceUnavailableError(code=503))
    state = await reflector.step(Watching("100"))
    assert isinstance(state, BackingOff)
    assert reflector.failing_since == 0.0
    for _ in range(5):
        clock.advance(10.0)
        task = await watch_step(reflector, Watching("100"), fake)
        assert reflector.watching
        assert reflector.failing_since == 0.0
        fake.drop_watches()
        state = await task
        assert isinstance(state, BackingOff)
        assert "without sending anything" in state.error
    assert reflector.failing_since == 0.0
    assert clock.now() == 50.0


async def test_a_reopened_watch_ends_the_failure_once_it_stays_open(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """After failures, a watch that stays open for a second (no event needed) ends them."""
    reflector, _ = make(fake, clock)
    fake.fail_next("watch", ServiceUnavailableError(code=503))
    await reflector.step(Watching("100"))
    task = await watch_step(reflector, Watching("100"), fake)
    clock.advance(0.5)
    still_failing = reflector.failing_since
    clock.advance(0.5)
    assert (still_failing, reflector.failing_since) == (0.0, None)
    fake.drop_watches()
    assert await task == Watching("100")


async def test_a_reopened_watch_ends_the_failure_with_its_first_event(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """After failures, the first event on a reopened watch ends them at once."""
    reflector, sink = make(fake, clock)
    fake.fail_next("watch", ServiceUnavailableError(code=503))
    await reflector.step(Watching("100"))
    task = await watch_step(reflector, Watching("100"), fake)
    fake.put("a")
    await wait_until(lambda: bool(sink.events))
    assert reflector.failing_since is None
    assert clock.pending_timers == 0
    fake.drop_watches()
    assert await task == Watching("101")


async def test_backoff_starts_over_after_two_healthy_minutes(
    fake: FakeCluster, clock: FakeClock
) -> None:
    """Delays grow with consecutive failures and start again at 800 ms after 2 healthy minutes."""
    reflector, _ = make(fake, clock)
    for _ in range(3):
        fake.fail_next("list", ServiceUnavailableError(code=503))
    delays = []
    for _ in range(3):
        state = await reflector.step(Listing())
        assert isinstance(state, BackingOff)
        delays.append(state.delay)
    assert delays == pytest.approx([0.8, 1.6, 3.2])
    assert await reflector.step(Listing()) == Watching("100")

    async def healthy_then_failing(seconds: float) -> float:
        task = await watch_step(reflector, Watching("100"), fake)
        clock.advance(seconds)
        fake.drop_watches()
        assert await task == Watching("100")
        fake.fail_next("watch", ServiceUnavailableError(code=503))
        state = await reflector.step(Watching("100"))
        assert isinstance(state, BackingOff)
        return state.delay

    assert await healthy_then_failing(119.0) == pytest.approx(6.4)
    assert await healthy_then_failing(121.0) == pytest.approx(0.8)
