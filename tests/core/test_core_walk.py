"""The compiled record walk of `perfdata script` (perfdata/core/walk.py, the
RecordWalk of perfdata/core/_core.c) against PerfFile.records, the
reference: the same records, in the same delivery order (perf's time order,
rounds, records out of order), with the same warnings and skipped bytes, on
every bundled recording, the corpus, recordings whose bytes were damaged
at random, and records out of time order.

The walk's SampleText here hands every sample back (no event has a plan),
so that every record the walk delivers comes out and can be compared; the
text the core makes of them is tests/core/test_core_equality.py's."""
from __future__ import annotations

import functools
import inspect
import random
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest

import perfdata
from perfdata.core import compiled
from perfdata.format import RecordType as RT
from perfdata.session.stream import SessionStream

from conftest import corpus_dir, corpus_perfdata_names, requires_corpus

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
BUNDLED = sorted(p.name for p in SAMPLES.glob("*.data"))
_core = compiled()
requires_core = pytest.mark.skipif(_core is None, reason="the compiled core is not built here")


def _record(rec: Any) -> tuple:
    return (rec.type, rec.misc, rec.size, rec.offset, rec.time, bytes(rec.body),
            None if rec.attr is None else rec.attr.index)


def _applied(rec: Any) -> tuple:
    """What the stream does with a side record it only applies: the fields
    it hands Machine.apply (or the decoder's refusal)."""
    try:
        return ("applied", rec.type, rec.parse(False), rec.misc, rec.time or 0)
    except perfdata.PerfDataError:
        return ("refused", rec.type, rec.offset)


def _recorder(method: Any, rtype: int, out: list) -> Any:
    """A stand-in for a Machine.apply_* method (its signature, which the
    walk reads) that records what it is handed as apply's fields."""
    names = list(inspect.signature(method).parameters)[2:]

    @functools.wraps(method)
    def record(misc: int, at: int, *values: Any) -> None:
        out.append(("applied", rtype, dict(zip(names, values)), misc, at))
    return record


def _walked(path: Path, side_events: tuple[int, ...] = (), with_core: bool = True,
            shard: tuple[int, int, int] | None = None) -> tuple[list, int, list, list]:
    """(records delivered, SAMPLE records counted, warnings, skipped) of the
    compiled walk, which must apply.  The side records it applies to the
    machine itself come as what it handed Machine.apply.  with_core False:
    the walk without a SampleText (every sample delivered by the C); shard
    (block, jobs, index): one worker's samples (the blocks dealt in turn),
    the C asking for each block once, in order."""
    from perfdata.core import walk
    with perfdata.open(str(path)) as pf:
        pf.resolve_event_names()      # (as the stream does first: the reference's too)
        stream = SessionStream(pf, side_events, shard=shard)
        assert walk.why_not(pf, stream) is None
        machine = stream.machine
        out: list = []
        machine.apply = lambda rtype, fields, misc, time: out.append(  # type: ignore[method-assign]
            ("applied", rtype, fields, misc, time))
        for rtype, name in walk._APPLIED_BY_FIELDS.items():
            # (the calls with the fields in the schema's order, the walk's
            # where the method names them: recorded as the dict they stand for)
            setattr(machine, name, _recorder(getattr(machine, name), rtype, out))

        def answer(kind: int, *args: Any) -> None:
            assert kind == _core.NEED_PLAN
            core.set_plan(args[0], None)        # (every sample handed back)

        core = _core.SampleText(machine.thread, answer, machine.kernel_maps, machine.ksymbols,
                                (), (), (1 << 64) - 4096, 127, 0) if with_core else None
        asked: list[int] = []
        if shard is not None:
            # (the stream sets its own as its walk begins)
            stream.block_taken = lambda k: asked.append(k) or k % shard[1] == shard[2]
        ordinals = []
        for rec in walk.RecordDelivery(_core, core, stream):
            assert type(rec) is not list
            if rec.type in walk._APPLIED and rec.type not in side_events:
                out.append(_applied(rec))
                continue
            out.append(_record(rec))
            if rec.type == RT.SAMPLE:
                ordinals.append(stream.ordinal + 1)
        # (the stream's ordinal before each sample: the samples before it)
        assert ordinals == _taken(stream.ordinal, shard)
        if shard is not None:
            blocks = (stream.ordinal + shard[0] - 1) // shard[0]
            assert asked == list(range(blocks))
        return out, stream.ordinal, list(pf.warnings), list(pf.skipped)


def _taken(n: int, shard: tuple[int, int, int] | None) -> list[int]:
    """The ordinals of the samples of n a worker takes (all without a shard)."""
    return [i for i in range(1, n + 1)
            if shard is None or (i - 1) // shard[0] % shard[1] == shard[2]]


def _reference(path: Path, side_events: tuple[int, ...] = (),
               shard: tuple[int, int, int] | None = None) -> tuple[list, int, list, list]:
    """The same of PerfFile.records, filtered to what the walk delivers
    (with shard: the other workers' samples left out)."""
    from perfdata.core.walk import _APPLIED, _READ
    read = _READ | set(side_events) | {RT.SAMPLE}
    with perfdata.open(str(path)) as pf:
        pf.resolve_event_names()
        out = [_applied(rec) if rec.type in _APPLIED and rec.type not in side_events
               else _record(rec) for rec in pf.records("time")
               if rec.type in read or rec.type >= 256]
        n = sum(1 for r in out if r[0] == RT.SAMPLE)
        if shard is not None:
            kept, ordinal = [], 0
            for r in out:
                if r[0] == RT.SAMPLE:
                    ordinal += 1
                    if (ordinal - 1) // shard[0] % shard[1] != shard[2]:
                        continue
                kept.append(r)
            out = kept
        return out, n, list(pf.warnings), list(pf.skipped)


def _assert_same(path: Path, side_events: tuple[int, ...] = ()) -> None:
    got, want = _walked(path, side_events), _reference(path, side_events)
    if got[0] != want[0]:
        at = next((i for i, (a, b) in enumerate(zip(got[0], want[0])) if a != b),
                  min(len(got[0]), len(want[0])))
        pytest.fail("record %d: walk %r, reference %r (%d / %d records)"
                    % (at, got[0][at][:5] if at < len(got[0]) else None,
                       want[0][at][:5] if at < len(want[0]) else None,
                       len(got[0]), len(want[0])))
    assert got[1:] == want[1:]


def _walkable(names: list[str]) -> list[str]:
    return [n for n in names if "pipe" not in n and n != "threads_dir.data"]


@requires_core
@pytest.mark.parametrize("name", _walkable(BUNDLED))
def test_walk_delivers_as_perf_orders(name: str) -> None:
    _assert_same(SAMPLES / name)
    # (the side events a run may ask for: every type delivered)
    _assert_same(SAMPLES / name, tuple(int(t) for t in RT if t < 256))


@pytest.mark.parametrize("little", [True, False])
def test_every_applied_record_handed_to_the_machine_by_its_fields(little: bool) -> None:
    """Each side record the C applies has its Machine.apply_* method, whose
    parameters are its schema's fields in their order (by_fields): a method
    or a schema changed without the other would leave the walk calling
    apply() with a dict of every record, the same state slower, which no
    comparison of what was applied can see."""
    from perfdata.core import walk
    from perfdata.session.machine import Machine
    layouts = walk.side_layouts(little, walk._APPLIED)
    assert set(layouts) == set(walk._APPLIED)
    calls = walk.by_fields(Machine(), layouts)
    assert {rtype: call is not None and call.__name__ for rtype, (*_, call) in calls.items()} \
        == walk._APPLIED_BY_FIELDS


@requires_core
@pytest.mark.parametrize("name", _walkable(BUNDLED))
def test_walk_without_core_and_sharded(name: str) -> None:
    """The walk without a SampleText (a DWARF run's, whose samples the
    Python path makes) delivers every record the reference does; a worker's
    (blocks of 7 dealt to 3, or of 1 to 2) only its blocks' samples, the
    others dropped in C, and every other record all the same."""
    path = SAMPLES / name
    for with_core, shard in ((False, None), (False, (7, 3, 1)), (True, (1, 2, 0))):
        got, want = _walked(path, (), with_core, shard), _reference(path, (), shard)
        assert got[0] == want[0], (with_core, shard)
        assert got[1:] == want[1:]


@requires_core
@requires_corpus
@pytest.mark.parametrize("name", corpus_perfdata_names())
def test_walk_corpus(name: str) -> None:
    from perfdata.core import walk
    path = corpus_dir() / "perfdata" / name
    try:
        with perfdata.open(str(path)) as pf:
            applies = walk.why_not(pf, SessionStream(pf)) is None
    except perfdata.PerfDataError:
        return
    if applies:
        _assert_same(path)


@requires_core
@pytest.mark.parametrize("seed", range(24))
def test_walk_damaged(tmp_path: Path, seed: int) -> None:
    """A recording with bytes of its data section overwritten at random
    (sizes, types, times, ids): the walk hands what its rules do not take
    to the Python walker, and delivers what the reference delivers."""
    rng = random.Random(seed)
    src = SAMPLES / rng.choice(["threads.fp.data", "deep_recursion.fp.data",
                                "exit_atexit.fp.data", "plt_loop.fp.data"])
    path = tmp_path / "damaged.data"
    shutil.copyfile(src, path)
    with perfdata.open(str(path)) as pf:
        start, end = pf.data_range
    assert end is not None
    data = bytearray(path.read_bytes())
    for _ in range(rng.choice([1, 3, 20])):
        at = rng.randrange(start, end - 8)
        data[at:at + 8] = rng.choice([bytes(8), b"\xff" * 8, rng.randbytes(8),
                                      struct.pack("<IHH", rng.choice([3, 4, 7, 9, 10, 68]), 0,
                                                  rng.choice([8, 16, 40, 0xFFF8]))])
    path.write_bytes(bytes(data))
    try:
        _assert_same(path)
    except perfdata.PerfDataError:
        with pytest.raises(perfdata.PerfDataError):
            _reference(path)


@requires_core
def test_walk_out_of_order(tmp_path: Path) -> None:
    """Rounds (every 100th sample made FINISHED_ROUND records) and samples
    whose times go back past a round already delivered: queued, sorted and
    counted out of order as the reference does."""
    src = SAMPLES / "plt_loop.fp.data"
    with perfdata.open(str(src)) as pf:
        samples = [(rec.offset, rec.size, rec.attr.sample_time_offset)
                   for rec in pf.records("file")
                   if rec.type == RT.SAMPLE and rec.attr is not None]
    assert len(samples) > 1000
    data = bytearray(src.read_bytes())
    rounds = struct.pack("<IHH", int(RT.FINISHED_ROUND), 0, 8)
    for offset, size, _ in samples[50::100]:
        data[offset:offset + size] = rounds * (size // 8)
    rng = random.Random(5)
    for offset, size, toff in rng.sample(samples, 300):
        if data[offset:offset + 8] == rounds:
            continue
        at = offset + 8 + toff
        (t,) = struct.unpack_from("<Q", data, at)
        struct.pack_into("<Q", data, at, max(1, t - rng.choice([1, 10**6, 10**8, t])))
    path = tmp_path / "out_of_order.data"
    path.write_bytes(bytes(data))
    _assert_same(path)
    assert any("out of order" in w for w in _walked(path)[2])


@requires_core
@pytest.mark.parametrize("command", [["script"], ["collapse"], ["report"], ["flamegraph"]],
                         ids=" ".join)
def test_runs_take_their_records_from_the_walk(monkeypatch: pytest.MonkeyPatch,
                                               command: list[str]) -> None:
    """One-process runs of the commands the core serves read the records
    through the compiled walk (not vacuous: tests/core/test_core_equality.py
    compares their bytes with the pure path's)."""
    from perfdata.core import walk
    from conftest import SAMPLE_SYMBOL_ARGS, run_cli
    made: list[walk.RecordDelivery] = []
    init = walk.RecordDelivery.__init__

    def watched(self: walk.RecordDelivery, *a: Any) -> None:
        init(self, *a)
        made.append(self)

    monkeypatch.setattr(walk.RecordDelivery, "__init__", watched)
    rc, out, _ = run_cli(command + ["-j", "1", str(SAMPLES / "threads.fp.data")] +
                         SAMPLE_SYMBOL_ARGS)
    assert rc == 0 and out and len(made) == 1


@requires_core
@pytest.mark.parametrize("recording", ["threads.fp.data", "threads.dwarf.data"])
def test_script_workers_take_their_records_from_the_walk(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path,
                                                         recording: str) -> None:
    """`perfdata script`'s runs read the records through the compiled walk
    in one process and in each worker of -j 3, whether the core makes the
    samples' text (-g) or the Python path does (DWARF: the walk has no
    core), and the workers' walks drop the other workers' samples (not
    vacuous: tests/run/test_script_jobs.py compares the bytes with -j 1's)."""
    import os
    from perfdata.core import walk
    from conftest import SAMPLE_SYMBOL_ARGS, run_cli
    said = tmp_path / "walks"
    init = walk.RecordDelivery.__init__

    def watched(self: walk.RecordDelivery, *a: Any) -> None:
        init(self, *a)
        # (a file: the workers are forked processes)
        with open(said, "a") as f:
            f.write("%d %s %s\n" % (os.getpid(), self.core is not None,
                                    self.stream.shard is not None))

    monkeypatch.setattr(walk.RecordDelivery, "__init__", watched)
    with_core = str(recording.endswith(".fp.data"))
    for jobs in (1, 3):
        said.write_text("")
        rc, out, _ = run_cli(["script", "-j", str(jobs), str(SAMPLES / recording)] +
                             SAMPLE_SYMBOL_ARGS)
        walks = [line.split() for line in said.read_text().splitlines()]
        assert rc == 0 and out
        assert len(walks) == jobs and len({pid for pid, _, _ in walks}) == jobs
        assert {(core, sharded) for _, core, sharded in walks} == {(with_core, str(jobs > 1))}
