"""Recovery from a corrupt record in the data section (file mode, the default).

The reader skips the record, resynchronises on the next plausible header
(known type, sane 8-aligned size, event id known to the attrs, and the next
header sane too), warns `FILE: offset 0x..: skipped N bytes (corrupt
record)`, and goes on; `strict=True` keeps the old stop at the first corrupt
record.  A truncated file delivers every complete record before the cut.

Run as a script for the recovery rate over every sample and corpus file:
    python3 tests/format/test_recovery.py
"""
import collections
import random
import re
import shutil
import struct
import sys
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

from conftest import corpus_dir, run_cli           # noqa: E402

PLT = SAMPLES / "plt_loop.fp.data"
ZSTD = SAMPLES / "zstd.data"


def walk(path, strict=False):
    """(Counter of (offset, type, size) of every record delivered, the
    PerfFile, the error or None)."""
    pf = perfdata.open(str(path), strict=strict)
    got = collections.Counter()
    error = None
    try:
        for rec in pf.records(order="file"):
            got[(rec.offset, rec.type, rec.size)] += 1
    except PerfDataError as exc:
        error = exc
    return got, pf, error


def top_records(path):
    """(offset, type, size) of the top-level records of an intact file, and its byte order."""
    pf = perfdata.open(str(path))
    recs = [(r.offset, r.type, r.size)
            for r in pf.records(order="file", include_compressed=True) if not r.compressed]
    return recs, pf.little


CORRUPTIONS = ("size_below_header", "size_past_end", "impossible_type", "zero_header",
               "size_too_large", "body_too_short")


def corrupt(data, little, rec, kind, data_end):
    """The file with one record damaged."""
    u = "<" if little else ">"
    off, rtype, size = rec
    b = bytearray(data)
    if kind == "size_below_header":
        struct.pack_into(u + "H", b, off + 6, 3)
    elif kind == "size_past_end":
        struct.pack_into(u + "H", b, off + 6, min(0xFFF8, max(size + 8, data_end - off + 8)))
    elif kind == "impossible_type":
        struct.pack_into(u + "I", b, off, 0xDEADBEEF)
    elif kind == "zero_header":
        b[off:off + 8] = bytes(8)
    elif kind == "size_too_large":
        struct.pack_into(u + "H", b, off + 6, size + 8)
    elif kind == "body_too_short":
        struct.pack_into(u + "I", b, off, RT.MMAP2)
        struct.pack_into(u + "H", b, off + 6, 16)
    return bytes(b)


def _copy(tmp_path, data, name="damaged.data"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _data_end(path):
    with perfdata.open(str(path)) as pf:
        return pf.data_range[1]


@pytest.fixture(scope="module")
def plt():
    if not PLT.is_file():
        pytest.skip("samples/plt_loop.fp.data missing")
    recs, little = top_records(PLT)
    return PLT.read_bytes(), recs, little, _data_end(PLT)


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_one_corrupt_record_costs_one_record(plt, kind, tmp_path):
    data, recs, little, end = plt
    intact = collections.Counter(recs)
    victim = recs[len(recs) // 2]
    path = _copy(tmp_path, corrupt(data, little, victim, kind, end))
    got, pf, error = walk(path)
    assert error is None, error
    lost = intact - got
    assert list(lost) == [victim], (kind, sorted(lost)[:5])
    extra = got - intact
    assert not extra, sorted(extra)[:5]
    skipped = [w for w in pf.warnings if "corrupt record" in w]
    assert len(skipped) == 1, pf.warnings
    assert re.fullmatch(r"%s: offset %#x: skipped \d+ bytes \(corrupt record\)"
                        % (re.escape(str(path)), victim[0]), skipped[0]), skipped[0]
    assert pf.skipped[0][1] == victim[0]
    assert pf.skipped[0][2] == victim[2]       # exactly the damaged record


def test_strict_stops_at_the_first_corrupt_record(plt, tmp_path):
    data, recs, little, end = plt
    victim = recs[100]
    path = _copy(tmp_path, corrupt(data, little, victim, "size_below_header", end))
    got, pf, error = walk(path, strict=True)
    assert isinstance(error, CorruptError)
    assert error.offset == victim[0]
    assert sum(got.values()) < len(recs) // 2


def test_several_corrupt_records(plt, tmp_path):
    data, recs, little, end = plt
    rng = random.Random(7)
    victims = sorted(rng.sample(recs[1:-1], 12))
    # No two adjacent (a pair is one corrupt range).
    victims = [v for i, v in enumerate(victims) if i == 0 or recs.index(v) - recs.index(victims[i - 1]) > 1]
    for n, v in enumerate(victims):
        data = corrupt(data, little, v, CORRUPTIONS[n % len(CORRUPTIONS)], end)
    got, pf, error = walk(_copy(tmp_path, data))
    assert error is None
    lost = collections.Counter(recs) - got
    assert set(lost) == set(victims), sorted(set(lost) ^ set(victims))
    assert len(pf.skipped) == len(victims)


def test_cli_stats_reports_the_skipped_range(plt, tmp_path):
    data, recs, little, end = plt
    victim = recs[200]
    path = _copy(tmp_path, corrupt(data, little, victim, "impossible_type", end))
    rc, out, err = run_cli(["stats", str(path)])
    assert rc == 0, err
    assert "perfdata: warning: %s: offset %#x: skipped %d bytes (corrupt record)" % (
        path, victim[0], victim[2]) in err
    last = out.strip().splitlines()[-1]
    assert last == "skipped %d bytes of corrupt records: %d at %#x" % (
        victim[2], victim[2], victim[0]), last


def test_corrupt_tail_record_then_end(plt, tmp_path):
    """The last record's size runs past the data end: nothing plausible after
    it, so it is a cut tail (warning, every record before it delivered)."""
    data, recs, little, end = plt
    victim = recs[-1]
    path = _copy(tmp_path, corrupt(data, little, victim, "size_past_end", end))
    got, pf, error = walk(path)
    assert error is None
    assert collections.Counter(recs) - got == collections.Counter([victim])


def test_truncated_file_delivers_every_complete_record(plt, tmp_path):
    data, recs, little, end = plt
    for cut_in in (recs[500], recs[1500], recs[-3]):
        for inside in (1, 8, cut_in[2] // 2, cut_in[2] - 1):
            path = _copy(tmp_path, data[:cut_in[0] + inside], "cut.data")
            got, pf, error = walk(path)
            assert error is None
            want = collections.Counter(r for r in recs if r[0] + r[2] <= cut_in[0])
            assert got == want, (cut_in, inside, sorted(got ^ want)[:4])
            assert not pf.skipped


def test_compressed_record_damaged(tmp_path):
    """A damaged COMPRESSED record costs the records of its zstd frame, not the rest."""
    candidates = [ZSTD, SAMPLES / "zstd_dwarf.data",
                  corpus_dir() / "perfdata" / "perfparser__cpp-inlining.perf.data"]
    for zpath in candidates:
        if not zpath.is_file():
            continue
        recs, little = top_records(zpath)
        comp = [r for r in recs if r[1] in (RT.COMPRESSED, RT.COMPRESSED2)]
        if len(comp) >= 3:
            break
    else:
        pytest.skip("no file with 3 COMPRESSED records")
    intact, _, _ = walk(zpath)
    data = bytearray(zpath.read_bytes())
    victim = comp[len(comp) // 2]
    data[victim[0] + 8:victim[0] + victim[2]] = b"\xa5" * (victim[2] - 8)   # garbage zstd
    got, pf, error = walk(_copy(tmp_path, bytes(data)))
    assert error is None, error
    assert pf.skipped and pf.skipped[0][1] == victim[0]
    lost = intact - got
    # Records of the damaged zstd frame are lost (it may run on into the next
    # COMPRESSED records); nothing before it, and no record outside them.
    assert all(k[0] >= victim[0] for k in lost), sorted(lost)[:4]
    after = [r for r in recs if r[0] > victim[0] and r[1] not in (RT.COMPRESSED, RT.COMPRESSED2)]
    assert after and all(got[r] for r in after)
    # strict keeps the old behaviour
    _, _, error = walk(tmp_path / "damaged.data", strict=True)
    assert isinstance(error, CorruptError)


# ------------------------------------------------------------ the rate
def recovery_rate(files, per_kind=2, seed=1, tmp_dir=None, compressed=None):
    """Damage one record at a time in each file (each kind of corruption,
    per_kind records chosen at random); return a dict of figures.  Lost
    records are those of the intact file not delivered; `rate_1_in_1000` is
    what a file of 1,000 records with one damaged keeps.  compressed: only
    files with (True) or without (False) COMPRESSED records."""
    import tempfile
    rng = random.Random(seed)
    tmp_dir = Path(tmp_dir or tempfile.mkdtemp(prefix="perfdata-recovery-"))
    trials = lost_total = errors = 0
    delivered = expected = 0
    per_file = {}
    error_cases = []
    for path in files:
        try:
            recs, little = top_records(path)
            intact, pf, err = walk(path)
        except PerfDataError:
            continue
        if err is not None or pf.is_pipe or len(recs) < 20:
            continue
        if compressed is not None and compressed != any(
                r[1] in (RT.COMPRESSED, RT.COMPRESSED2) for r in recs):
            continue
        end = pf.data_range[1]
        data = path.read_bytes()
        n_intact = sum(intact.values())
        file_lost = []
        for kind in CORRUPTIONS:
            for _ in range(per_kind):
                victim = recs[rng.randrange(1, len(recs))]
                damaged = tmp_dir / "damaged.data"
                damaged.write_bytes(corrupt(data, little, victim, kind, end))
                got, _, error = walk(damaged)
                if error is not None:
                    errors += 1
                    error_cases.append((path.name, kind, victim, str(error)[-200:]))
                lost = sum((intact - got).values())
                trials += 1
                lost_total += lost
                delivered += n_intact - lost
                expected += n_intact
                file_lost.append(lost)
        per_file[path.name] = (n_intact, max(file_lost), sum(file_lost) / len(file_lost))
    shutil.rmtree(tmp_dir, ignore_errors=True)
    mean_lost = lost_total / trials if trials else 0.0
    return {"files": len(per_file), "trials": trials, "errors": errors,
            "error_cases": error_cases,
            "mean_records_lost": mean_lost,
            "rate_measured": delivered / expected if expected else 1.0,
            "rate_1_in_1000": 1 - mean_lost / 1000.0, "per_file": per_file}


def _rate_files(limit=None):
    files = sorted(p for p in SAMPLES.glob("*.data") if p.is_file())
    corpus = corpus_dir()
    if corpus.is_dir():
        sub = corpus / "perfdata" if (corpus / "perfdata").is_dir() else corpus
        files += sorted(p for p in sub.iterdir() if p.is_file() and
                        not p.name.startswith("quipper-fuzz") and
                        (limit is None or p.stat().st_size <= limit))
    return files


def test_recovery_rate(tmp_path):
    """>= 99% of the records are delivered when one record of a thousand is
    damaged (measured on the samples and the small corpus files)."""
    figures = recovery_rate(_rate_files(limit=120_000), per_kind=1, tmp_dir=tmp_path,
                            compressed=False)
    if figures["trials"] == 0:
        pytest.skip("no file to damage")
    assert figures["errors"] == 0, figures
    assert figures["rate_1_in_1000"] >= 0.99, figures
    assert figures["mean_records_lost"] <= 3, figures


def test_recovery_compressed_files(tmp_path):
    """zstd files: a damaged COMPRESSED record costs the records of its zstd
    frame (perf's frames span several records), never the whole file."""
    figures = recovery_rate(_rate_files(limit=400_000), per_kind=1, tmp_dir=tmp_path,
                            compressed=True)
    if figures["trials"] == 0:
        pytest.skip("no zstd file in the samples or corpus")
    assert figures["errors"] == 0, figures
    assert figures["rate_measured"] >= 0.5, figures


if __name__ == "__main__":
    for flag in (False, True):
        f = recovery_rate(_rate_files(), per_kind=3, compressed=flag)
        worst = sorted(f["per_file"].items(), key=lambda kv: -kv[1][2])[:5]
        del f["per_file"]
        print("compressed" if flag else "uncompressed", f)
        for name, (n, most, mean) in worst:
            print("  %-58s %6d records, lost at most %d, mean %.1f" % (name, n, most, mean))


# (command, its arguments after FILE): every command that reads a profile.
STRICT_COMMANDS = [("stats", []), ("dump", []), ("script", []), ("report", []),
                   ("collapse", []), ("diagnose", []), ("buildids", []),
                   ("flamegraph", ["-o", "{tmp}/fg.svg"]), ("export", ["-o", "{tmp}/p.json"]),
                   ("archive", ["-o", "{tmp}/a.tar.zst"])]


@pytest.mark.parametrize("command,extra", STRICT_COMMANDS, ids=[c for c, _ in STRICT_COMMANDS])
def test_strict_reaches_every_command(plt, command, extra, tmp_path):
    """`perfdata --strict CMD` stops at the first corrupt record, exit 2 and
    one line naming the offset; without it the record is skipped, exit 0."""
    from conftest import run_cli
    data, recs, little, end = plt
    victim = recs[len(recs) // 2]
    path = _copy(tmp_path, corrupt(data, little, victim, "size_below_header", end))
    args = [a.format(tmp=tmp_path) for a in extra]
    if command not in ("stats", "dump"):
        args += ["--debug-dir", str(SAMPLES / "buildids")]
    rc, _, err = run_cli([command, str(path)] + args)
    assert rc == 0 and "offset %#x: skipped" % victim[0] in err, err
    rc, _, err = run_cli(["--strict", command, str(path)] + args)
    assert rc == 2 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("perfdata: error: %s: offset %#x" % (path, victim[0]))
