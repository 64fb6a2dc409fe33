"""-j's blocks go to the first worker to reach them (sharded.ClaimedShard):
each block is taken by exactly one worker, whatever the order the workers
ask in; the parent prints them in order, and a fault ends the output with
the block it fell in, then is raised."""
import multiprocessing

import pytest

import perfdata
import perfdata.run.sharded as sharded
from perfdata.format.errors import CorruptError
from perfdata.session.stream import Sample, SessionStream, Shard, SideEvent

from conftest import SAMPLES


def test_first_to_ask_takes_the_block(monkeypatch):
    monkeypatch.setattr(sharded, "_claimed", multiprocessing.get_context("fork").Value("q", 0))
    a, b = sharded.ClaimedShard(10, 2, 0), sharded.ClaimedShard(10, 2, 1)
    asks = [(a, 0), (b, 0), (b, 1), (b, 2), (a, 1), (a, 2), (a, 3), (b, 3), (b, 4), (a, 4)]
    assert [shard.takes(k) for shard, k in asks] == \
        [True, False, True, True, False, False, True, False, True, False]


def test_without_a_run_dealt_in_turn(monkeypatch):
    monkeypatch.setattr(sharded, "_claimed", None)
    assert [sharded.ClaimedShard(10, 3, 1).takes(k) for k in range(7)] == \
        [k % 3 == 1 for k in range(7)]


class _Taken(Shard):
    """A shard that takes the blocks of a given set, noting each ask."""
    __slots__ = ()
    chosen: set = set()
    asked: list = []

    def takes(self, k):
        self.asked.append(k)
        return k in self.chosen


def test_stream_asks_each_block_once_in_order(monkeypatch):
    """The stream asks its shard once a block, in order, and hands out the
    samples and side events of the blocks it takes and no others: two
    complementary shares of any shape make the whole."""
    from test_session_stream import TASK_MMAP, events
    path = SAMPLES / "threads.fp.data"
    whole, _ = events(path, side_events=TASK_MMAP)

    def key(e):
        return (e.record.offset, e.event.index if type(e) is Sample else -1)

    mine = {0, 2, 3, 7, 8, 9, 13}
    parts = []
    for chosen in (mine, set(range(10000)) - mine):
        asked = []
        monkeypatch.setattr(_Taken, "asked", asked)
        monkeypatch.setattr(_Taken, "chosen", chosen)
        with perfdata.open(str(path)) as pf:
            stream = SessionStream(pf, side_events=TASK_MMAP, shard=_Taken(7, 2, 0))
            for e in stream:
                if type(e) is Sample:
                    assert (stream.ordinal - 1) // 7 in _Taken.chosen
                elif type(e) is SideEvent:
                    assert stream.ordinal // 7 in _Taken.chosen
                parts.append(key(e))
        assert asked == list(range(len(asked))) and len(asked) >= stream.ordinal // 7
    shown = [key(e) for e in whole if type(e) in (Sample, SideEvent)]
    assert len(shown) > 100 and sorted(parts) == sorted(shown)


BLOCKS = 40


def _produce(fault_at=None):
    """A worker's produce(shard): every worker passes every block in order;
    the blocks it takes give their text (the worker that takes `fault_at`
    gives half of it, then stops with a reader's error); its warnings
    tagged as sharded.worker_warnings tags them."""
    def produce(shard):
        for k in range(BLOCKS):
            if not shard.takes(k):
                continue
            if k == fault_at:
                yield k, "block %d, cut\n" % k
                return (k * shard.block + 3, [(0, k, "w")],
                        sharded.describe_error(CorruptError("bad record", offset=k)))
            yield k, "".join("block %d sample %d\n" % (k, i) for i in range(k % 5 + 1))
        return BLOCKS * shard.block, [(1, 0, "w%d" % (shard.worker % 2))], None
    return produce


@pytest.mark.parametrize("jobs", [2, 3])
def test_blocks_written_in_order(jobs):
    out = []
    warnings = sharded.run_sharded(jobs, 4, _produce(), out.append)
    text = "".join(out)
    assert text == "".join("block %d sample %d\n" % (k, i)
                           for k in range(BLOCKS) for i in range(k % 5 + 1))
    assert sorted(warnings) == ["w0", "w1"]


@pytest.mark.parametrize("jobs", [2, 3])
def test_fault_ends_the_output_with_its_block(jobs):
    out = []
    with pytest.raises(CorruptError) as info:
        sharded.run_sharded(jobs, 4, _produce(fault_at=17), out.append)
    assert "".join(out) == "".join("block %d sample %d\n" % (k, i) for k in range(17)
                                   for i in range(k % 5 + 1)) + "block 17, cut\n"
    assert info.value.offset == 17 and "w" in info.value.warnings
