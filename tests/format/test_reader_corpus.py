"""The reader on the shared corpus of real perf.data files (../shared/corpus).

Oracles: `perf report --stats` of Debian perf 6.1 (oracle/*.stats.txt) for the
files perf reads; the MANIFEST's "own raw walk" record counts for the files
perf 6.1 rejects only for their age or origin; and for the broken files and the
quipper fuzzer reproducers, that every command ends in exit 0 or 2 without a
traceback.  Skips when the corpus is absent.
"""
import json
import re
import time

import pytest

from conftest import corpus_dir, have_corpus, run_cli
from synth import plain

import perfdata
from perfdata.format.constants import RecordType
from perfdata.format.errors import PerfDataError

CORPUS = corpus_dir()
DATA = CORPUS / "perfdata"
ORACLE = CORPUS / "oracle"

pytestmark = pytest.mark.skipif(not have_corpus(), reason="corpus not found at %s "
                                "(set PERFDATA_CORPUS)" % CORPUS)

# Lines perf prints into --stats output that are not statistics (stderr mixed in).
PERF_NOISE = ("unexpected end of event stream", "Failed to process auxtrace index")
# Files where perf 6.1's statistics are known to be wrong: not a reference.
PERF_QUIRKS = {
    "perfparser__probe.data.stream":
        "perf 6.1 stops after the pipe-mode TRACING_DATA record ('unexpected end of "
        "event stream') and counts only ATTR and TRACING_DATA; the file goes on with "
        "126 more records (MANIFEST: perf script prints 124 lines from it)",
}
BROKEN = ("quipper__perf.data.piped.corrupted.zero_size_sample-3.2",
          "simpleperf__invalid_perf.data", "slas__perf.data")
# simpleperf's private record types (simpleperf/record.h, SIMPLE_PERF_RECORD_*).
SIMPLEPERF_TYPES = {
    "SP_KERNEL_SYMBOL": 32769, "SP_DSO": 32770, "SP_SYMBOL": 32771, "SP_SPLIT": 32772,
    "SP_SPLIT_END": 32773, "SP_EVENT_ID": 32774, "SP_CALLCHAIN": 32775,
    "SP_UNWINDING_RESULT": 32776, "SP_TRACING_DATA": 32777, "SP_DEBUG": 32778,
}
# Why perf 6.1 rejects a file (MANIFEST's last column), when it is age or origin
# and not damage.
AGE_OR_ORIGIN = ("incompatible file format", "failed to process type: 83",
                 "failed to process type: 327", "Couldn't decompress data",
                 "bad event header size")


def _files(prefix=""):
    if not DATA.is_dir():
        return []
    return sorted(p.name for p in DATA.iterdir() if p.name.startswith(prefix))


def _oracle_stats(name):
    path = ORACLE / (name + ".stats.txt")
    return path.read_text(errors="replace") if path.is_file() else None


def stats_files():
    out = []
    for name in _files():
        text = _oracle_stats(name)
        if text and "TOTAL events" in text and "Error:" not in text:
            out.append(name)
    return out


def manifest_rows():
    """{name: cells} of the MANIFEST's main table."""
    path = CORPUS / "MANIFEST.md"
    rows = {}
    if not path.is_file():
        return rows
    for line in path.read_text().splitlines():
        if not re.match(r"\| \d+ \| ", line):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        rows[cells[1]] = cells
    return rows


def _type_number(label):
    if label in SIMPLEPERF_TYPES:
        return SIMPLEPERF_TYPES[label]
    return int(RecordType[label])


def own_walk_files():
    """(name, {type: count}, trailing) for files perf 6.1 rejects for age/origin."""
    out = []
    for name, cells in manifest_rows().items():
        counts, verdict = cells[9], cells[11]
        if "own raw walk" not in counts or name in BROKEN:
            continue
        if not any(reason in verdict for reason in AGE_OR_ORIGIN):
            continue
        text = counts.split(")", 1)[1]
        trailing = "trailing non-record bytes" in text
        text = text.split("+")[0]
        expected = {}
        for item in text.split(","):
            label, count = item.split()
            expected[_type_number(label)] = int(count)
        out.append((name, expected, trailing))
    return out


def _normalise(text):
    return [line.rstrip() for line in text.splitlines()
            if line.strip() and not line.startswith("rc=")
            and not any(noise in line for noise in PERF_NOISE)]


@pytest.mark.parametrize("name", stats_files())
def test_stats_equal_perf(name):
    if name in PERF_QUIRKS:
        pytest.skip(PERF_QUIRKS[name])
    rc, out, err = run_cli(["stats", str(DATA / name)])
    assert rc == 0, err
    assert _normalise(out) == _normalise(_oracle_stats(name))


def test_manifest_parsed():
    # The MANIFEST says 22 files are rejected; 19 for age/origin and 3 broken.
    files = own_walk_files()
    if not files:
        pytest.skip("no MANIFEST")
    assert len(files) >= 15


@pytest.mark.parametrize("name,expected,trailing", own_walk_files(),
                         ids=[f[0] for f in own_walk_files()])
def test_own_walk_counts(name, expected, trailing):
    pf = perfdata.open(str(DATA / name))
    counts = {}
    try:
        for rec in pf.records(order="file", include_compressed=True):
            if not rec.compressed:
                counts[rec.type] = counts.get(rec.type, 0) + 1
    except PerfDataError as exc:
        # Only the file with perf's stderr text after the last record may end so.
        assert trailing, exc
    assert counts == expected


COMMANDS = {"stats": ["stats"], "dump": ["dump"], "header": ["header"],
            "dump-json": ["dump", "--json"], "dump-time": ["dump", "--time-order"]}


@pytest.mark.parametrize("name", _files())
def test_every_file_every_command(name):
    """Every corpus file, broken ones and the 28 quipper fuzzer reproducers
    included: each command ends in exit 0 or 2 with no traceback (an exception
    other than PerfDataError escapes cli.main and fails the test); an exit 2
    names the file and the offset.  Files perf 6.1 reads give exit 0."""
    # perf's --stats only counts records; fuzzed bodies may still be corrupt
    readable = name in stats_files() and not name.startswith("quipper-fuzz__")
    for label, command in COMMANDS.items():
        t0 = time.monotonic()
        rc, out, err = run_cli(command + [str(DATA / name)])
        assert time.monotonic() - t0 < 20, label
        assert rc in (0, 2), (label, rc)
        assert "Traceback" not in err
        if rc == 2:
            last = err.strip().splitlines()[-1]
            assert last.startswith("perfdata: error: %s: " % (DATA / name)), last
            assert re.search(r": offset 0x[0-9a-f]+: ", last), last
        if readable:
            assert rc == 0, (label, err)
        if label == "dump-json":
            for line in out.splitlines():
                json.loads(line)          # every line is one JSON value


def test_broken_zero_size_sample_prefix():
    """perf stops at the zero-size record; the records before it are delivered.
    So does strict mode; by default (pipe-mode recovery) the reader skips the
    damaged range, names it, and delivers the records after it too."""
    name = "quipper__perf.data.piped.corrupted.zero_size_sample-3.2"
    cells = manifest_rows().get(name)
    if cells is None:
        pytest.skip("not in this corpus")
    text = cells[9].split(")", 1)[1].split("+")[0]
    expected = {_type_number(label): int(count)
                for label, count in (item.split() for item in text.split(","))}
    counts = {}
    pf = perfdata.open(str(DATA / name), strict=True)
    with pytest.raises(PerfDataError) as info:
        for rec in pf.records(order="file"):
            counts[rec.type] = counts.get(rec.type, 0) + 1
    assert counts == expected
    assert info.value.offset is not None and info.value.path == str(DATA / name)
    recovered = {}
    pf = perfdata.open(str(DATA / name))
    for rec in pf.records(order="file"):
        recovered[rec.type] = recovered.get(rec.type, 0) + 1
    assert all(recovered.get(t, 0) >= n for t, n in expected.items()), recovered
    assert sum(recovered.values()) > sum(expected.values())
    assert [s[1] for s in pf.skipped] == [info.value.offset]


def _corpus_sample_files():
    names = []
    for name in _files():
        if name in BROKEN or name.startswith("quipper-fuzz__"):
            continue
        names.append(name)
    return names


@pytest.mark.parametrize("name", _corpus_sample_files())
def test_fast_decoder_agrees_with_schema(name):
    """The decoder derived from the construct schema gives what schema.parse()
    gives, on every sample of every readable corpus file."""
    pf = perfdata.open(str(DATA / name))
    checked = 0
    try:
        for rec in pf.records(order="file"):
            if rec.type != RecordType.SAMPLE or rec.attr is None:
                continue
            ea = rec.attr
            fast = ea.decode_sample(rec.body)
            slow = ea.schema.parse(bytes(rec.body))
            assert plain(fast) == plain(slow), rec
            checked += 1
    except PerfDataError:
        if name != "linux-perf-data__sleep.compressed2.pipe.data":
            raise


def test_dump_rhel7_mmap2_file():
    path = DATA / "hotspot__perf.data.true.v2"
    if not path.is_file():
        pytest.skip("not in this corpus")
    rc, out, err = run_cli(["dump", str(path)])
    assert rc == 0, err
    # ground truth: the NUL-terminated name at body offset 56 of each MMAP2
    pf = perfdata.open(str(path))
    for rec in pf.records(order="file"):
        if rec.type == RecordType.MMAP2:
            assert rec.parse()["filename"] == bytes(rec.body[56:]).split(b"\0")[0].decode()
