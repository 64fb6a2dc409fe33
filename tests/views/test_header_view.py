"""`perfdata header` (perfdata.views.header.describe_header) against perf 6.1's
`perf report --header-only` and `--header-only -I`, line for line.

Compared: files recorded here (one event, -g, two events, a group, a
tracepoint with -a, -z with -k monotonic, pipe mode, --threads) and every
corpus file perf 6.1 reads (exit 0 and some output).  `# captured on` is left
out (it is the file's mtime as the reading machine's ctime prints it).  Every
other difference must be one listed in DELIBERATE, with its reason.
"""
import difflib
import glob
import os
import re
import shutil
import struct
import subprocess

import pytest

import perfdata
from perfdata.format.constants import Feature
from perfdata.views.header import describe_header
from perfdata.views.header.event_desc import describe_attr
from perfdata.views.header.features import format_ranges
from perfdata.views.units import unit_number
from conftest import corpus_dir

PERF = shutil.which("perf")
CORPUS = str(corpus_dir() / "perfdata")      # conftest: ../shared/corpus or $PERFDATA_CORPUS
needs_perf = pytest.mark.skipif(PERF is None, reason="perf is not installed")

#: Lines that depend on the time of reading.
TIME_DEPENDENT = re.compile(r"^# captured on    : ")

# Deliberate differences: (files it applies to (regex on the basename),
# "perf" or "ours" (whose output has the line), line regex, reason).
ERROR_LINE = r"^# [A-Z_]+: (?!\s*$)"
DELIBERATE = [
    (r".*", "ours", ERROR_LINE + r"(section outside the file|.*(stream read less|count \d+ "
     r"needs|Check|expected|at least))",
     "a feature section that cannot be decoded, or lies outside the file, prints "
     "'# FEATURE: error' (the header view's error form); perf prints its half-filled "
     "state ('(null)', zeros) or skips sections its lseek refuses"),
    (r"quipper-fuzz__poc-39297b2a.*", "ours", r"^# FEATURE: HEADER_FEATURE record: ",
     "a truncated HEADER_FEATURE record is reported in the text; perf reports it on "
     "stderr ('failed to process type: 80')"),
    (r"quipper-fuzz__poc-4a52fdd4.*", "perf", r"^# cpudesc : \(null\)$",
     "data size 0 (perf record was not terminated): no section table was written; perf "
     "reads one from the data records, fails, and prints '(null)'; we print nothing"),
    (r"quipper__perf\.data\.armv7.*", "perf",
     r"^# (cpudesc : \(null\)|total memory : 0 kB|cmdline : |pmu mappings: not available)$",
     "the CPUDESC section is empty: perf stops processing features at the first that "
     "fails and prints the later ones from an empty state; we decode every section on "
     "its own"),
    (r"quipper__perf\.data\.armv7.*", "ours",
     r"^# (total memory : \d+ kB|cmdline : /usr/bin/perf .*|pmu mappings: software = .*|"
     r"sibling (sockets|threads) : .*)$",
     "(the other side of the armv7 difference above)"),
]


def deliberate(name, side, line):
    for files, who, pattern, _ in DELIBERATE:
        if who == side and re.match(files, name) and re.search(pattern, line):
            return True
    return False


def perf_header(path, full):
    args = [PERF, "report", "--header-only", "-i", path] + (["-I"] if full else [])
    res = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=30)
    return res.returncode, res.stdout.splitlines()


def compare(path, full):
    """(equal lines, lines, unexplained differences) of one file."""
    rc, expected = perf_header(path, full)
    if rc != 0 or not expected:
        return None
    with perfdata.open(path) as pf:
        got = describe_header(pf, full).splitlines()
    expected = [l for l in expected if not TIME_DEPENDENT.match(l)]
    got = [l for l in got if not TIME_DEPENDENT.match(l)]
    matcher = difflib.SequenceMatcher(None, expected, got, autojunk=False)
    equal = sum(block.size for block in matcher.get_matching_blocks())
    name = os.path.basename(path)
    unexplained = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        unexplained += ["perf: " + l for l in expected[i1:i2] if not deliberate(name, "perf", l)]
        unexplained += ["ours: " + l for l in got[j1:j2] if not deliberate(name, "ours", l)]
    return equal, max(len(expected), len(got)), unexplained


def record(tmpdir, name, *args, pipe=False):
    path = os.path.join(tmpdir, name)
    if pipe:
        with open(path, "wb") as out:
            res = subprocess.run([PERF, "record", "-q", "-o", "-"] + list(args), stdout=out,
                                 stderr=subprocess.PIPE, timeout=60)
    else:
        res = subprocess.run([PERF, "record", "-q", "-o", path] + list(args),
                             capture_output=True, timeout=60)
    if res.returncode != 0 or not os.path.exists(path):
        return None
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    if PERF is None:
        pytest.skip("perf is not installed")
    tmp = str(tmp_path_factory.mktemp("header"))
    sleep = ["--", "sleep", "0.05"]
    paths = [
        record(tmp, "one.data", "-e", "cpu-clock", *sleep),
        record(tmp, "g.data", "-g", "-e", "cpu-clock", *sleep),
        record(tmp, "two.data", "-e", "cpu-clock,task-clock", *sleep),
        record(tmp, "group.data", "-e", "{cpu-clock,task-clock}", *sleep),
        record(tmp, "tp.data", "-e", "sched:sched_switch", "-a", *sleep),
        record(tmp, "z.data", "-z", "-k", "monotonic", "-e", "cpu-clock", *sleep),
        record(tmp, "pipe.data", "-g", "-e", "cpu-clock", *sleep, pipe=True),
        record(tmp, "dir.data", "--threads", "-e", "cpu-clock", *sleep),
    ]
    paths = [p for p in paths if p]
    if not paths:
        pytest.skip("perf record does not work here")
    return paths


@needs_perf
def test_recorded_files_match_perf(recorded):
    for path in recorded:
        for full in (False, True):
            result = compare(path, full)
            assert result is not None, path
            equal, total, unexplained = result
            assert not unexplained, (path, full, unexplained)
            assert equal == total, (path, full)


def corpus_files():
    return sorted(glob.glob(os.path.join(CORPUS, "*")))


@needs_perf
def test_corpus_matches_perf():
    files = corpus_files()
    if not files:
        pytest.skip("no corpus at %s" % CORPUS)
    equal = total = compared = 0
    problems = []
    for path in files:
        for full in (False, True):
            try:
                result = compare(path, full)
            except perfdata.PerfDataError as exc:
                problems.append((os.path.basename(path), full, "cannot open: %s" % exc))
                continue
            if result is None:
                continue        # perf 6.1 cannot read it either
            compared += 1
            equal += result[0]
            total += result[1]
            if result[2]:
                problems.append((os.path.basename(path), full, result[2]))
    print("\nheader view vs perf 6.1: %d outputs, %d/%d lines equal (%.2f%%)"
          % (compared, equal, total, 100.0 * equal / max(total, 1)))
    assert compared >= 50
    assert not problems, problems
    assert equal / total > 0.99


def test_every_corpus_file_describes_or_fails_cleanly():
    for path in corpus_files():
        try:
            pf = perfdata.open(path)
        except perfdata.PerfDataError:
            continue
        with pf:
            for full in (False, True):
                text = describe_header(pf, full)
                assert text.startswith("# ========\n# captured on    : ")
                if pf.is_pipe:
                    assert "\n# ========\n#\n" in text
                else:
                    assert text.endswith("\n# ========\n#\n")


# --------------------------------------------------------------- bad input
def _feature_table(raw):
    data_offset, data_size = struct.unpack_from("<QQ", raw, 40)
    bitmap = int.from_bytes(raw[72:104], "little")
    bits = [b for b in range(256) if bitmap >> b & 1]
    table = data_offset + data_size
    return {bit: struct.unpack_from("<QQ", raw, table + 16 * i) for i, bit in enumerate(bits)}


@needs_perf
def test_corrupt_sections_degrade_to_error_lines(recorded, tmp_path):
    path = next(p for p in recorded if p.endswith("one.data"))
    raw = open(path, "rb").read()
    table = _feature_table(raw)
    string_features = {Feature.HOSTNAME, Feature.OSRELEASE, Feature.VERSION, Feature.ARCH,
                       Feature.CPUDESC, Feature.CPUID, Feature.CMDLINE, Feature.PMU_MAPPINGS,
                       Feature.EVENT_DESC, Feature.NUMA_TOPOLOGY}
    for fid, (offset, size) in table.items():
        if size < 4:
            continue
        bad = bytearray(raw)
        bad[offset:offset + 4] = b"\xff\xff\xff\x7f"      # a count or length far too big
        target = tmp_path / ("bad%d.data" % fid)
        target.write_bytes(bytes(bad))
        with perfdata.open(str(target)) as pf:
            for full in (False, True):
                text = describe_header(pf, full)
        if fid in string_features:
            name = Feature(fid).name
            assert re.search(r"^# %s: .+$" % name, text, re.M) or \
                (fid == Feature.EVENT_DESC and
                 "# event desc: not available or unable to read" in text), (name, text)
    # Cut inside the feature sections: what is left is described, the rest fails cleanly.
    for cut in sorted({min(o for o, _ in table.values()) + 10, len(raw) - 7}):
        target = tmp_path / "cut.data"
        target.write_bytes(raw[:cut])
        try:
            pf = perfdata.open(str(target))
        except perfdata.PerfDataError:
            continue
        with pf:
            describe_header(pf, True)


# ----------------------------------------------------------------- helpers
def test_printing_helpers():
    assert format_ranges([0, 1, 2, 3, 5, 7, 8]) == "0-3,5,7-8"
    assert format_ranges([]) == ""
    assert unit_number(24 << 30) == "24G" and unit_number(2047) == "2047B"
    assert unit_number(1 << 40) == "1024G"
    attr = {"type": 1, "size": 128, "config": 0x9, "sample_period": 1, "sample_type": 0x107,
            "read_format": 0, "flags": {"disabled": 1, "precise_ip": 2}, "wakeup_events": 0,
            "bp_type": 0, "config1": 0, "config2": 0, "branch_sample_type": 0,
            "sample_regs_user": 0, "sample_stack_user": 0, "clockid": -1,
            "sample_regs_intr": 0, "aux_watermark": 0, "sample_max_stack": 0,
            "aux_sample_size": 0, "sig_data": 0}
    assert describe_attr(attr) == [
        "type = 1", "size = 128", "config = 0x9", "{ sample_period, sample_freq } = 1",
        "sample_type = IP|TID|TIME|PERIOD", "disabled = 1", "precise_ip = 2", "clockid = -1"]


@needs_perf
def test_attr_printing_matches_perf_on_crafted_event_desc(recorded, tmp_path):
    """Attr fields perf rarely meets (every branch bit, negative clockid, unknown
    bits that leave perf's shared buffer as it was, reserved fields that make
    perf refuse the whole EVENT_DESC), patched into a recorded file."""
    path = next(p for p in recorded if p.endswith("one.data"))
    raw = open(path, "rb").read()
    offset, _ = _feature_table(raw)[Feature.EVENT_DESC]
    attr = offset + 8
    cases = {
        "branch": [("Q", 24, (1 << 11) | 0x107), ("Q", 72, (1 << 19) - 1)],
        "misc": [("Q", 56, 0x1234), ("Q", 64, (1 << 64) - 1), ("i", 92, -3), ("Q", 80, 0xff),
                 ("I", 88, 8192), ("Q", 96, 7), ("I", 104, 5), ("H", 108, 127),
                 ("I", 112, 4096), ("Q", 120, 9), ("I", 48, 3), ("I", 52, 2)],
        "stale_buffer": [("Q", 72, 1 << 25)],
        "reserved": [("H", 110, 1)],
        "unknown_sample_type": [("Q", 24, 1 << 30)],
    }
    for name, patches in cases.items():
        bad = bytearray(raw)
        for fmt, field, value in patches:
            struct.pack_into("<" + fmt, bad, attr + field, value)
        target = tmp_path / ("%s.data" % name)
        target.write_bytes(bytes(bad))
        _, expected = perf_header(str(target), False)
        with perfdata.open(str(target)) as pf:
            got = describe_header(pf).splitlines()
        pick = lambda lines: [l for l in lines if l.startswith("# event")]
        assert pick(expected) and pick(got) == pick(expected), name


@needs_perf
def test_newer_perf_files_patched_for_perf_61(tmp_path):
    """Files of perf 6.3+ have 136-byte attrs, which perf 6.1 refuses.  With one
    attr, writing 128 into its size field makes perf 6.1 read it (the ids
    section it then reads is zeros); the features, BPF_PROG_INFO with BTF
    function names, CLOCK_DATA and COMPRESSED among them, are untouched."""
    names = ["linux-perf-data__sleep.compressed.data", "linux-perf-data__sleep.data",
             "linux-perf-data__sleep.compressed2.data", "io_uring_tcp_server__perf.data"]
    compared = 0
    for name in names:
        src = os.path.join(CORPUS, name)
        if not os.path.exists(src):
            continue
        raw = bytearray(open(src, "rb").read())
        attr_size, attrs_offset, attrs_size = struct.unpack_from("<QQQ", raw, 16)
        if attrs_size != attr_size or struct.unpack_from("<I", raw, attrs_offset + 4)[0] != 136:
            continue
        struct.pack_into("<I", raw, attrs_offset + 4, 128)
        target = tmp_path / name
        target.write_bytes(bytes(raw))
        for full in (False, True):
            result = compare(str(target), full)
            assert result is not None, name
            equal, total, unexplained = result
            assert not unexplained and equal == total, (name, full, unexplained)
            compared += 1
    if not compared:
        pytest.skip("corpus files absent")
