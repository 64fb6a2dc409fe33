"""Recovery from a corrupt record in PIPE-mode input (`perf record -o -`).

The same corruptions as tests/format/test_recovery.py (file mode), one record at a
time, read both from the file path and through a real pipe (an os.pipe()
read end, and `cli stats -` fed on stdin).  The reader cannot seek in a
pipe: resync scans a bounded look-ahead window in the source's buffer and
only goes forward; memory stays bounded by that window whatever the stream
holds.  A damaged HEADER_TRACING_DATA payload size cannot be resynced (the
payload is skipped by that size): the read stops with CorruptError.

Run as a script for the pipe-mode recovery figures:
    python3 tests/format/test_recovery_pipe.py
"""
import collections
import os
import random
import re
import struct
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest

if __name__ == "__main__":
    # Run as a script, tests/format/ is first on sys.path but this checkout
    # and tests/ (conftest) are not (under pytest, pyproject.toml's pythonpath
    # puts them there).
    sys.path[1:1] = [str(Path(__file__).resolve().parents[n]) for n in (2, 1)]
import perfdata                                                 # noqa: E402
from perfdata.format.constants import RecordType as RT
from perfdata.format.errors import CorruptError, PerfDataError

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
SAMPLES = REPO / "samples"

from conftest import corpus_dir                                 # noqa: E402
from limits import time_limit                                   # noqa: E402
from test_recovery import CORRUPTIONS, corrupt, top_records, walk   # noqa: E402

BUNDLED = [SAMPLES / "pipe.data", SAMPLES / "cpp_inline.fp.pipe.data"]
MiB = 1 << 20


def _is_pipe(path):
    try:
        with perfdata.open(str(path)) as pf:
            return pf.is_pipe
    except PerfDataError:
        return False


def pipe_files():
    """The bundled pipe recordings, then the corpus files in pipe mode."""
    files = [p for p in BUNDLED if p.is_file()]
    corpus = corpus_dir()
    sub = corpus / "perfdata" if (corpus / "perfdata").is_dir() else corpus
    if sub.is_dir():
        files += sorted(p for p in sub.iterdir() if p.is_file() and
                        not p.name.startswith("quipper-fuzz") and _is_pipe(p))
    return files


def walk_pipe(data, strict=False):
    """walk() through a real pipe: a thread writes `data` into an os.pipe()
    whose read end perfdata.open() reads (not seekable)."""
    r, w = os.pipe()

    def feed():
        with os.fdopen(w, "wb") as f:
            try:
                f.write(data)
            except BrokenPipeError:
                pass
    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    got = collections.Counter()
    pf = error = None
    with os.fdopen(r, "rb", buffering=0) as f:
        try:
            pf = perfdata.open(f, strict=strict)
            assert not pf._main_source().seekable
            for rec in pf.records(order="file"):
                got[(rec.offset, rec.type, rec.size)] += 1
        except PerfDataError as exc:
            error = exc
    writer.join(10)
    return got, pf, error


def walk_damaged(data, how, tmp_dir):
    """walk() of a damaged stream read from a file ('file') or a pipe."""
    if how == "file":
        target = Path(tmp_dir) / "damaged.pipe.data"
        target.write_bytes(data)
        return walk(target)
    return walk_pipe(data)


def _names_damage(pf, offset):
    """A warning naming the damaged range that starts at `offset`."""
    text = "offset %#x: " % offset
    return any(text in w and ("corrupt record" in w or "ends inside" in w)
               for w in pf.warnings)


def _victims(recs, rng, count):
    """Records to damage: not the first (the attr every record needs) and not
    HEADER_TRACING_DATA (its payload size cannot be resynced: see below)."""
    pool = [r for r in recs[1:] if r[1] != RT.HEADER_TRACING_DATA]
    return [pool[rng.randrange(len(pool))] for _ in range(count)]


# ------------------------------------------------------ one record, exactly
@pytest.fixture(scope="module", params=[p.name for p in BUNDLED])
def bundled(request):
    path = SAMPLES / request.param
    if not path.is_file():
        pytest.skip("%s missing" % path)
    recs, little = top_records(path)
    return path, path.read_bytes(), recs, little


@pytest.mark.parametrize("how", ("file", "pipe"))
@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_one_corrupt_record_costs_one_record(bundled, kind, how, tmp_path):
    path, data, recs, little = bundled
    intact = collections.Counter(recs)
    for victim in (recs[len(recs) // 2], recs[len(recs) // 3]):
        damaged = corrupt(data, little, victim, kind, len(data))
        got, pf, error = walk_damaged(damaged, how, tmp_path)
        assert error is None, (kind, victim, error)
        assert pf.is_pipe
        lost = intact - got
        assert list(lost) == [victim], (kind, sorted(lost)[:5])
        assert not got - intact, sorted(got - intact)[:5]
        skipped = [w for w in pf.warnings if "corrupt record" in w]
        assert len(skipped) == 1, pf.warnings
        assert re.search(r"offset %#x: skipped %d bytes \(corrupt record\)$"
                         % (victim[0], victim[2]), skipped[0]), skipped[0]
        assert pf.skipped[0][1:3] == victim[0:3:2]


def test_strict_still_stops_in_pipe_mode(bundled, tmp_path):
    path, data, recs, little = bundled
    victim = recs[len(recs) // 2]
    damaged = corrupt(data, little, victim, "size_below_header", len(data))
    got, pf, error = walk_pipe(damaged, strict=True)
    assert isinstance(error, CorruptError)
    assert error.offset == victim[0]
    assert sum(got.values()) < len(recs)


def _cli_stdin(args, data):
    return subprocess.run([sys.executable, "-c", "import sys, cli; sys.exit(cli.main())"]
                          + args, input=data, capture_output=True, cwd=str(REPO), timeout=120)


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_cli_stats_from_stdin(bundled, kind):
    """`stats -` on a damaged stream: exit 0, the damaged range named, no
    traceback; with --strict the old exit 2 (still no traceback)."""
    path, data, recs, little = bundled
    victim = recs[len(recs) // 2]
    damaged = corrupt(data, little, victim, kind, len(data))
    proc = _cli_stdin(["stats", "-"], damaged)
    err = proc.stderr.decode()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "internal error" not in err.lower(), err
    assert "perfdata: warning: <stdin>: offset %#x: skipped %d bytes (corrupt record)" % (
        victim[0], victim[2]) in err, err
    last = proc.stdout.decode().strip().splitlines()[-1]
    assert last == "skipped %d bytes of corrupt records: %d at %#x" % (
        victim[2], victim[2], victim[0]), last
    if kind == CORRUPTIONS[0]:
        proc = _cli_stdin(["--strict", "stats", "-"], damaged)
        err = proc.stderr.decode()
        assert proc.returncode == 2, err
        assert "Traceback" not in err, err


# ----------------------------------------------------- HEADER_TRACING_DATA
def _with_tracing_data(data, little, payload):
    """samples/pipe.data with a HEADER_TRACING_DATA record (perf's layout: a
    12-byte record, the payload after it) inserted after the first record."""
    u = "<" if little else ">"
    first = struct.unpack_from(u + "H", data, 16 + 6)[0]
    at = 16 + first
    rec = struct.pack(u + "IHHI", RT.HEADER_TRACING_DATA, 0, 12, len(payload))
    return data[:at] + rec + payload + data[at:], at


def test_damaged_tracing_data_size_stops_with_the_error(tmp_path):
    path = SAMPLES / "pipe.data"
    if not path.is_file():
        pytest.skip("samples/pipe.data missing")
    recs, little = top_records(path)
    payload = b"\x17\x08\x44tracing0.6\0" + bytes(range(256)) * 8
    good, at = _with_tracing_data(path.read_bytes(), little, payload)
    got, pf, error = walk_pipe(good)
    assert error is None and pf.tracing_data == payload
    n_good = sum(got.values())
    u = "<" if little else ">"
    for delta in (8, -8, 4096):
        bad = bytearray(good)
        struct.pack_into(u + "I", bad, at + 8, len(payload) + delta)
        for how in ("file", "pipe"):
            if how == "file":
                target = tmp_path / "tracing.pipe.data"
                target.write_bytes(bytes(bad))
                got, pf, error = walk(target)
            else:
                got, pf, error = walk_pipe(bytes(bad))
            assert isinstance(error, CorruptError), (delta, how, error)
            assert (RT.HEADER_TRACING_DATA, 12) in [(k[1], k[2]) for k in got]
            assert sum(got.values()) < n_good
    proc = _cli_stdin(["stats", "-"], bytes(bad))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr.decode()


# ------------------------------------------------------------------ the rate
def pipe_recovery_rate(files, per_kind=1, seed=1, ways=("file", "pipe"), tmp_dir=None):
    """Damage one record at a time (each kind, per_kind random records) in
    each pipe file, read it each way; figures split by whether the file has
    COMPRESSED records (a damaged one costs its zstd frame)."""
    import tempfile
    rng = random.Random(seed)
    tmp_dir = Path(tmp_dir or tempfile.mkdtemp(prefix="perfdata-pipe-recovery-"))
    figures = {flag: {"files": 0, "trials": 0, "errors": 0, "unnamed": 0, "lost": 0,
                      "delivered": 0, "expected": 0, "cases": []}
               for flag in (False, True)}
    for path in files:
        try:
            recs, little = top_records(path)
            intact, pf, err = walk(path)
        except PerfDataError:
            continue
        if err is not None or not pf.is_pipe or len(recs) < 20:
            continue
        flag = any(r[1] in (RT.COMPRESSED, RT.COMPRESSED2) for r in recs)
        fig = figures[flag]
        fig["files"] += 1
        data = path.read_bytes()
        n_intact = sum(intact.values())
        for kind in CORRUPTIONS:
            for victim in _victims(recs, rng, per_kind):
                damaged = corrupt(data, little, victim, kind, len(data))
                for how in ways:
                    got, pf2, error = walk_damaged(damaged, how, tmp_dir)
                    lost = sum((intact - got).values())
                    fig["trials"] += 1
                    fig["lost"] += lost
                    fig["delivered"] += n_intact - lost
                    fig["expected"] += n_intact
                    if error is not None:
                        fig["errors"] += 1
                        fig["cases"].append((path.name, how, kind, victim, str(error)[-160:]))
                    elif lost and not _names_damage(pf2, victim[0]):
                        fig["unnamed"] += 1
                        fig["cases"].append((path.name, how, kind, victim, pf2.warnings[-3:]))
    for fig in figures.values():
        fig["mean_records_lost"] = fig["lost"] / fig["trials"] if fig["trials"] else 0.0
        fig["rate_measured"] = fig["delivered"] / fig["expected"] if fig["expected"] else 1.0
        fig["rate_1_in_1000"] = 1 - fig["mean_records_lost"] / 1000.0
    return figures


@pytest.fixture(scope="module")
def rate_figures(tmp_path_factory):
    files = pipe_files()
    return pipe_recovery_rate(files, per_kind=1, tmp_dir=tmp_path_factory.mktemp("rate"))


def test_pipe_recovery_rate(rate_figures):
    """Uncompressed pipe files: >= 99% of the records delivered with one
    record in a thousand damaged, through a pipe and from the path alike; no
    error, the damaged range named whenever a record is lost."""
    fig = rate_figures[False]
    if fig["trials"] == 0:
        pytest.skip("no pipe file to damage")
    assert fig["errors"] == 0, fig["cases"]
    assert fig["unnamed"] == 0, fig["cases"]
    assert fig["rate_1_in_1000"] >= 0.99, fig
    assert fig["mean_records_lost"] <= 3, fig


def test_pipe_recovery_compressed(rate_figures):
    """zstd pipe files (corpus): a damaged COMPRESSED record costs its zstd
    frame, never the whole stream, and never an error."""
    fig = rate_figures[True]
    if fig["trials"] == 0:
        pytest.skip("no compressed pipe file in the corpus")
    assert fig["errors"] == 0, fig["cases"]
    assert fig["rate_measured"] >= 0.9, fig


# ------------------------------------------------------------ bounded memory
def test_garbage_stream_memory_and_time_bounded():
    """200 MiB of garbage after a valid pipe header: the reader holds a few
    MiB at most (the resync window), skips it all with one warning, and ends
    in bounded time."""
    header = (SAMPLES / "pipe.data").read_bytes()[:16] if BUNDLED[0].is_file() else \
        b"PERFILE2" + struct.pack("<Q", 16)
    block = random.Random(3).randbytes(MiB)
    total = 200
    r, w = os.pipe()

    def feed():
        with os.fdopen(w, "wb") as f:
            try:
                f.write(header)
                for _ in range(total):
                    f.write(block)
            except BrokenPipeError:
                pass
    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    tracemalloc.start()
    try:
        with time_limit(120, what="garbage stream"):
            with os.fdopen(r, "rb", buffering=0) as f:
                pf = perfdata.open(f)
                n = sum(1 for _ in pf.records(order="file"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    writer.join(10)
    assert n == 0
    assert peak < 8 * MiB, "peak %.1f MiB" % (peak / MiB)
    assert pf.skipped == [(pf.path, 16, total * MiB, pf.skipped[0][3])]


def test_garbage_between_records_of_a_stream():
    """5 MiB of garbage in the middle of a real stream: skipped, every record
    after it delivered, memory bounded by the window."""
    path = SAMPLES / "pipe.data"
    if not path.is_file():
        pytest.skip("samples/pipe.data missing")
    recs, little = top_records(path)
    data = path.read_bytes()
    cut = recs[len(recs) // 2][0]
    size = 5 * MiB
    stream = data[:cut] + random.Random(5).randbytes(size) + data[cut:]
    tracemalloc.start()             # after the test's own 5 MiB
    try:
        got, pf, error = walk_pipe(stream)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error is None
    want = collections.Counter((o if o < cut else o + size, t, s) for o, t, s in recs)
    assert got == want
    assert pf.skipped[0][1:3] == (cut, size)
    assert peak < 8 * MiB, "peak %.1f MiB" % (peak / MiB)


if __name__ == "__main__":
    figs = pipe_recovery_rate(pipe_files(), per_kind=3)
    for flag, fig in figs.items():
        cases = fig.pop("cases")
        print("compressed" if flag else "uncompressed", fig)
        for case in cases[:8]:
            print("   ", case)
