"""Bad input: truncation at every record boundary, random corruption, hostile
sizes (callchain nr 2**60, STACK_USER size 2**62, a zstd bomb), and things that
are not perf.data files.  The reader must end with exit 0 or 2, never a
traceback, a hang or a memory blow-up, and name the file and offset."""
import os
import random
import re
import resource
import subprocess
import sys
import threading

import pytest
import zstandard

import perfdata
from perfdata.format.constants import RecordType as RT, SampleType as ST
from perfdata.format.errors import PerfDataError

from conftest import REPO, need, run_cli
from synth import Builder
from test_reader_synthetic import everything, make_attr, sample_value
from limits import time_limit


def walk(path):
    """(records as (type, offset, end) in file order, error or None, warnings).
    end is where the top-level record ends: for a record inside a COMPRESSED
    record (which has the offset of its container), the container's end."""
    recs, error = [], None
    try:
        pf = perfdata.open(str(path))
        end = 0
        for rec in pf.records(order="file", include_compressed=True):
            if not rec.compressed:
                end = rec.offset + rec.size
            recs.append((rec.type, rec.offset, end))
        warnings = pf.warnings
    except PerfDataError as exc:
        error = exc
        warnings = []
    return recs, error, warnings


def check_cli(path, commands=(("stats",),)):
    for command in commands:
        with time_limit(20):
            rc, out, err = run_cli(list(command) + [str(path)])
        assert rc in (0, 2), (command, rc, err)
        assert "Traceback" not in err
        if rc == 2:
            line = err.strip().splitlines()[-1]
            assert line.startswith("perfdata: error: %s" % path), line
        yield rc, out, err


# ------------------------------------------------------------- truncation
def _truncation_cases(data, records):
    """Cut offsets: every record boundary and a few bytes inside each record."""
    cuts = set()
    for _, offset, size in records:
        cuts.add(offset)
        for inside in (1, 7, size // 2, size - 1):
            if 0 < inside < size:
                cuts.add(offset + inside)
    return sorted(c for c in cuts if c < len(data))


def check_truncations(path, tmp_path, every_inside=1):
    data = path.read_bytes()
    full, error, _ = walk(path)
    assert error is None and full
    # Records at the top level only (those inside COMPRESSED share its offset).
    top = []
    for rtype, offset, end in full:
        if not top or offset != top[-1][1]:
            top.append((rtype, offset, end - offset))
    cuts = _truncation_cases(data, top)
    cut_file = tmp_path / "cut.data"
    for n, cut in enumerate(cuts):
        at_boundary = any(cut == offset for _, offset, _ in top)
        if not at_boundary and n % every_inside:
            continue
        cut_file.write_bytes(data[:cut])
        with time_limit(10):
            got, error, warnings = walk(cut_file)
        complete = [r for r in full if r[2] <= cut]
        # every complete record before the cut is delivered, nothing after it
        assert got[:len(complete)] == complete, cut
        assert all(r[1] < cut for r in got), cut
        if error is not None:
            assert error.path == str(cut_file) and error.offset is not None, error
        elif cut > top[0][1] and not at_boundary:
            # a record cut in the middle is reported with its offset
            cut_rec = [r for r in top if r[1] < cut < r[1] + r[2]][0]
            assert any("offset %#x" % cut_rec[1] in w for w in warnings), (cut, warnings)
        if n % 5 == 0:
            list(check_cli(cut_file))


def test_truncation_recorded_file(recorded, tmp_path):
    check_truncations(need(recorded, "plain"), tmp_path, every_inside=2)


def test_truncation_recorded_pipe(recorded, tmp_path):
    check_truncations(need(recorded, "pipe"), tmp_path, every_inside=3)


def test_truncation_recorded_zstd(recorded, tmp_path):
    check_truncations(need(recorded, "zstd"), tmp_path, every_inside=3)


@pytest.mark.parametrize("little", [True, False], ids=["le", "be"])
def test_truncation_synthetic_every_record_type(little, tmp_path):
    path = tmp_path / "all.data"
    path.write_bytes(everything(little)[0])
    check_truncations(path, tmp_path)


def test_truncated_header(tmp_path):
    b = Builder()
    a = make_attr(ST.IP | ST.TID | ST.TIME, [1])
    data = b.file([a], [b.sample(a, sample_value(a, i)) for i in range(3)])
    path = tmp_path / "h.data"
    for cut in (0, 3, 8, 15, 16, 50, 103, 104, 150):
        path.write_bytes(data[:cut])
        for rc, out, err in check_cli(path, (("stats",), ("header",), ("dump",))):
            if cut < 104:
                assert rc == 2


# ------------------------------------------------------------- corruption
def _corpus_for_fuzz(recorded_files):
    files = [("synthetic-le", everything(True)[0]), ("synthetic-be", everything(False)[0])]
    for name in ("plain", "pipe", "zstd"):
        if name in recorded_files:
            data = recorded_files[name].read_bytes()
            if len(data) < 200_000:
                files.append((name, data))
    return files


def test_random_corruption(request, tmp_path):
    try:
        recorded = request.getfixturevalue("recorded")
    except pytest.skip.Exception:
        recorded = {}           # no perf here: the synthetic files only
    rnd = random.Random(20261129)
    path = tmp_path / "fuzz.data"
    seen_errors = 0
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for name, data in _corpus_for_fuzz(recorded):
        for variant in range(80):
            buf = bytearray(data)
            for _ in range(rnd.randint(1, 8)):
                pos = rnd.randrange(len(buf))
                if rnd.random() < 0.5:
                    buf[pos] = rnd.randrange(256)
                else:        # flip a high byte of a size/count field
                    buf[pos] ^= 0xff
            path.write_bytes(bytes(buf))
            commands = (("stats",), ("dump", "--json")) if variant % 4 == 0 else (("stats",),)
            for rc, out, err in check_cli(path, commands):
                seen_errors += rc == 2
            # walking records and parsing each must raise only PerfDataError
            with time_limit(10):
                try:
                    pf = perfdata.open(str(path))
                    for rec in pf.records():
                        try:
                            rec.parse()
                        except PerfDataError:
                            pass
                except PerfDataError:
                    pass
    assert seen_errors > 0        # the corruption did reach the reader
    # no variant made the reader allocate what a corrupt size field claims
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    assert grown_kib < 300 * 1024, grown_kib


# ----------------------------------------------------------- hostile sizes
def run_limited(args, mem_bytes=1 << 30, timeout=30):
    """perfdata CLI in a child with its address space limited to mem_bytes."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    return subprocess.run([sys.executable, "-c", "import sys, cli; sys.exit(cli.main())"]
                          + args, capture_output=True, cwd=str(REPO), timeout=timeout,
                          preexec_fn=limit)


HOSTILE_ST = (ST.IP | ST.TID | ST.TIME | ST.READ | ST.CALLCHAIN | ST.RAW | ST.BRANCH_STACK
              | ST.REGS_USER | ST.STACK_USER | ST.AUX)
# (field, byte width of its count/size, hostile value)
HOSTILE = [("read", 8, 1 << 60), ("callchain", 8, 1 << 60), ("raw", 4, 0xffffffff),
           ("branch_stack", 8, 1 << 60), ("stack_user", 8, 1 << 62), ("aux", 8, 1 << 62)]


def _hostile_file(field, width, value):
    """Three samples; the 2nd has `field`'s count or size (its first member)
    replaced by `value`, at the offset the schema gives for the field."""
    from perfdata.format.constants import ReadFormat as RF
    b = Builder()
    a = make_attr(HOSTILE_ST, [1], read_format=RF.GROUP | RF.ID, sample_regs_user=0x3,
                  sample_stack_user=64)
    schema = a.sample_schema(True)
    values = [sample_value(a, i) for i in range(3)]
    recs = [b.sample(a, v) for v in values]
    names = [sub.name for sub in schema.subcons]
    prefix = type(schema)(*schema.subcons[:names.index(field)])
    offset = 8 + len(prefix.build(values[1]))
    body = bytearray(recs[1])
    body[offset:offset + width] = value.to_bytes(width, "little")
    recs[1] = bytes(body)
    return b.file([a], recs)


@pytest.mark.parametrize("field,width,value", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_counts(field, width, value, tmp_path):
    path = tmp_path / ("%s.data" % field)
    path.write_bytes(_hostile_file(field, width, value))
    for rc, out, err in check_cli(path, (("stats",), ("dump",), ("dump", "--json"))):
        pass
    res = run_limited(["dump", str(path)])
    assert res.returncode in (0, 2), res.stderr[-2000:]
    assert b"Traceback" not in res.stderr and b"MemoryError" not in res.stderr
    pf = perfdata.open(str(path))
    samples = [r for r in pf.records(order="file") if r.type == RT.SAMPLE]
    assert len(samples) == 3
    with pytest.raises(PerfDataError) as info:
        samples[1].parse()
    assert info.value.offset == samples[1].offset
    assert str(value) in str(info.value)       # refused for the hostile count itself
    assert [s.parse()["ip"] for s in (samples[0], samples[2])] == [0x400000, 0x400002]


def _zstd_bomb(pattern, total):
    cctx = zstandard.ZstdCompressor(level=3).compressobj()
    chunk = pattern * ((1 << 20) // len(pattern))
    parts = []
    for _ in range(total // len(chunk)):
        parts.append(cctx.compress(chunk))
    parts.append(cctx.flush())
    return b"".join(parts)


@pytest.mark.parametrize("pattern", ["zeros", "rounds"])
def test_zstd_bomb(pattern, tmp_path):
    """1 GiB of zeros (or 512 MiB of valid 8-byte FINISHED_ROUND records) in one
    COMPRESSED record of a few tens of KiB: a clean error or a skipped record,
    fast, in bounded memory."""
    b = Builder()
    a = make_attr(ST.IP | ST.TID | ST.TIME, [1])
    unit = bytes(8) if pattern == "zeros" else b.record(RT.FINISHED_ROUND, b"")
    # a record holds at most 64 KiB: 1 GiB of zeros, 512 MiB of rounds fit
    bomb = _zstd_bomb(unit, 1 << 30 if pattern == "zeros" else 1 << 29)
    assert len(bomb) < 65_000
    recs = [b.sample(a, sample_value(a, 1)),
            b.record(RT.COMPRESSED, b.body(RT.COMPRESSED, {"data": bomb})),
            b.sample(a, sample_value(a, 2))]
    path = tmp_path / "bomb.data"
    path.write_bytes(b.file([a], recs))
    import time
    t0 = time.monotonic()
    res = run_limited(["stats", str(path)], mem_bytes=1 << 30, timeout=60)
    elapsed = time.monotonic() - t0
    err = res.stderr.decode()
    assert "Traceback" not in err and "MemoryError" not in err
    assert elapsed < 10
    # an error (exit 2), or in file-mode recovery the record skipped with a
    # warning (exit 0): either way naming the file and the COMPRESSED record
    assert res.returncode in (0, 2), err
    where = "perfdata: %s: %s: offset 0x[0-9a-f]+: " % (
        "error" if res.returncode == 2 else "warning", re.escape(str(path)))
    assert re.search(where, err), err
    if res.returncode == 0:
        # the sample after the bomb is still read
        assert re.search(r"SAMPLE events:\s+2\b", res.stdout.decode()), res.stdout


# ------------------------------------------------------- not perf.data
def test_not_perf_data(tmp_path):
    cases = {"empty": b"", "text": b"hello, this is not a perf.data file\n" * 10,
             "elf": open(sys.executable, "rb").read(4096), "short": b"PERFILE2",
             "zeros": bytes(4096)}
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        for rc, out, err in check_cli(path, (("stats",), ("dump",), ("header",),
                                             ("dump", "--json"))):
            assert rc == 2, name
        with pytest.raises(PerfDataError) as info:
            perfdata.open(str(path))
        assert info.value.path == str(path)


def test_directory_without_data(tmp_path):
    d = tmp_path / "perf.data"
    d.mkdir()
    (d / "data.0").write_bytes(b"")
    for rc, out, err in check_cli(d, (("stats",), ("header",))):
        assert rc == 2
    with pytest.raises(PerfDataError):
        perfdata.open(str(d))


def test_missing_file(tmp_path):
    for rc, out, err in check_cli(tmp_path / "nothing.data"):
        assert rc == 2


@pytest.mark.parametrize("content", ["pipe", "garbage", "nothing"])
def test_fifo(content, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    if content == "pipe":
        data = everything(True)[0]
    elif content == "garbage":
        data = b"\x01" * 5000
    else:
        data = b""

    def writer():
        with open(fifo, "wb") as f:
            f.write(data)
    t = threading.Thread(target=writer, daemon=True)
    t.start()
    with time_limit(20):
        rc, out, err = run_cli(["stats", str(fifo)])
    t.join(5)
    assert rc == (0 if content == "pipe" else 2), err
    assert "Traceback" not in err
    if content == "pipe":
        want = run_cli(["stats", _tmp_copy(tmp_path, data)])[1]
        assert out == want
    # a file-mode perf.data through a FIFO is refused cleanly (it needs seeks)


def test_file_mode_through_fifo(tmp_path):
    b = Builder()
    a = make_attr(ST.IP | ST.TID | ST.TIME, [1])
    data = b.file([a], [b.sample(a, sample_value(a, 1))])
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def writer():
        try:
            with open(fifo, "wb") as f:
                f.write(data)
        except BrokenPipeError:
            pass
    t = threading.Thread(target=writer, daemon=True)
    t.start()
    with time_limit(20):
        rc, out, err = run_cli(["stats", str(fifo)])
    t.join(5)
    assert rc == 2 and "Traceback" not in err
    assert err.startswith("perfdata: error: %s: offset 0x0: " % fifo), err


def _tmp_copy(tmp_path, data):
    path = tmp_path / "copy.data"
    path.write_bytes(data)
    return str(path)


def test_truncated_threads_data_file(recorded, tmp_path):
    """perf record --threads: a cut data.N file ends its own stream with a
    warning naming it; the records of the other files are all delivered."""
    import shutil
    src = need(recorded, "threads")
    if not src.is_dir():
        pytest.skip("this perf wrote a single file for --threads")
    full = [(r.file, r.type, r.offset) for r in
            perfdata.open(str(src)).records(order="file")]
    last = max(f for f, _, _ in full)
    victim = src / ("data.%d" % (last - 1))
    if not victim.is_file() or victim.stat().st_size < 64:
        pytest.skip("no data.N file with records")
    data = victim.read_bytes()
    # Cuts inside a record (a cut on a record boundary is a shorter, valid file).
    starts = {off for f, _, off in full if f == last}
    for cut in (1, 9, len(data) // 3, len(data) - 1):
        while cut in starts:
            cut += 3
        dst = tmp_path / ("cut%d.data" % cut)
        shutil.copytree(src, dst)
        (dst / victim.name).write_bytes(data[:cut])
        with time_limit(10):
            pf = perfdata.open(str(dst))
            got = [(r.file, r.type, r.offset) for r in pf.records(order="file")]
        others = [x for x in full if x[0] != last]
        assert [x for x in got if x[0] != last] == others
        assert any(str(dst / victim.name) in w and "offset" in w for w in pf.warnings), \
            pf.warnings
        list(check_cli(dst, (("stats",), ("dump", "--json"))))


def test_cut_file_keeps_a_big_sample_whose_inside_reaches_the_cut(tmp_path):
    """A pipe recording cut one byte into a record, 8 KiB after a 1,080-byte
    SAMPLE (deep callchain; the samples before it ~80 bytes, so it is taken
    for one whose size may be damaged and searched inside): 33 bytes into it
    lie bytes that read as a header of 8,192 bytes, which end exactly at the
    cut.  That chain holds only by reaching the end of the data, while the
    sample's own size leads on to sane records: the sample is delivered and
    the walk goes on from its end, not from inside it (a flaky failure of
    test_truncation_recorded_pipe: 1 recording in 12 had such a cut)."""
    path = REPO / "tests" / "regressions" / "pipe-big-sample.data"
    full, error, _ = walk(path)
    assert error is None and (9, 16260, 17340) in full
    cut = 24485
    cut_file = tmp_path / "cut.data"
    cut_file.write_bytes(path.read_bytes()[:cut])
    got, error, warnings = walk(cut_file)
    complete = [r for r in full if r[2] <= cut]
    assert got[:len(complete)] == complete
    assert not any("skipped" in w for w in warnings), warnings


@pytest.mark.parametrize("command", [["script"], ["collapse"], ["report", "--stdio"]])
def test_refused_option_in_worker_processes_is_one_line(tmp_path, command):
    """-C on a file whose samples carry no cpu is refused as perf refuses it,
    with -j 2 too: the workers meet the refusal and this process says it,
    exit 2, where it was an internal error (exit 1)."""
    b = Builder()
    a = make_attr(ST.IP | ST.TID | ST.TIME, [1])
    path = tmp_path / "nocpu.data"
    path.write_bytes(b.file([a], [b.sample(a, sample_value(a, i)) for i in range(40)]))
    for jobs in ("1", "2"):
        rc, out, err = run_cli(command + [str(path), "-C", "0", "-j", jobs])
        assert rc == 2, (jobs, err)
        assert err.count("\n") == 1 and "does not contain CPU events" in err, (jobs, err)
        assert "internal error" not in err
