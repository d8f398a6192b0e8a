"""pyctrl.testing: the waiters and the running-manager block, against the embedded server."""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio.client import V1ConfigMap, V1ObjectMeta

from pyctrl.envtest import Environment
from pyctrl.manager import Manager, Options
from pyctrl.testing import eventually, gone_eventually, object_eventually, running


async def test_eventually_returns_once_the_check_holds() -> None:
    """eventually() returns as soon as the check turns true."""
    calls = 0

    async def third_time() -> bool:
        nonlocal calls
        calls += 1
        return calls >= 3

    await eventually(third_time, within=5)
    assert calls == 3


async def test_eventually_fails_naming_what_it_waited_for() -> None:
    """A check that never holds fails with an AssertionError naming it."""

    async def never() -> bool:
        return False

    with pytest.raises(AssertionError, match=r"never\(\) was still false after 0.2 s"):
        await eventually(never, within=0.2)


async def test_object_waiters_follow_the_server() -> None:
    """object_eventually returns the object once it matches; gone_eventually sees it deleted."""
    async with Environment() as env:
        manager = Manager(env.config, Options(metrics_bind_address="0"))
        async with running(manager):
            client = manager.client
            reader = manager.api_reader
            with pytest.raises(
                AssertionError, match=r"V1ConfigMap default/cm was never found within 0\.2 s"
            ):
                await object_eventually(reader, V1ConfigMap, "cm", "default", within=0.2)
            await client.create(
                V1ConfigMap(metadata=V1ObjectMeta(name="cm", namespace="default"), data={"a": "1"})
            )

            def has_b(cm: V1ConfigMap) -> bool:
                return bool(cm.data and cm.data.get("b") == "2")

            async def add_b() -> None:
                live = await reader.get(V1ConfigMap, "cm", "default")
                live.data = {**(live.data or {}), "b": "2"}
                await client.update(live)

            async with asyncio.TaskGroup() as tg:
                tg.create_task(add_b())
                seen = await object_eventually(reader, V1ConfigMap, "cm", "default", has_b)
            assert seen.data == {"a": "1", "b": "2"}

            def never_true(cm: V1ConfigMap) -> bool:
                return False

            with pytest.raises(AssertionError, match=r"did not satisfy never_true within 0\.2 s"):
                await object_eventually(
                    reader, V1ConfigMap, "cm", "default", never_true, within=0.2
                )
            await client.delete(seen)
            await gone_eventually(reader, V1ConfigMap, "cm", "default")


async def test_running_fails_the_block_when_the_manager_fails() -> None:
    """A manager that fails while running ends the block with its error, not a hang."""
    async with Environment() as env:
        # 192.0.2.0/24 is reserved for documentation: no interface here has that address.
        manager = Manager(env.config, Options(metrics_bind_address="192.0.2.1:8080"))
        with pytest.raises(OSError, match="cannot assign requested address"):
            async with running(manager):
                await asyncio.Event().wait()


async def test_running_raises_the_blocks_failed_assertion_itself() -> None:
    """A failed assertion in the block is raised as itself, so pytest shows its message."""
    async with Environment() as env:
        manager = Manager(env.config, Options(metrics_bind_address="127.0.0.1:0"))
        with pytest.raises(AssertionError, match="the waiter's message") as info:
            async with running(manager):
                raise AssertionError("the waiter's message")
    assert not isinstance(info.value, BaseExceptionGroup)


async def test_running_raises_the_blocks_error_with_the_managers_in_its_notes() -> None:
    """The block and the manager both failing: the block's error, the manager's noted."""
    async with Environment() as env:
        manager = Manager(env.config, Options(metrics_bind_address="127.0.0.1:0"))
        manager.add(_FailingOnStop())
        with pytest.raises(AssertionError, match="the block's") as info:
            await _fail_in(manager)
    assert info.value.__notes__ == ["also raised: RuntimeError: the manager's"]


async def _fail_in(manager: Manager) -> None:
    async with running(manager):
        raise AssertionError("the block's")


class _FailingOnStop:
    """A runnable that fails when it is stopped."""

    async def start(self) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            raise RuntimeError("the manager's")


async def test_eventually_accepts_a_plain_function() -> None:
    """A sync check is called, not awaited; its false answers are waited through."""
    answers = iter([False, False, True])
    await eventually(lambda: next(answers), within=5)
    with pytest.raises(AssertionError, match=r"<lambda>\(\) was still false after 0.1 s"):
        await eventually(lambda: False, within=0.1)
