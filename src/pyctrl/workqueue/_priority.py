"""The ready keys of a workqueue, by priority (controller-runtime's priority queue).

Each priority has a `Level`: its ready keys by due time, then arrival. `ReadyKeys` hands
out the first key of the highest priority, except that once the oldest ready key of a
lower priority has waited ``starvation_timeout`` seconds it is served every other turn.

A fair queue (one with a fairness key) gives each priority a `FairLevel` instead: one
`Level` per fairness group, served in turn (round robin), so within a priority a group
with thousands of ready keys gets one hand-out per turn like a group with one
(controller-runtime PR #3261).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections import deque
from collections.abc import Hashable
from typing import TYPE_CHECKING, Final, Generic, TypeVar

if TYPE_CHECKING:
    from pyctrl.workqueue._triggers import Log

__all__ = [
    "BLOCKED",
    "COMPACT_SLACK",
    "DELAYED",
    "GONE",
    "READY",
    "Entry",
    "FairLevel",
    "Level",
    "ReadyKeys",
]

K = TypeVar("K", bound=Hashable)

# Entry states. A dirty key's entry is READY (can be handed out), DELAYED (waits for
# its due time) or BLOCKED (added again while being processed: waits for done()).
# GONE marks entries handed out or dropped, so heap elements pointing at them are stale.
READY: Final = 0
DELAYED: Final = 1
BLOCKED: Final = 2
GONE: Final = 3

# Heaps drop stale elements lazily; rebuild one once it is mostly garbage.
COMPACT_SLACK: Final = 64


class Entry(Generic[K]):
    """One dirty key: its priority, when it is due, and where it stands."""

    __slots__ = ("delay_seq", "due", "group", "key", "order", "priority", "state", "triggers")

    def __init__(
        self, key: K, priority: int, due: float, order: int, group: Hashable = None
    ) -> None:
        self.key = key
        self.group = group
        self.priority = priority
        self.due = due
        self.order = order
        self.state = GONE
        self.delay_seq = -1
        self.triggers: Log | None = None


class Level(Generic[K]):
    """The ready keys of one priority, ordered by due time, then arrival.

    Keys usually become ready in that order (an add is due now), so they go to a deque,
    O(1); the few that do not (delayed keys handed over late, promoted keys) go to a
    heap. An element is stale once its entry is no longer ready at this priority: entries
    are only ever promoted, so a stale element never becomes valid again.
    """

    __slots__ = ("count", "fifo", "late", "priority")

    def __init__(self, priority: int) -> None:
        self.priority = priority
        self.count = 0
        self.fifo: deque[Entry[K]] = deque()
        # (due, order, entry); order is unique, so entries themselves are never compared.
        self.late: list[tuple[float, int, Entry[K]]] = []

    def push(self, entry: Entry[K]) -> None:
        """Add a key that became ready at this priority."""
        fifo = self.fifo
        if fifo:
            tail = fifo[-1]
            in_order = tail.due < entry.due or (tail.due == entry.due and tail.order < entry.order)
        else:
            in_order = True
        if in_order:
            fifo.append(entry)
        else:
            heapq.heappush(self.late, (entry.due, entry.order, entry))
        self.count += 1
        if len(fifo) + len(self.late) > 2 * self.count + COMPACT_SLACK:
            self._compact()

    def _valid(self, entry: Entry[K]) -> bool:
        return entry.state == READY and entry.priority == self.priority

    def head(self) -> Entry[K]:
        """The first ready key; the level must hold one."""
        fifo, late = self.fifo, self.late
        while fifo and not self._valid(fifo[0]):
            fifo.popleft()
        while late and not self._valid(late[0][2]):
            heapq.heappop(late)
        if not late:
            return fifo[0]
        if fifo:
            first = fifo[0]
            if (first.due, first.order) < late[0][:2]:
                return first
        return late[0][2]

    def pop(self) -> Entry[K]:
        """Remove and return the first ready key."""
        entry = self.head()
        if self.fifo and self.fifo[0] is entry:
            self.fifo.popleft()
        else:
            heapq.heappop(self.late)
        self.count -= 1
        return entry

    def discount(self, entry: Entry[K]) -> None:
        """Forget one key that left this level (promoted); its elements go stale."""
        self.count -= 1

    def _compact(self) -> None:
        entries = itertools.chain(self.fifo, (element[2] for element in self.late))
        valid = sorted(
            (entry for entry in entries if self._valid(entry)),
            key=lambda entry: (entry.due, entry.order),
        )
        self.fifo = deque(valid)
        self.late = []


class FairLevel(Generic[K]):
    """The ready keys of one priority, in a `Level` per fairness group, served in turn.

    ``turns`` holds the groups with ready keys, the next to serve first: a group served
    goes to the back if it still has keys, and a group that gets its first ready key
    joins at the back. A group thus waits at most one hand-out per other group, however
    many keys those hold.
    """

    __slots__ = ("count", "groups", "priority", "turns")

    def __init__(self, priority: int) -> None:
        self.priority = priority
        self.count = 0
        self.groups: dict[Hashable, Level[K]] = {}
        self.turns: deque[Hashable] = deque()

    def push(self, entry: Entry[K]) -> None:
        """Add a key that became ready at this priority, to its group."""
        group = self.groups.get(entry.group)
        if group is None:
            group = self.groups[entry.group] = Level(self.priority)
            self.turns.append(entry.group)
        group.push(entry)
        self.count += 1

    def head(self) -> Entry[K]:
        """The key the next turn hands out; the level must hold one."""
        return self.groups[self.turns[0]].head()

    def pop(self) -> Entry[K]:
        """Remove and return the next group's first key, and pass the turn on."""
        name = self.turns[0]
        group = self.groups[name]
        entry = group.pop()
        self.count -= 1
        if group.count:
            self.turns.rotate(-1)
        else:
            self.turns.popleft()
            del self.groups[name]
        return entry

    def discount(self, entry: Entry[K]) -> None:
        """Forget one key that left this level (promoted); its group may leave its turn."""
        self.count -= 1
        group = self.groups[entry.group]
        group.count -= 1
        if not group.count:
            del self.groups[entry.group]
            self.turns.remove(entry.group)


class ReadyKeys(Generic[K]):
    """The ready keys of every priority; which one to hand out next.

    Args:
        starvation_timeout: As `pyctrl.workqueue.WorkQueue`'s.
        fair: Serve the fairness groups of each priority in turn (`FairLevel`).
    """

    __slots__ = ("_aged_last", "_fair", "_starvation_timeout", "levels", "priorities")

    def __init__(self, starvation_timeout: float | None, *, fair: bool = False) -> None:
        self._starvation_timeout = starvation_timeout
        self._fair = fair
        self.levels: dict[int, Level[K] | FairLevel[K]] = {}
        """The levels holding ready keys, by priority."""
        self.priorities: list[int] = []
        """The priorities of `levels`, ascending."""
        self._aged_last = False

    def push(self, entry: Entry[K]) -> None:
        """Add a key that became ready, at its priority."""
        level = self.levels.get(entry.priority)
        if level is None:
            level = self._level(entry.priority)
        level.push(entry)

    def _level(self, priority: int) -> Level[K] | FairLevel[K]:
        level = self.levels.get(priority)
        if level is None:
            level = self.levels[priority] = FairLevel(priority) if self._fair else Level(priority)
            bisect.insort(self.priorities, priority)
        return level

    def _level_emptied(self, level: Level[K] | FairLevel[K]) -> None:
        # Whatever elements remain are stale: drop the level with them.
        del self.levels[level.priority]
        del self.priorities[bisect.bisect_left(self.priorities, level.priority)]

    def reprioritize(self, entry: Entry[K], priority: int) -> None:
        """Move a ready key up to ``priority``."""
        old = self.levels[entry.priority]
        old.discount(entry)
        if not old.count:
            self._level_emptied(old)
        entry.priority = priority
        self._level(priority).push(entry)

    def pop(self, now: float) -> Entry[K]:
        """Remove and return the key to hand out now; there must be one."""
        level = self.levels[self.priorities[-1]]
        if self._aged_last:
            self._aged_last = False
        elif self._starvation_timeout is not None and len(self.priorities) > 1:
            level = self._starving_level(level, now, self._starvation_timeout)
        entry = level.pop()
        if not level.count:
            self._level_emptied(level)
        return entry

    def _starving_level(
        self, top: Level[K] | FairLevel[K], now: float, timeout: float
    ) -> Level[K] | FairLevel[K]:
        """The level to serve this turn: ``top``, unless a lower one holds a starving key.

        A starving key is the oldest ready key, below the top priority, ready for at
        least ``timeout`` seconds. It is served every other turn.
        """
        oldest = top
        oldest_head = top.head()
        for priority in self.priorities[:-1]:
            level = self.levels[priority]
            head = level.head()
            if (head.due, head.order) < (oldest_head.due, oldest_head.order):
                oldest, oldest_head = level, head
        if oldest is not top and now - oldest_head.due >= timeout:
            self._aged_last = True
            return oldest
        return top

    def clear(self) -> None:
        """Drop every level (the entries are marked gone by the caller)."""
        self.levels.clear()
        self.priorities.clear()
