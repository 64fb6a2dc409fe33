"""Time order as perf delivers it (tools/perf/util/ordered-events.c).

perf queues every timed kernel record, and at each FINISHED_ROUND delivers
the queued records whose time is at or below the highest time seen at the
*previous* round; the rest waits for the next round or the end.  Records with
no time (0 or all ones) and perf's own records are delivered on arrival.
Equal times keep their arrival order.  Memory is one round of records.
"""
from __future__ import annotations

from bisect import bisect_right
from operator import itemgetter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .decoder import Record

NO_TIME = (0, (1 << 64) - 1, None)
_TIME = itemgetter(0)


class OrderedQueue:
    """Records of a round kept in arrival order and sorted once at the flush:
    they mostly arrive in time order already, which Timsort takes in linear
    time (a heap would pay log n twice per record)."""

    def __init__(self) -> None:
        self._items: list[tuple[int, Record]] = []     # (time, item), in arrival order
        self._sorted = True
        self._last: int | None = None   # time of the last item in _items
        self.next_flush = 0
        self.max_timestamp = 0
        self.last_flush = 0
        self.out_of_order = 0

    def __len__(self) -> int:
        return len(self._items)

    def push(self, time: int, item: Record) -> None:
        items = self._items
        if time < self.last_flush:
            self.out_of_order += 1
        # perf sets max_timestamp when an event goes to the tail of its queue
        # (queue_event()), so after a round emptied the queue it can go down.
        if time >= self.max_timestamp or not items:
            self.max_timestamp = time
        # (_last is a time whenever items is not empty)
        if items and time < self._last:  # type: ignore[operator]
            self._sorted = False
        self._last = time
        items.append((time, item))

    def _release(self, limit: int | None) -> list[Record]:
        """The queued items up to `limit` (None: all), in order, as a list:
        one slice per round instead of a generator step per item."""
        items = self._items
        if not self._sorted:
            items.sort(key=_TIME)   # stable: equal times keep arrival order
            self._sorted = True
            self._last = items[-1][0]
        cut = len(items) if limit is None else bisect_right(items, limit, key=_TIME)
        if not cut:
            return []
        self.last_flush = items[cut - 1][0]
        out = [entry[1] for entry in items[:cut]]
        del items[:cut]
        return out

    def flush_round(self) -> list[Record]:
        """What FINISHED_ROUND releases."""
        out = self._release(self.next_flush)
        self.next_flush = self.max_timestamp
        return out

    def flush_all(self) -> list[Record]:
        return self._release(None)
