"""Feature section schemas (perfdata.format.features) and tracing data
(perfdata.format.tracing), checked against perf 6.1 on files recorded here.

The oracle is perf itself: `perf report --header-only [-I]`, `perf
buildid-list`, `perf script`, and the kernel's tracefs format files.  The
sections are sliced out of the files by this test (file header, feature
bitmap, section table), not by the reader, so the schemas are tested alone.
"""
import glob
import os
import random
import re
import shutil
import struct
import subprocess

import pytest

from perfdata.format import features as F
from perfdata.format.constants import Feature
from perfdata.format.errors import CorruptError
from perfdata.format.tracing import parse_tracing_data
from conftest import corpus_dir

PERF = shutil.which("perf")
CORPUS = str(corpus_dir() / "perfdata")      # conftest: ../shared/corpus or $PERFDATA_CORPUS
needs_perf = pytest.mark.skipif(PERF is None, reason="perf is not installed")


# ------------------------------------------------------------------ helpers
def sections(path):
    """{feature number: bytes} of a file-mode perf.data, sliced by hand."""
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:8] == b"PERFILE2"
    data_offset, data_size = struct.unpack_from("<QQ", raw, 40)
    bitmap = int.from_bytes(raw[72:104], "little")
    bits = [b for b in range(256) if bitmap >> b & 1]
    table = data_offset + data_size
    out = {}
    for index, bit in enumerate(bits):
        offset, size = struct.unpack_from("<QQ", raw, table + 16 * index)
        out[bit] = raw[offset:offset + size]
    return out


def perf_header(path, full=False):
    args = [PERF, "report", "--header-only", "-i", path] + (["-I"] if full else [])
    out = subprocess.run(args, capture_output=True, text=True, timeout=30)
    return out.stdout.splitlines()


def perf_value(lines, prefix):
    for line in lines:
        if line.startswith(prefix):
            return line[len(prefix):]
    raise AssertionError("perf printed no %r line" % prefix)


def record(tmpdir, name, *args):
    path = os.path.join(tmpdir, name)
    cmd = [PERF, "record", "-q", "-o", path] + list(args)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if res.returncode != 0 or not os.path.exists(path):
        pytest.skip("perf record %s failed: %s" % (" ".join(args), res.stderr.strip()[-200:]))
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    if PERF is None:
        pytest.skip("perf is not installed")
    tmp = str(tmp_path_factory.mktemp("features"))
    files = {
        "plain": record(tmp, "plain.data", "-e", "cpu-clock", "--", "sleep", "0.05"),
        "group": record(tmp, "group.data", "-g", "-e", "{cpu-clock,task-clock}", "--",
                        "sleep", "0.05"),
    }
    try:
        files["tracepoint"] = record(tmp, "tp.data", "-e", "sched:sched_switch", "-a",
                                     "--", "sleep", "0.05")
    except pytest.skip.Exception:
        pass
    return files


# ------------------------------------------------------- against perf 6.1
@needs_perf
def test_simple_features_match_perf(recorded):
    path = recorded["plain"]
    secs = sections(path)
    lines = perf_header(path)
    p = lambda fid: F.parse_feature(fid, secs[fid], True)
    assert p(Feature.HOSTNAME) == perf_value(lines, "# hostname : ")
    assert p(Feature.OSRELEASE) == perf_value(lines, "# os release : ")
    assert p(Feature.VERSION) == perf_value(lines, "# perf version : ")
    assert p(Feature.ARCH) == perf_value(lines, "# arch : ")
    assert p(Feature.CPUDESC) == perf_value(lines, "# cpudesc : ")
    assert p(Feature.CPUID) == perf_value(lines, "# cpuid : ")
    assert "%d kB" % p(Feature.TOTAL_MEM) == perf_value(lines, "# total memory : ")
    nr = p(Feature.NRCPUS)
    assert nr["nr_cpus_online"] == int(perf_value(lines, "# nrcpus online : "))
    assert nr["nr_cpus_available"] == int(perf_value(lines, "# nrcpus avail : "))
    assert " ".join(p(Feature.CMDLINE)) + " " == perf_value(lines, "# cmdline : ")
    pmus = p(Feature.PMU_MAPPINGS)
    assert ", ".join("%s = %d" % (m["name"], m["type"]) for m in pmus) == \
        perf_value(lines, "# pmu mappings: ")
    times = p(Feature.SAMPLE_TIME)
    first = times["first_sample_time"]
    assert "%d.%06d" % (first // 10**9, first % 10**9 // 1000) == \
        perf_value(lines, "# time of first sample : ")


@needs_perf
def test_event_desc_matches_perf(recorded):
    path = recorded["group"]
    events = F.parse_feature(Feature.EVENT_DESC, sections(path)[Feature.EVENT_DESC], True)
    perf_events = [l for l in perf_header(path) if l.startswith("# event : ")]
    assert len(events) == len(perf_events) == 2
    for ev, line in zip(events, perf_events):
        name, ids = re.match(r"# event : name = (.*?), , id = \{ ([\d, ]+) \}", line).groups()
        assert ev["name"] == name
        assert ev["ids"] == [int(i) for i in ids.split(", ")]
        assert "type = %d," % ev["attr"]["type"] in line
        assert "size = %d," % ev["attr"]["size"] in line


@needs_perf
def test_topology_cache_memory_match_perf_full(recorded):
    path = recorded["plain"]
    secs = sections(path)
    lines = perf_header(path, full=True)
    nr = F.parse_feature(Feature.NRCPUS, secs[Feature.NRCPUS], True)["nr_cpus_available"]
    topo = F.parse_feature(Feature.CPU_TOPOLOGY, secs[Feature.CPU_TOPOLOGY], True,
                           nr_cpus_avail=nr)
    guessed = F.parse_feature(Feature.CPU_TOPOLOGY, secs[Feature.CPU_TOPOLOGY], True)
    assert guessed == topo          # the cpu count inferred without NRCPUS
    assert topo["sibling_cores"] == [l[len("# sibling sockets : "):] for l in lines
                                     if l.startswith("# sibling sockets : ")]
    assert topo["sibling_threads"] == [l[len("# sibling threads : "):] for l in lines
                                       if l.startswith("# sibling threads : ")]
    cpu_lines = [l for l in lines if re.match(r"# CPU \d+: Core ID", l)]
    assert len(cpu_lines) == len(topo["cpus"]) == nr
    for i, (cpu, line) in enumerate(zip(topo["cpus"], cpu_lines)):
        assert line.startswith("# CPU %d: Core ID %d," % (i, cpu["core_id"]))
        assert line.endswith("Socket ID %d" % cpu["socket_id"])
    caches = F.parse_feature(Feature.CACHE, secs[Feature.CACHE], True)["caches"]
    perf_caches = [re.split(r"\s+", l[3:].strip()) for l in lines if re.match(r"#  L\d ", l)]
    assert [["L%d" % c["level"], c["type"], c["size"], "[%s]" % c["map"]] for c in caches] \
        == perf_caches
    numa = F.parse_feature(Feature.NUMA_TOPOLOGY, secs[Feature.NUMA_TOPOLOGY], True)
    for node in numa:
        assert "# node%d meminfo  : total = %d kB, free = %d kB" % (
            node["node"], node["mem_total"], node["mem_free"]) in lines
    mem = F.parse_feature(Feature.MEM_TOPOLOGY, secs[Feature.MEM_TOPOLOGY], True)
    assert "# memory nodes (nr %d, block size %#x):" % (len(mem["nodes"]),
                                                        mem["block_size"]) in lines


@needs_perf
def test_build_ids_match_perf_buildid_list(recorded):
    for path in recorded.values():
        secs = sections(path)
        if Feature.BUILD_ID not in secs:
            continue
        ours = {(r["build_id"].hex(), r["filename"])
                for r in F.parse_feature(Feature.BUILD_ID, secs[Feature.BUILD_ID], True)}
        out = subprocess.run([PERF, "buildid-list", "-i", path], capture_output=True,
                             text=True, timeout=30).stdout
        theirs = {tuple(l.split(" ", 1)) for l in out.splitlines() if l.strip()}
        assert ours == theirs


@needs_perf
def test_tracing_data_formats_match_tracefs_and_perf_script(recorded):
    path = recorded.get("tracepoint")
    if path is None:
        pytest.skip("cannot record sched:sched_switch here")
    td = F.parse_feature(Feature.TRACING_DATA, sections(path)[Feature.TRACING_DATA], True)
    ev = td.find_event("sched", "sched_switch")
    assert ev is not None and td.events[ev.id] is ev
    fmt_path = "/sys/kernel/tracing/events/sched/sched_switch/format"
    if os.path.exists(fmt_path):
        text = open(fmt_path).read()
        assert "ID: %d" % ev.id in text
        for field in ev.fields:
            assert re.search(r"field:[^;]*\b%s\b[^;]*;\s*offset:%d;\s*size:%d;\s*signed:%d;"
                             % (re.escape(field.name), field.offset, field.size,
                                field.signed), text), field
    # Decode the raw data of the samples and compare with perf script.
    import perfdata
    with perfdata.open(path) as pf:
        decoded = []
        for rec in pf.records(order="time"):
            if rec.name == "SAMPLE" and rec.attr.attr["type"] == 2:
                raw = rec.parse()["raw"]["data"]
                decoded.append(td.events[rec.attr.attr["config"]].decode(raw))
            if len(decoded) == 20:
                break
    out = subprocess.run([PERF, "script", "-i", path, "-F", "trace"], capture_output=True,
                         text=True, timeout=30).stdout.splitlines()
    assert decoded and len(out) >= len(decoded)
    for fields, line in zip(decoded, out):
        match = re.search(r"prev_comm=(.*) prev_pid=(\d+) .* ==> next_comm=(.*) "
                          r"next_pid=(\d+) next_prio=(-?\d+)", line)
        assert match, line
        assert (fields["prev_comm"], fields["prev_pid"], fields["next_comm"],
                fields["next_pid"], fields["next_prio"]) == \
            (match.group(1), int(match.group(2)), match.group(3), int(match.group(4)),
             int(match.group(5)))


def test_tracing_data_of_the_corpus():
    for name, expect in (("perfparser__probe.data.file", ("probe_untitled1", "main")),):
        path = os.path.join(CORPUS, name)
        if not os.path.exists(path):
            pytest.skip("corpus file %s absent" % name)
        td = F.parse_feature(Feature.TRACING_DATA, sections(path)[Feature.TRACING_DATA], True)
        assert td.version == "0.5" and td.saved_cmdlines == {}
        ev = td.find_event(*expect)
        assert ev is not None
        assert [f.name for f in ev.event_fields] == ["__probe_ip"]
        # the event id is the config of the file's tracepoint attr (0x531)
        assert ev.id == 0x531


def test_event_format_fields_and_decode():
    text = ("name: demo\nID: 7\nformat:\n"
            "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
            "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
            "\tfield:char comm[8];\toffset:8;\tsize:8;\tsigned:0;\n"
            "\tfield:__data_loc char[] path;\toffset:16;\tsize:4;\tsigned:0;\n"
            "\tfield:u32 vals[2];\toffset:20;\tsize:8;\tsigned:0;\n"
            "\tfield:s64 delta;\toffset:28;\tsize:8;\tsigned:1;\n"
            "\nprint fmt: \"%s\", REC->comm\n")
    from perfdata.format.tracing import EventFormat
    ev = EventFormat.from_text("demo_sys", text)
    assert ev.id == 7 and ev.name == "demo" and ev.print_fmt == '"%s", REC->comm'
    assert [f.name for f in ev.common_fields] == ["common_type", "common_pid"]
    path = ev.field("path")
    assert path.is_dynamic and path.is_string and not path.is_array
    comm = ev.field("comm")
    assert comm.is_array and comm.array_len == 8 and comm.is_string
    raw = struct.pack("<HxxiI", 7, -5, 0) [:8] + b"bash\0\0\0\0" + \
        struct.pack("<I", (4 << 16) | 36) + struct.pack("<II", 1, 2) + \
        struct.pack("<q", -9) + b"/tm\0"
    got = ev.decode(raw)
    assert got == {"common_type": 7, "common_pid": -5, "comm": "bash", "path": "/tm",
                   "vals": [1, 2], "delta": -9}


# ------------------------------------------------------ schemas four ways
def _corpus_and_recorded_sections(recorded=None):
    paths = sorted(glob.glob(os.path.join(CORPUS, "*")))
    out = []
    for path in paths + list((recorded or {}).values()):
        try:
            with open(path, "rb") as f:
                head = f.read(104)
            if head[:8] != b"PERFILE2" or len(head) < 104 or \
                    struct.unpack_from("<Q", head, 8)[0] != 104:
                continue
            secs = sections(path)
        except (OSError, struct.error, AssertionError):
            continue
        out.extend((path, fid, data) for fid, data in secs.items() if fid < 32 and data)
    return out


ROUND_TRIP = (Feature.HOSTNAME, Feature.OSRELEASE, Feature.VERSION, Feature.ARCH,
              Feature.NRCPUS, Feature.CPUDESC, Feature.CPUID, Feature.TOTAL_MEM,
              Feature.CMDLINE, Feature.NUMA_TOPOLOGY, Feature.PMU_MAPPINGS,
              Feature.GROUP_DESC, Feature.CACHE, Feature.SAMPLE_TIME, Feature.MEM_TOPOLOGY,
              Feature.CLOCKID, Feature.COMPRESSED, Feature.CPU_PMU_CAPS,
              Feature.CLOCK_DATA, Feature.HYBRID_TOPOLOGY, Feature.PMU_CAPS,
              Feature.BPF_BTF)


def test_schemas_parse_build_round_trip_both_byte_orders():
    """parse -> build gives the section's bytes back (perf pads strings to 64,
    as the adapter does); the same value built big-endian parses back equal."""
    samples = _corpus_and_recorded_sections()
    if not samples:
        pytest.skip("no corpus at %s" % CORPUS)
    checked = set()
    for path, fid, data in samples:
        if fid not in ROUND_TRIP:
            continue
        try:
            value = F.parse_feature(fid, data, True)
        except CorruptError:
            continue
        built = F.build_feature(fid, value, True)
        if built != data:
            # Writers other than perf (simpleperf, quipper) pad differently:
            # then the rebuilt bytes must at least parse to the same value.
            assert F.parse_feature(fid, built, True) == value, (path, fid)
        big = F.build_feature(fid, value, False)
        assert F.parse_feature(fid, big, False) == value, (path, fid)
        checked.add(fid)
    assert len(checked) >= 15, checked


def test_fixed_size_schemas_sizeof_and_compiled():
    for fid, size in ((Feature.NRCPUS, 8), (Feature.TOTAL_MEM, 8), (Feature.SAMPLE_TIME, 16),
                      (Feature.CLOCKID, 8), (Feature.DIR_FORMAT, 8), (Feature.COMPRESSED, 20),
                      (Feature.CLOCK_DATA, 24)):
        for little in (True, False):
            schema = F.feature_schemas(little)[fid]
            assert schema.sizeof() == size
            raw = bytes(range(1, size + 1))
            if fid == Feature.CLOCK_DATA:
                raw = (b"\1\0\0\0" if little else b"\0\0\0\1") + raw[4:]
            compiled = schema.compile()
            assert compiled.parse(raw) == schema.parse(raw)
            assert schema.build(schema.parse(raw)) == raw


# ------------------------------------------------------------ bad input
def test_strings_without_nul_and_unknown_features():
    assert F.parse_feature(Feature.HOSTNAME, b"\4\0\0\0abcd", True) == "abcd"
    assert F.parse_feature(Feature.HOSTNAME, b"\0\0\0\4abcd", False) == "abcd"
    raw = F.parse_feature(200, b"\1\2\3", True)
    assert isinstance(raw, F.RawFeature) and raw.data == b"\1\2\3" and "unknown" in raw.note
    with pytest.raises(CorruptError) as info:
        F.parse_feature(Feature.HOSTNAME, b"\xff\0\0\0abcd", True, path="x.data", offset=64)
    assert info.value.path == "x.data" and info.value.offset == 64
    # a count far larger than the section is refused before anything is read
    with pytest.raises(CorruptError, match="count"):
        F.parse_feature(Feature.CMDLINE, b"\xff\xff\xff\xff" + bytes(64), True)
    with pytest.raises(CorruptError):
        F.parse_feature(Feature.EVENT_DESC, struct.pack("<II", 0xffffffff, 128), True)
    with pytest.raises(CorruptError):
        parse_tracing_data(b"\x17\x08\x44tracing0.6\0\0\x08" + b"\0\x10\0\0header_pag")


def test_corrupted_sections_raise_only_corrupt_error():
    rng = random.Random(20261129)
    samples = _corpus_and_recorded_sections()
    if not samples:
        pytest.skip("no corpus at %s" % CORPUS)
    for _, fid, data in samples:
        cuts = sorted({0, 1, 3, 4, 5, 8, len(data) // 2, len(data) - 1})
        variants = [data[:c] for c in cuts if c < len(data)]
        for _ in range(6):
            b = bytearray(data)
            pos = rng.randrange(len(b))
            if rng.random() < 0.5 and len(b) >= 4:
                pos = min(pos, len(b) - 4)
                b[pos:pos + 4] = rng.choice((b"\xff\xff\xff\xff", b"\0\0\0\0", b"\0\0\1\0"))
            else:
                b[pos] = rng.randrange(256)
            variants.append(bytes(b))
        for variant in variants:
            for little in (True, False):
                try:
                    F.parse_feature(fid, variant, little)
                except CorruptError:
                    pass


def test_build_id_records_sizes_and_the_pidless_layout():
    def record(misc, build_id, name, size_byte=0, pid=None):
        fname = name.encode() + b"\0"
        fname += bytes(-len(fname) % 64)
        body = (b"" if pid is None else struct.pack("<i", pid)) + build_id.ljust(20, b"\0") + \
            bytes([size_byte]) + bytes(3) + fname
        return struct.pack("<IHH", 0, misc, 8 + len(body)) + body
    bid = bytes(range(1, 21))
    data = record(1 | F.MISC_BUILD_ID_SIZE, bid[:16], "[kernel.kallsyms]", 16, pid=-1) + \
        record(2, bid, "/usr/lib/libc.so.6", 0, pid=1234)
    got = F.parse_feature(Feature.BUILD_ID, data, True)
    assert [(r["pid"], r["build_id"], r["filename"]) for r in got] == [
        (-1, bid[:16], "[kernel.kallsyms]"), (1234, bid, "/usr/lib/libc.so.6")]
    # perf before 2.6.34 wrote no pid; perf recognises the table by the kernel's
    # name read 4 bytes late, and gives host records pid -1, guest ones 0.
    old = record(1, bid, "[kernel.kallsyms]") + record(5, bid, "/guest/lib.so")
    got = F.parse_feature(Feature.BUILD_ID, old, True)
    assert [(r["pid"], r["filename"]) for r in got] == [(-1, "[kernel.kallsyms]"),
                                                        (0, "/guest/lib.so")]
    with pytest.raises(CorruptError):
        F.parse_feature(Feature.BUILD_ID, data[:-1], True)
    with pytest.raises(CorruptError):      # a record shorter than its fixed part
        F.parse_feature(Feature.BUILD_ID, struct.pack("<IHH", 0, 1, 20) + bytes(12), True)


def test_pipe_mode_tracing_data_record():
    """HEADER_TRACING_DATA in pipe mode carries the same layout (perf pads the
    record to 8 bytes after it)."""
    path = os.path.join(CORPUS, "perfparser__probe.data.stream")
    if not os.path.exists(path):
        pytest.skip("corpus file absent")
    import perfdata
    with perfdata.open(path) as pf:
        for _ in pf.records(order="file"):
            pass
        data = pf.feature_bytes(Feature.TRACING_DATA)
        td = pf.feature(Feature.TRACING_DATA)
    assert td.size <= len(data) < td.size + 8
    ev = td.find_event("probe_untitled1", "main")
    assert ev is not None and ev.id == 0x531
