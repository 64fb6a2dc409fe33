"""A histogram entry (one row of the table) and an event's histogram, as a
worker hands them over and the merge adds them up."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...format import EventAttr
    from ...session.threads import Thread


class ThreadByComm:
    """The pickling of an entry a worker hands over (a report's, a diff's):
    its slots, its thread by the comm alone (a Thread holds the session)."""
    __slots__ = ()
    thread: Thread | ThreadComm | None

    def __getstate__(self) -> dict[str, Any]:
        slots: tuple[str, ...] = self.__slots__     # (the subclass's)
        state = {k: getattr(self, k) for k in slots}
        state["thread"] = ThreadComm(thread_comm(self.thread))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)


class Entry(ThreadByComm):
    """One row of an event's table: the samples of one key (comm, dso,
    symbol, ...), their periods added up."""
    __slots__ = ("key", "level", "self_period", "children", "samples", "unresolved", "thread",
                 "first")

    def __init__(self, key: tuple[Any, ...], level: str, unresolved: bool,
                 thread: Thread | ThreadComm | None = None, first: int = 0) -> None:
        self.key = key
        self.level = level
        self.self_period = 0
        self.children = 0
        self.samples = 0
        self.unresolved = unresolved
        self.thread = thread        # of the sample that made the entry (perf's he->thread)
        self.first = first          # that sample's place in the file (sharded runs)

    def merge(self, other: Entry) -> None:
        """Add another worker's entry of the same key; the level and thread
        are those of the entry made first, as in one process."""
        self.self_period += other.self_period
        self.children += other.children
        self.samples += other.samples
        if other.first < self.first:
            self.level, self.unresolved, self.thread, self.first = \
                other.level, other.unresolved, other.thread, other.first


class ThreadComm:
    """A thread as the table prints it, from a worker (its last comm)."""
    __slots__ = ("comm",)

    def __init__(self, comm: str) -> None:
        self.comm = comm

    def __getstate__(self) -> str:
        return self.comm

    def __setstate__(self, comm: str) -> None:
        self.comm = comm


class EventHistogram:
    """One event's entries, by key, and the totals the percentages are of."""

    def __init__(self, event: EventAttr) -> None:
        self.event = event
        self.entries: dict[tuple[Any, ...], Entry] = {}
        self.total_period = 0
        self.samples = 0

    def merge(self, other: EventHistogram) -> None:
        """Add another worker's histogram of the same event; the entries stay
        in the order they were first made (ties in the table keep it)."""
        self.total_period += other.total_period
        self.samples += other.samples
        entries = self.entries
        for key, theirs in other.entries.items():
            mine = entries.get(key)
            if mine is None:
                entries[key] = theirs
            else:
                mine.merge(theirs)
        self.entries = dict(sorted(entries.items(), key=lambda item: item[1].first))


def thread_comm(thread: Thread | ThreadComm | None) -> str:
    """The comm an entry shows: its thread's last one."""
    return thread.comm if thread is not None else ""

