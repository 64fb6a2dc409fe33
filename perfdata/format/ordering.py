"""Time order as perf delivers it (tools/perf/util/ordered-events.c).

perf queues every timed kernel record, and at each FINISHED_ROUND delivers
the queued records whose time is at or below the highest time seen at the
*previous* round; the rest waits for the next round or the end.  Records with
no time (0 or all ones) and perf's own records are delivered on arrival.
Equal times keep their arrival order.  Memory is one round of records.
"""
import heapq

NO_TIME = (0, (1 << 64) - 1, None)


class OrderedQueue:
    def __init__(self):
        self._heap = []
        self._seq = 0
        self.next_flush = 0
        self.max_timestamp = 0
        self.last_flush = 0
        self.out_of_order = 0

    def __len__(self):
        return len(self._heap)

    def push(self, time, item):
        if time < self.last_flush:
            self.out_of_order += 1
        # perf sets max_timestamp when an event goes to the tail of its queue
        # (queue_event()), so after a round emptied the queue it can go down.
        if time >= self.max_timestamp or not self._heap:
            self.max_timestamp = time
        heapq.heappush(self._heap, (time, self._seq, item))
        self._seq += 1

    def _pop_until(self, limit):
        heap = self._heap
        while heap and heap[0][0] <= limit:
            time, _, item = heapq.heappop(heap)
            self.last_flush = time
            yield item

    def flush_round(self):
        """What FINISHED_ROUND releases."""
        yield from self._pop_until(self.next_flush)
        self.next_flush = self.max_timestamp

    def flush_all(self):
        heap = self._heap
        while heap:
            time, _, item = heapq.heappop(heap)
            self.last_flush = time
            yield item
