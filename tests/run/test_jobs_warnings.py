"""-j N says a run's warnings as one process says them, in the same order
and on every run: each worker tags a warning with the block it was at, and
the parent merges by that (which worker took a block varies from run to
run; the order does not)."""
import pytest

import perfdata.views.script as script_view
from conftest import run_cli
from perfdata.format.constants import MISC_USER, RecordType as RT, SampleType as ST
from perfdata.run import sharded
from synth import Builder
from test_reader_synthetic import make_attr

DAMAGED_AT = (5, 13, 22, 30, 37)


def _damaged_file(tmp_path):
    """40 samples, those at DAMAGED_AT each a callchain claiming more
    entries than its record holds: each is skipped with a warning naming
    its own offset."""
    st = ST.IP | ST.TID | ST.TIME | ST.CALLCHAIN
    a = make_attr(st, [], type=1, config=0, sample_period=4000)
    b = Builder(True)
    recs = []
    for i in range(40):
        if i in DAMAGED_AT:
            recs.append(b.record(RT.SAMPLE, b.u64s(0x401000, 5 | 5 << 32, 1000 + i, 1000,
                                                   0x401000)))
        else:
            recs.append(b.sample(a, {"ip": 0x401000, "pid": 5, "tid": 5, "time": 1000 + i,
                                     "callchain": {"nr": 1, "ips": [0x401000]}}, MISC_USER))
    path = tmp_path / "damaged.data"
    path.write_bytes(b.file([a], recs))
    return path


@pytest.mark.parametrize("command", ["script", "collapse", "report"])
def test_warnings_in_one_process_order(tmp_path, monkeypatch, command):
    path = _damaged_file(tmp_path)
    # blocks of 4 samples: the damaged ones fall in blocks 1, 3, 5, 7, 9
    monkeypatch.setattr(script_view, "SHARD_BLOCK", 4)
    for module in ("collapse", "report"):
        monkeypatch.setattr("perfdata.views.%s.SHARD_BLOCK" % module, 4, raising=False)
    rc1, out1, err1 = run_cli([command, str(path), "-j", "1"])
    skipped = [line for line in err1.splitlines() if "sample skipped" in line]
    assert rc1 == 0 and len(skipped) == len(DAMAGED_AT), err1
    for jobs in (2, 3, 2, 3):
        assert run_cli([command, str(path), "-j", str(jobs)]) == (rc1, out1, err1)


def test_merged_warnings_take_each_at_its_first_block():
    worker0 = [(0, -1, "file"), (1, 4, "libx missing"), (1, 0, "liby missing")]
    worker1 = [(0, -1, "file"), (1, 1, "libx missing"), (1, 2, "libz missing")]
    # the file's first, then the symbolizer's by the block each was first said in
    assert sharded.merged_warnings([worker0, worker1]) == [
        "file", "liby missing", "libx missing", "libz missing"]


def test_worker_warnings_by_the_block_reached(monkeypatch):
    class Samples:
        class symbolizer:
            warnings = []
    class File:
        warnings = []
    monkeypatch.setattr(sharded, "_claimed", None)
    sharded.watch_warnings(File, Samples)
    shard = sharded.ClaimedShard(4, 2, 0)
    File.warnings.append("before")
    shard.takes(0)
    Samples.symbolizer.warnings.append("in 0")
    shard.takes(1)
    shard.takes(2)
    File.warnings.append("in 2")
    Samples.symbolizer.warnings.append("in 2 too")
    try:
        assert sharded.worker_warnings(File, Samples) == [
            (0, -1, "before"), (0, 2, "in 2"), (1, 0, "in 0"), (1, 2, "in 2 too")]
    finally:
        sharded.watch_warnings(File, Samples)
        sharded._watched.clear()
