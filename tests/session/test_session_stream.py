"""SessionStream (perfdata/session/stream.py), the typed events of a recording,
against perf 6.1:

* every bundled recording: the number of samples per event, of COMM/FORK/
  EXIT/MMAP/MMAP2/FINISHED_ROUND... side events and of LOST_SAMPLES against
  its committed `perf report --stats` golden; the MMAP2 build-ids against its
  `perf report -D` golden;
* with perf installed: samples and task/mmap side events in perf script's
  order, each with the thread (comm), tid and time perf prints for it;
* a synthetic recording with a group read (file and pipe mode): one sample
  per member whose counter grew, lost samples, build-ids (MMAP2, pipe-mode
  HEADER_BUILD_ID), the machine as the task records leave it; against what
  was built and against perf;
* the workers of a sharded run together see every sample and side event once;
* a damaged sample is skipped with a warning, or ends a strict run.
"""
import os
import re
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest

import perfdata
from perfdata.format.constants import (STATS_NAMES, Feature, MISC_LOST_SAMPLES_BPF,
                                       MISC_MMAP_BUILD_ID, MISC_USER, ReadFormat as RF,
                                       RecordType as RT, SampleType as ST, record_type_name)
from perfdata.format.errors import PerfDataError
from perfdata.format.features import build_feature
from perfdata.session.stream import BuildId, LostSamples, Sample, SessionStream, SideEvent

from conftest import PERF, requires_perf_tool
from synth import Builder
from test_reader_synthetic import make_attr, mmap2_body

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
EXPECTED = SAMPLES / "expected"
STATS_GOLDENS = sorted(p.name[:-len(".stats.txt")] for p in EXPECTED.glob("*.stats.txt"))
DUMP_GOLDENS = sorted(p.name[:-len(".dump.txt")] for p in EXPECTED.glob("*.dump.txt"))
# Every record type perf report --stats counts that the stream hands out as a
# side event when asked (the others are the reader's: ATTR, ID_INDEX, ...).
SIDE_TYPES = (RT.MMAP, RT.LOST, RT.COMM, RT.EXIT, RT.THROTTLE, RT.UNTHROTTLE, RT.FORK,
              RT.MMAP2, RT.SWITCH, RT.SWITCH_CPU_WIDE, RT.NAMESPACES, RT.KSYMBOL,
              RT.BPF_EVENT, RT.CGROUP, RT.TEXT_POKE, RT.FINISHED_ROUND)
TASK_MMAP = (RT.COMM, RT.FORK, RT.EXIT, RT.MMAP, RT.MMAP2)


def events(path, **options):
    with perfdata.open(str(path)) as pf:
        stream = SessionStream(pf, **options)
        return list(stream), stream


def stats_name(rtype):
    return STATS_NAMES.get(rtype) or record_type_name(rtype)


def perf_stats(text):
    """{section: {name: count}} of `perf report --stats` ('' the aggregated
    section, else the event's name)."""
    sections, current = {}, None
    for line in text.splitlines():
        if line.startswith("Aggregated stats:"):
            current = sections.setdefault("", {})
        elif line.endswith(" stats:"):
            current = sections.setdefault(line[:-len(" stats:")], {})
        else:
            m = re.match(r"^\s*(\S+) events:\s+(\d+)", line)
            if m and current is not None:
                current[m.group(1)] = int(m.group(2))
    return sections


@pytest.mark.parametrize("name", STATS_GOLDENS)
def test_event_counts_as_perf_report_stats(name):
    want = perf_stats((EXPECTED / (name + ".stats.txt")).read_text())
    got, _ = events(SAMPLES / (name + ".data"), side_events=SIDE_TYPES)
    kinds = Counter(type(e) for e in got)
    assert set(kinds) <= {Sample, SideEvent, LostSamples, BuildId}
    assert kinds[Sample] == want[""]["SAMPLE"] > 0      # (no group reads among them)
    assert kinds[LostSamples] == want[""].get("LOST_SAMPLES", 0)
    sides = Counter(stats_name(e.record.type) for e in got if type(e) is SideEvent)
    for rtype in SIDE_TYPES:
        assert sides[stats_name(rtype)] == want[""].get(stats_name(rtype), 0), rtype.name
    per_event = Counter(e.event.name for e in got if type(e) is Sample)
    theirs = {event: counts["SAMPLE"] for event, counts in want.items() if event}
    if ".pipe" in name or name == "pipe":
        # perf report --stats names a pipe's events from their attrs, perf
        # script (and the stream) from the EVENT_DESC records
        assert sorted(per_event.values()) == sorted(theirs.values())
    else:
        assert per_event == theirs


@pytest.mark.parametrize("name", DUMP_GOLDENS)
def test_mmap2_build_ids_as_perf_dump(name):
    """The build-ids of MMAP2 records (perf record --buildid-mmap), as
    `perf report -D` prints them: `@ pgoff <build-id>]: prot path`."""
    dump = (EXPECTED / (name + ".dump.txt")).read_text()
    want = Counter(re.findall(r"PERF_RECORD_MMAP2 .* <([0-9a-f]+)>\]: \S+ (.*)$", dump, re.M))
    got, _ = events(SAMPLES / (name + ".data"))
    assert Counter((e.build_id, e.path) for e in got if type(e) is BuildId) == want
    if name == "buildid_mmap":
        assert len(want) == 3


def _perf(args, home):
    res = subprocess.run([PERF] + args, capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, HOME=str(home)), errors="replace")
    assert res.returncode == 0, res.stderr[-500:]
    return res.stdout


def _seconds(ns):
    return "%d.%09d" % divmod(ns, 10 ** 9)


@requires_perf_tool
@pytest.mark.parametrize("name", ["threads.fp", "exit_atexit.dwarf", "two_events",
                                  "tracepoint", "cpp_inline.fp.pipe"])
def test_order_and_threads_as_perf_script(name, tmp_path):
    """perf script prints a side event with the thread its record concerns
    (comm) and its sample_id's tid and time; an EXIT before it is applied."""
    out = _perf(["script", "-i", str(SAMPLES / (name + ".data")), "-F", "comm,tid,time",
                 "--ns", "-G", "--show-task-events", "--show-mmap-events"], tmp_path)
    want = []
    for line in out.splitlines():
        m = re.match(r"^\s*(.*?)\s+(-?\d+)\s+(\d+\.\d+):\s*(?:PERF_RECORD_([A-Z0-9_]+))?",
                     line)
        assert m, line
        comm, tid, time, kind = m.groups()
        want.append((kind or "SAMPLE", comm, int(tid), time))
    got = []
    with perfdata.open(str(SAMPLES / (name + ".data"))) as pf:
        for e in SessionStream(pf, side_events=TASK_MMAP):
            # (the thread's comm as the event comes: a later COMM changes it)
            if type(e) is Sample:
                got.append(("SAMPLE", e.comm, e.tid, _seconds(e.time)))
            elif type(e) is SideEvent:
                sid = e.fields.get("sample_id") or {}
                got.append((e.record.name, e.thread.comm, sid.get("tid", -1),
                            _seconds(sid.get("time", 0))))
    assert len(want) > 10 and got == want


# ------------------------------------------------------ a synthetic group read
LIBC_BUILD_ID = bytes(range(20))
TRUE_BUILD_ID = bytes(range(100, 120))
# (leader's count, member's count) at each sample: the member's does not grow
# at the second and fourth.
COUNTS = [(4000, 1), (8000, 1), (12000, 3), (16000, 3), (20000, 4)]
LOST, LOST_BY_BPF = 4, 7


def group_recording(pipe):
    """A cpu-clock leader reading {cpu-clock, page-faults}: COMM, MMAP2 of
    /lib/libc.so.6 with a build-id (pid/tid 5 over synth's), 5 samples, LOST_SAMPLES (one of them BPF-dropped), FORK, EXIT;
    pipe mode also a HEADER_BUILD_ID record."""
    st = ST.IP | ST.TID | ST.TIME | ST.ID | ST.CPU | ST.PERIOD | ST.READ
    rf = RF.GROUP | RF.ID
    leader = make_attr(st, [11], type=1, config=0, sample_period=4000, read_format=rf,
                       flags={"sample_id_all": 1, "mmap2": 1, "comm": 1, "task": 1})
    member = make_attr(st, [12], type=1, config=2, read_format=rf,
                       flags={"sample_id_all": 1})
    b = Builder(True)
    sid = dict(pid=5, tid=5, id=11, cpu=0)
    recs = [b.kernel_record(RT.COMM, {"pid": 5, "tid": 5, "comm": "synth\0\0"}, leader,
                            time=900, **sid),
            b.record(RT.MMAP2, struct.pack("<II", 5, 5) + mmap2_body(b, build_id=True)[8:]
                     + b.trailer(leader, time=901, **sid), misc=MISC_USER | MISC_MMAP_BUILD_ID)]
    for n, (lead, mem) in enumerate(COUNTS):
        t = 1000 + 100 * n
        recs.append(b.sample(leader, {
            "ip": 0x7f0000001000 + n, "pid": 5, "tid": 5, "time": t, "id": 11, "cpu": 0,
            "cpu_res": 0, "period": 4000,
            "read": {"nr": 2, "values": [{"value": lead, "id": 11}, {"value": mem, "id": 12}]}},
            misc=MISC_USER))
        if n == 2:
            recs += [b.kernel_record(RT.LOST_SAMPLES, {"lost": LOST}, leader, time=t + 1, **sid),
                     b.kernel_record(RT.LOST_SAMPLES, {"lost": LOST_BY_BPF}, leader,
                                     misc=MISC_LOST_SAMPLES_BPF, time=t + 2, **sid),
                     b.kernel_record(RT.FORK, {"pid": 5, "ppid": 5, "tid": 6, "ptid": 5,
                                               "time": t + 3}, leader, time=t + 3, **sid)]
    recs.append(b.record(RT.FINISHED_ROUND, b""))
    recs.append(b.kernel_record(RT.EXIT, {"pid": 5, "ppid": 5, "tid": 5, "ptid": 5,
                                          "time": 3000}, leader, time=3000, **sid))
    if pipe:
        recs.append(b.record(RT.HEADER_BUILD_ID, b.pad8(b.body(RT.HEADER_BUILD_ID, {
            "pid": -1, "build_id": TRUE_BUILD_ID, "build_id_size": 20, "reserved1": 0,
            "reserved2": 0, "filename": "/bin/true"}))))
        return b.pipe([leader, member], recs)
    return b.file([leader, member], recs,
                  {Feature.HOSTNAME: build_feature(Feature.HOSTNAME, "synth", True)})


def _want_samples():
    """(event, period, time) perf delivers: every member whose count grew."""
    out, last = [], (0, 0)
    for n, counts in enumerate(COUNTS):
        for name, now, before in zip(("cpu-clock", "page-faults"), counts, last):
            if now != before:
                out.append((name, now - before, 1000 + 100 * n))
        last = counts
    return out


@pytest.fixture(params=["file", "pipe"])
def group_file(request, tmp_path):
    path = tmp_path / ("group.%s.data" % request.param)
    path.write_bytes(group_recording(request.param == "pipe"))
    return path, request.param == "pipe"


def test_group_read_lost_build_ids_and_machine(group_file):
    path, pipe = group_file
    got, seen = [], []
    with perfdata.open(str(path)) as pf:
        stream = SessionStream(pf, side_events=TASK_MMAP)
        machine = stream.machine
        for e in stream:
            got.append(e)
            if type(e) is SideEvent:
                # the machine as the event is handed out
                seen.append((e.record.type, e.thread.tid, sorted(machine.threads),
                             e.thread.exited))
    samples = [e for e in got if type(e) is Sample]
    assert [(s.event.name.split(":")[0], s.period, s.time) for s in samples] == \
        _want_samples()
    assert len(samples) == 8 and all(s.thread.comm == "synth" for s in samples)
    # one sample's members share its record, not its fields' dict
    assert samples[0].record is samples[1].record and samples[0].fields is not samples[1].fields
    assert [e.count for e in got if type(e) is LostSamples] == [LOST]
    build_ids = {(e.path, e.build_id) for e in got if type(e) is BuildId}
    assert build_ids == {("/lib/libc.so.6", LIBC_BUILD_ID.hex())} | \
        ({("/bin/true", TRUE_BUILD_ID.hex())} if pipe else set())
    # FORK is handed out after it is applied (its thread is the new one),
    # EXIT before (its thread not yet exited)
    assert seen == [(RT.COMM, 5, [5], None), (RT.MMAP2, 5, [5], None),
                    (RT.FORK, 6, [5, 6], None), (RT.EXIT, 5, [5, 6], None)]
    assert machine.threads[5].exited == 3000 and machine.threads[6].exited is None
    assert machine.threads[6].process is machine.threads[5].process
    libc = machine.find_map(machine.threads[6], 0x7f0000000800, False)
    assert libc is not None and libc.path == "/lib/libc.so.6"


@requires_perf_tool
def test_group_read_and_lost_samples_as_perf(group_file, tmp_path):
    """perf 6.1's deliver_sample_group: no sample of a member whose count did
    not grow; its Total Lost Samples also counts the BPF-dropped ones."""
    path, _ = group_file
    out = _perf(["script", "-i", str(path), "-F", "event,period,time", "--ns"], tmp_path)
    want = []
    for line in out.splitlines():
        time, period, event = re.match(r"^\s*(\d+\.\d+):\s+(\d+)\s+(\S+):", line).groups()
        want.append((event, int(period), time))
    got, _ = events(path)
    assert [(s.event.name, s.period, _seconds(s.time)) for s in got if type(s) is Sample] \
        == want
    report = _perf(["report", "--stdio", "-i", str(path)], tmp_path)
    total = int(re.search(r"^# Total Lost Samples: (\d+)$", report, re.M).group(1))
    assert total == sum(e.count for e in got if type(e) is LostSamples) + LOST_BY_BPF


# ---------------------------------------------------------------- sharding
@pytest.mark.parametrize("name", ["threads.fp", "exit_atexit.fp"])
def test_sharded_streams_together_are_the_whole(name):
    """Three workers on blocks of 7 samples: each sample and side event once,
    in its worker's blocks; every worker's machine follows every record."""
    path = SAMPLES / (name + ".data")

    def key(e):
        return (e.record.offset, e.event.index if type(e) is Sample else -1)

    whole, full = events(path, side_events=TASK_MMAP)
    parts = []
    for index in range(3):
        with perfdata.open(str(path)) as pf:
            stream = SessionStream(pf, side_events=TASK_MMAP, shard=(7, 3, index))
            for e in stream:
                if type(e) is Sample:
                    assert (stream.ordinal - 1) // 7 % 3 == index
                elif type(e) is SideEvent:
                    assert stream.ordinal // 7 % 3 == index
                parts.append(key(e))
            assert stream.ordinal == sum(1 for e in whole if type(e) is Sample)
            assert sorted(stream.machine.threads) == sorted(full.machine.threads)
    shown = [key(e) for e in whole if type(e) in (Sample, SideEvent)]
    assert len(shown) > 100 and sorted(parts) == sorted(shown)


# ------------------------------------------------------------ damaged samples
def test_damaged_sample_skipped_or_strict(tmp_path):
    st = ST.IP | ST.TID | ST.TIME | ST.CALLCHAIN
    a = make_attr(st, [], type=1, config=0, sample_period=4000)
    b = Builder(True)
    good = {"ip": 0x401000, "pid": 5, "tid": 5, "time": 1000,
            "callchain": {"nr": 1, "ips": [0x401000]}}
    # a callchain that claims 1000 entries in a 48-byte body
    bad = b.record(RT.SAMPLE, b.u64s(0x401000, 5 | 5 << 32, 1001, 1000, 0x401000))
    path = tmp_path / "damaged.data"
    path.write_bytes(b.file([a], [b.sample(a, good, MISC_USER), bad,
                                  b.sample(a, dict(good, time=1002), MISC_USER)]))
    with perfdata.open(str(path)) as pf:
        stream = SessionStream(pf)
        got = [e.time for e in stream]
        assert got == [1000, 1002] and stream.samples_skipped == 1
        assert any("(sample skipped)" in w for w in pf.warnings)
    with perfdata.open(str(path)) as pf, pytest.raises(PerfDataError):
        list(SessionStream(pf, strict=True))


# ------------------------------------------------------- pid -1 (u32 all ones)
def gone_task_file():
    """cpu-clock samples of thread 5, then of a task already out of its pid
    namespace (the kernel writes pid = tid = -1: a sample in do_exit after
    exit_notify, seen in perf record -a), then of thread 5 again."""
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.CPU | ST.PERIOD, [], type=1, config=0,
                  sample_period=250000, flags={"sample_id_all": 1})
    b = Builder(True)
    recs = []
    for n, pid in enumerate((5, 0xFFFFFFFF, 5)):
        recs.append(b.sample(a, {"ip": 0x400000 + n, "pid": pid, "tid": pid,
                                 "time": 2_000_000_000 + n * 1000, "cpu": n % 2, "cpu_res": 0,
                                 "period": 250000}, misc=2))
    feats = {Feature.HOSTNAME: build_feature(Feature.HOSTNAME, "synth", True)}
    return b.file([a], recs, feats)


# What perf 6.1 prints for gone_task_file (-F comm,pid,tid,cpu,time,event),
# and its perf report --sort pid rows.
GONE_TASK_SCRIPT = [
    "              :5     5/5     [000]     2.000000: cpu-clock:HG: ",
    "             :-1    -1/-1    [001]     2.000001: cpu-clock:HG: ",
    "              :5     5/5     [000]     2.000002: cpu-clock:HG: ",
]


def test_gone_task_is_thread_minus_one(tmp_path):
    """perf reads a sample's u32 pid and tid as pid_t: thread -1, comm ":-1"."""
    from conftest import run_cli
    path = tmp_path / "gone.data"
    path.write_bytes(gone_task_file())
    with perfdata.open(str(path)) as pf:
        got = [(e.pid, e.tid, e.comm, e.thread.tid) for e in SessionStream(pf)
               if type(e) is Sample]
    assert got == [(5, 5, ":5", 5), (-1, -1, ":-1", -1), (5, 5, ":5", 5)]
    rc, out, err = run_cli(["script", str(path), "-F", "comm,pid,tid,cpu,time,event"])
    assert rc == 0, err
    assert out.splitlines() == GONE_TASK_SCRIPT
    rc, out, err = run_cli(["report", str(path), "--sort", "pid", "-q"])
    assert rc == 0, err
    assert [line.split() for line in out.splitlines() if line.strip()] == [
        ["66.67%", "5::5"], ["33.33%", "-1::-1"]]


@requires_perf_tool
def test_gone_task_as_perf(tmp_path):
    from conftest import run_cli
    path = tmp_path / "gone.data"
    path.write_bytes(gone_task_file())
    for args in (["script", "-F", "comm,pid,tid,cpu,time,event"], ["script"],
                 ["report", "--stdio", "--no-children", "-g", "none", "--sort", "pid",
                  "-q"]):
        res = subprocess.run([PERF] + args[:1] + ["-i", str(path)] + args[1:],
                             capture_output=True, text=True, timeout=60)
        rc, out, err = run_cli(args[:1] + [str(path)] + args[1:])
        assert rc == 0, err
        assert [l.rstrip() for l in out.splitlines() if l.strip()] == \
            [l.rstrip() for l in res.stdout.splitlines() if l.strip()], args
