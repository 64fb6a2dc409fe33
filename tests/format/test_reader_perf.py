"""The reader against perf itself, on files recorded here with perf (conftest's
`recorded` fixture) and on the corpus files perf 6.1 reads.

* `perfdata stats` equals `perf report --stats`;
* the samples equal `perf script -F pid,tid,time[,cpu][,period],ip,event -G --ns`
  (same number, same fields, same time order; a READ-group sample once per
  member, with the member's period as the delta of its count, as perf's
  deliver_sample_group does);
* the frame-pointer callchains equal what `perf script -F ip` prints;
* one recording as a file and piped through `perf inject -o -` holds the same
  records (modulo the ATTR/FEATURE records perf adds in pipe mode), and so does a
  copy with its data section zstd-compressed as perf -z writes it;
* delivery order of samples and task/mmap records, kernel records against
  `perf report -D` (offset, size, type, time, MMAP/MMAP2/COMM/FORK/EXIT fields),
  features against `perf report --header-only`, branch stacks, addr/weight/
  data_src and tracepoint fields against `perf script`;
* synthetic files (both byte orders, pipe, PERFFILE magic, overlapping rounds)
  read by perf as by us.
Skips without perf (the recorded files also when perf cannot record here).
"""
import re
import os
import subprocess
import tempfile

import pytest

import perfdata
from perfdata.format.constants import (ReadFormat as RF, RecordType as RT, SampleType as ST,
                                       is_callchain_context)

from conftest import (PERF, corpus_dir, have_corpus, need, requires_perf, requires_perf_tool,
                      run_cli)
from synth import plain

# Tests on recorded files skip through the `recorded` fixture when perf cannot
# record; the others need only the perf tool.
pytestmark = requires_perf_tool

RECORDED = ["fp", "plain", "dwarf", "zstd", "twoev", "tracepoint", "threads", "group",
            "pipe", "fp_inject_pipe", "zstd_inject_pipe"]
PERF_NOISE = ("unexpected end of event stream", "Failed to process auxtrace index")
SCRIPT_LINE = re.compile(r"^\s*(-?\d+)/(-?\d+)\s+(?:\[(-?\d+)\]\s+)?(\d+)\.(\d+):\s+"
                         r"(?:(\d+)\s+)?(\S+):\s+([0-9a-f]+)")


_EMPTY_HOME = tempfile.mkdtemp(prefix="perfdata-test-home.")


def perf_out(args, timeout=120):
    # An empty HOME: perf must not pick up whatever ~/.debug holds here.
    env = dict(os.environ, HOME=_EMPTY_HOME)
    res = subprocess.run([PERF] + args, capture_output=True, timeout=timeout, env=env)
    return res.stdout.decode("utf-8", "replace"), res.stderr.decode("utf-8", "replace")


def _normalise(text):
    return [line.rstrip() for line in text.splitlines()
            if line.strip() and not any(noise in line for noise in PERF_NOISE)]


# perf 6.1 quirks on recorded files, with the reason.
STATS_QUIRKS = {
    "zstd_inject_pipe": "perf 6.1 `report --stats` fails on COMPRESSED records in pipe "
                        "mode ('Couldn't decompress data ... failed to process type: 81'), "
                        "even on its own inject output; `perf script` reads the same file",
}


@pytest.mark.parametrize("name", RECORDED)
def test_stats_equal_perf_report(recorded, name):
    if name in STATS_QUIRKS:
        pytest.skip(STATS_QUIRKS[name])
    path = need(recorded, name)
    want, _ = perf_out(["report", "-i", str(path), "--stats"])
    assert "TOTAL events" in want
    rc, got, err = run_cli(["stats", str(path)])
    assert rc == 0, err
    assert _normalise(got) == _normalise(want)


# ------------------------------------------------------------------ samples
def script_fields(pf):
    if pf.is_pipe:
        for _ in pf.records(order="file"):     # attrs arrive as records
            pass
    st_all = [ea.sample_type for ea in pf.attrs]
    fields = ["pid", "tid", "time"]
    if all(st & ST.CPU for st in st_all):
        fields.append("cpu")
    if all(st & ST.PERIOD for st in st_all) or any(
            st & ST.READ and ea.read_format & RF.GROUP for st, ea in zip(st_all, pf.attrs)):
        fields.append("period")
    return fields + ["ip", "event"]


def perf_samples(path, fields):
    # --no-itrace: the samples as recorded, not those decoded from AUX traces
    out, err = perf_out(["script", "-i", str(path), "-F", ",".join(fields), "-G", "--ns",
                         "--no-itrace"])
    rows = []
    for line in out.splitlines():
        m = SCRIPT_LINE.match(line)
        assert m, (line, err[-500:])
        pid, tid, cpu, sec, nsec, period, event, ip = m.groups()
        row = {"pid": int(pid), "tid": int(tid), "time": int(sec) * 10**9 + int(nsec),
               "event": event, "ip": int(ip, 16)}
        if cpu is not None:
            row["cpu"] = int(cpu)
        if period is not None:
            row["period"] = int(period)
        rows.append(row)
    return rows


def our_samples(path, fields):
    """Samples in time order, as perf script prints them."""
    pf = perfdata.open(str(path))
    pf.resolve_event_names()
    rows = []
    last_value = {}
    for rec in pf.samples():
        s = rec.parse()
        ea = rec.attr
        base = {"pid": _s32(s["pid"]), "tid": _s32(s["tid"]), "time": s["time"],
                "ip": s["ip"]}
        if "cpu" in fields:
            base["cpu"] = s.get("cpu", -1)
        if ea.sample_type & ST.READ and ea.read_format & RF.GROUP:
            # perf's deliver_sample_group: once per member, period = count delta
            for v in s["read"]["values"]:
                member = pf.id_to_attr.get(v["id"])
                if member is None:
                    continue
                period = v["value"] - last_value.get(v["id"], 0)
                last_value[v["id"]] = v["value"]
                if not period:
                    continue
                rows.append(dict(base, event=member.name, period=period))
            continue
        row = dict(base, event=ea.name)
        if "period" in fields:
            row["period"] = s["period"]
        rows.append(row)
    return rows


def _s32(v):
    return v - (1 << 32) if v >= 1 << 31 else v


def compare_samples(path, drop=()):
    pf = perfdata.open(str(path))
    fields = [f for f in script_fields(pf) if f not in drop]
    want = perf_samples(path, fields)
    got = our_samples(path, fields)
    assert want, "perf script printed no sample"
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        w_event, g_event = w.pop("event"), g.pop("event")
        assert g == w, (i, g, w)
        assert g_event == w_event or g_event.startswith(w_event + ":"), (i, g_event, w_event)


@pytest.mark.parametrize("name", RECORDED)
def test_samples_equal_perf_script(recorded, name):
    compare_samples(need(recorded, name))


def corpus_files_perf_reads():
    if not have_corpus():
        return []
    root = corpus_dir()
    names = []
    for path in sorted((root / "perfdata").iterdir()):
        oracle = root / "oracle" / (path.name + ".stats.txt")
        if not oracle.is_file():
            continue
        text = oracle.read_text(errors="replace")
        if "TOTAL events" in text and "Error:" not in text and \
                "SAMPLE events" in text and not path.name.startswith("quipper-fuzz"):
            names.append(path.name)
    return names


# perf script quirks on corpus files, with the reason.
SCRIPT_QUIRKS = {
    "perfparser__probe.data.stream": "perf 6.1 stops after the pipe TRACING_DATA record",
}


@pytest.mark.parametrize("name", corpus_files_perf_reads())
def test_corpus_samples_equal_perf_script(name):
    if name in SCRIPT_QUIRKS:
        pytest.skip(SCRIPT_QUIRKS[name])
    compare_samples(corpus_dir() / "perfdata" / name)


@pytest.mark.parametrize("name", RECORDED)
def test_fast_decoder_agrees_with_schema(recorded, name):
    """The decoder derived from the schema equals schema.parse() on every sample."""
    pf = perfdata.open(str(need(recorded, name)))
    n = 0
    for rec in pf.records(order="file"):
        if rec.type == RT.SAMPLE:
            assert plain(rec.attr.decode_sample(rec.body)) == \
                plain(rec.attr.schema.parse(bytes(rec.body))), rec
            n += 1
    assert n > 0


# ---------------------------------------------------------------- callchains
def perf_callchains(path):
    out, _ = perf_out(["script", "-i", str(path), "-F", "ip", "--ns"])
    chains, cur = [], None
    for line in out.splitlines():
        if not line.strip():
            if cur is not None:
                chains.append(cur)
            cur = None
            continue
        cur = (cur or []) + [int(line.split()[0], 16)]
    if cur is not None:
        chains.append(cur)
    return chains


@pytest.mark.parametrize("name", ["fp", "zstd", "pipe"])
def test_fp_callchains_equal_perf_script(recorded, name):
    path = need(recorded, name)
    want = perf_callchains(path)
    pf = perfdata.open(str(path))
    got = []
    for rec in pf.samples():
        ips = rec.parse()["callchain"]["ips"]
        got.append([ip for ip in ips if not is_callchain_context(ip)])
    assert len(got) == len(want)
    # perf prints an address inside a mapped file relative to the mapping
    # (map__map_ip: ip - start + pgoff), kernel addresses as they are.  Both
    # start and pgoff are page-aligned, so the page offset is kept.
    def same(g, w):
        return g == w or (g < 1 << 63 and g > w and (g - w) % 4096 == 0)
    for i, (g, w) in enumerate(zip(got, want)):
        assert len(g) == len(w), (i, [hex(x) for x in g], [hex(x) for x in w])
        assert all(same(a, b) for a, b in zip(g, w)), (i, g, w)
    kernel = [a for g in got for a in g if a >= 1 << 63]
    assert kernel and len(kernel) < sum(map(len, got))


# -------------------------------------------------------------- equivalence
def _counts(path, skip=()):
    pf = perfdata.open(str(path))
    counts = {}
    for rec in pf.records(order="file", include_compressed=True):
        if rec.type not in skip:
            counts[rec.type] = counts.get(rec.type, 0) + 1
    return counts


@pytest.mark.parametrize("name", ["fp", "zstd"])
def test_file_and_inject_pipe_hold_the_same_records(recorded, name):
    plain_path = need(recorded, name)
    pipe_path = need(recorded, name + "_inject_pipe")
    pipe_extras = (RT.HEADER_ATTR, RT.HEADER_FEATURE, RT.HEADER_BUILD_ID,
                   RT.HEADER_TRACING_DATA, RT.HEADER_EVENT_TYPE)
    assert _counts(plain_path) == _counts(pipe_path, skip=pipe_extras)
    assert _counts(plain_path)[RT.SAMPLE] > 50
    a = [plain(r.parse()) for r in perfdata.open(str(plain_path)).samples()]
    b = [plain(r.parse()) for r in perfdata.open(str(pipe_path)).samples()]
    assert a == b
    pa, pb = perfdata.open(str(plain_path)), perfdata.open(str(pipe_path))
    list(pb.records())
    assert [ea.attr for ea in pa.attrs] == [ea.attr for ea in pb.attrs]
    # the feature sections arrive as HEADER_FEATURE records; perf inject
    # writes them anew from the machine (free memory, its own cmdline...), so
    # compare the ones that do not change on this machine
    from perfdata.format.constants import Feature
    static = {Feature.HOSTNAME, Feature.OSRELEASE, Feature.VERSION, Feature.ARCH,
              Feature.NRCPUS, Feature.CPUDESC, Feature.CPUID, Feature.TOTAL_MEM,
              Feature.CPU_TOPOLOGY, Feature.EVENT_DESC}
    common = set(pa.feature_ids) & set(pb.feature_ids) & static
    assert {Feature.HOSTNAME, Feature.OSRELEASE, Feature.NRCPUS} <= common
    for fid in common:
        assert plain(pa.feature(fid)) == plain(pb.feature(fid)), Feature(fid).name


def test_threads_directory_reads_every_data_file(recorded):
    path = need(recorded, "threads")
    if not path.is_dir():
        pytest.skip("this perf wrote a single file for --threads")
    pf = perfdata.open(str(path))
    assert pf.is_directory and pf.data_files
    files = {rec.file for rec in pf.records(order="file")}
    assert 0 in files and len(files) > 1


@requires_perf
def test_live_pipe_from_perf_record(tmp_path):
    """perf record -o - | tee copy | perfdata stats -: what the reader counts
    from a live pipe equals perf report --stats on the copy."""
    from conftest import REPO, WORKLOAD
    import sys
    copy = tmp_path / "live.data"
    rec = subprocess.Popen([PERF, "record", "-q", "-g", "-o", "-", "--"] + WORKLOAD,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    tee = subprocess.Popen(["tee", str(copy)], stdin=rec.stdout, stdout=subprocess.PIPE)
    rec.stdout.close()
    ours = subprocess.run([sys.executable, "-c", "import sys, cli; sys.exit(cli.main())",
                           "stats", "-"], stdin=tee.stdout, capture_output=True,
                          cwd=str(REPO), timeout=120)
    tee.stdout.close()
    rec.wait(60)
    tee.wait(60)
    assert ours.returncode == 0, ours.stderr
    want, _ = perf_out(["report", "-i", str(copy), "--stats"])
    assert "SAMPLE events" in want
    assert _normalise(ours.stdout.decode()) == _normalise(want)


# ------------------------------------------------------- time order, all kinds
KIND_LINE = re.compile(r"^\s*-?\d+/-?\d+\s+(?:\[-?\d+\]\s+)?(\d+)\.(\d+):\s+(.*)$")
ORDERED_KINDS = {RT.MMAP: "MMAP", RT.MMAP2: "MMAP2", RT.COMM: "COMM", RT.FORK: "FORK",
                 RT.EXIT: "EXIT", RT.SAMPLE: "SAMPLE"}


def perf_delivery_order(path):
    out, _ = perf_out(["script", "-i", str(path), "-F", "pid,tid,time,event", "-G", "--ns",
                       "--show-task-events", "--show-mmap-events", "--no-itrace"])
    seq = []
    for line in out.splitlines():
        m = KIND_LINE.match(line)
        if not m:
            continue
        rest = m.group(3)
        kind = re.match(r"PERF_RECORD_([A-Z0-9_]+)", rest)
        seq.append((kind.group(1) if kind else "SAMPLE",
                    int(m.group(1)) * 10**9 + int(m.group(2))))
    return seq


def check_delivery_order(path):
    pf = perfdata.open(str(path))
    ours = [(ORDERED_KINDS[r.type], r.time or 0) for r in pf.records()
            if r.type in ORDERED_KINDS]
    if any(ea.sample_type & ST.READ and ea.read_format & RF.GROUP for ea in pf.attrs):
        pytest.skip("perf script prints a group READ sample once per member")
    want = perf_delivery_order(path)
    assert want
    assert ours == want


@pytest.mark.parametrize("name", [n for n in RECORDED if n != "group"])
def test_delivery_order_equals_perf_script(recorded, name):
    """SAMPLE, MMAP, MMAP2, COMM, FORK and EXIT records in perf's delivery order
    (ordered events, FINISHED_ROUND, --threads files merged), with their times."""
    check_delivery_order(need(recorded, name))


@pytest.mark.parametrize("name", corpus_files_perf_reads())
def test_corpus_delivery_order_equals_perf_script(name):
    if name in SCRIPT_QUIRKS:
        pytest.skip(SCRIPT_QUIRKS[name])
    check_delivery_order(corpus_dir() / "perfdata" / name)


# ------------------------------------------- callchains, branch stacks, addr
def _corpus_with(predicate):
    out = []
    for name in corpus_files_perf_reads():
        try:
            pf = perfdata.open(str(corpus_dir() / "perfdata" / name))
        except perfdata.PerfDataError:
            continue
        if pf.attrs and predicate(pf.attrs):
            out.append(name)
    return out


BRANCH_CALL_STACK = 1 << 11     # PERF_SAMPLE_BRANCH_CALL_STACK


def _kernel_callchain_only(attrs):
    return all(ea.sample_type & ST.CALLCHAIN and not ea.sample_type & ST.STACK_USER
               for ea in attrs)


@pytest.mark.parametrize("name", _corpus_with(_kernel_callchain_only))
def test_corpus_callchains_equal_perf_script(name):
    path = corpus_dir() / "perfdata" / name
    pf = perfdata.open(str(path))
    if any(ea.attr["branch_sample_type"] & BRANCH_CALL_STACK for ea in pf.attrs):
        pytest.skip("LBR call-stack mode: perf script stitches the user part from the "
                    "branch stack, not from the recorded callchain")
    want = perf_callchains(path)
    got = [[ip for ip in r.parse()["callchain"]["ips"] if not is_callchain_context(ip)]
           for r in pf.samples()]
    assert len(got) == len(want)

    def same(g, w):
        return g == w or (g < 1 << 63 and g > w and (g - w) % 4096 == 0)
    for i, (g, w) in enumerate(zip(got, want)):
        assert len(g) == len(w) and all(same(a, b) for a, b in zip(g, w)), i


def perf_brstack(path):
    out, _ = perf_out(["script", "-i", str(path), "-F", "brstack", "--no-itrace"])
    rows = []
    for line in out.splitlines():
        entries = []
        for tok in line.split():
            f = tok.split("/")
            entries.append((int(f[0], 16), int(f[1], 16), f[2],
                            int(f[5]) if f[5] not in ("-", "") else 0))
        rows.append(entries)
    return rows


@pytest.mark.parametrize("name", _corpus_with(
    lambda attrs: all(ea.sample_type & ST.BRANCH_STACK for ea in attrs)))
def test_corpus_branch_stacks_equal_perf_script(name):
    """from/to addresses, M(ispredicted)/P(redicted) and cycles of every entry."""
    path = corpus_dir() / "perfdata" / name
    want = perf_brstack(path)
    got = []
    for rec in perfdata.open(str(path)).samples():
        entries = []
        for e in rec.parse()["branch_stack"]["entries"]:
            flags = e["flags"]
            mp = "M" if flags & 1 else ("P" if flags & 2 else "-")
            entries.append((e["from_ip"], e["to_ip"], mp, (flags >> 4) & 0xffff))
        got.append(entries)
    assert len(got) == len(want)
    assert got == want


@pytest.mark.parametrize("name", _corpus_with(
    lambda attrs: all(ea.sample_type & ST.ADDR for ea in attrs)))
def test_corpus_addr_weight_data_src_equal_perf_script(name):
    path = corpus_dir() / "perfdata" / name
    pf = perfdata.open(str(path))
    st = pf.attrs[0].sample_type
    fields = ["addr"]
    has_src = all(ea.sample_type & ST.DATA_SRC for ea in pf.attrs)
    has_weight = all(ea.sample_type & (ST.WEIGHT | ST.WEIGHT_STRUCT) for ea in pf.attrs)
    fields += ["data_src"] if has_src else []
    fields += ["weight"] if has_weight else []
    out, _ = perf_out(["script", "-i", str(path), "-F", ",".join(fields), "--no-itrace",
                       "-G"])
    want = []
    for line in out.splitlines():
        tokens = line.split()
        row = [int(tokens[0], 16)]
        if has_src:
            row.append(int(tokens[1], 16))
        if has_weight:
            row.append(int(tokens[-1]))
        want.append(row)
    got = []
    for rec in pf.samples():
        s = rec.parse()
        row = [s["addr"]]
        if has_src:
            row.append(s["data_src"])
        if has_weight:
            w = s["weight"]
            row.append(w["var1_dw"] if isinstance(w, dict) else w)
        got.append(row)
    assert st and got == want


# ------------------------------------------------------------ tracepoints
def check_tracepoint_fields(path):
    """Fields decoded from RAW with the tracing data's formats equal the
    name=value pairs perf script -F trace prints (decimal numbers and strings
    without blanks; symbolic values such as prev_state=S are not compared)."""
    pf = perfdata.open(str(path))
    formats = pf.tracepoint_formats()
    out, _ = perf_out(["script", "-i", str(path), "-F", "trace", "--no-itrace"])
    lines = out.splitlines()
    samples = [r for r in pf.samples() if r.attr.attr["type"] == 2]
    assert len(lines) == len(samples)
    compared = 0
    for rec, line in zip(samples, lines):
        fmt = formats[rec.attr.attr["config"]]
        fields = fmt.decode(rec.parse()["raw"]["data"])
        for name, text in re.findall(r"(\w+)=(\S*)", line):
            value = fields.get(name)
            if isinstance(value, int) and re.fullmatch(r"-?\d+", text):
                assert int(text) == value, (rec, name, line)
                compared += 1
            elif isinstance(value, str) and text and value == value.strip() and " " not in value:
                assert text == value, (rec, name, line)
                compared += 1
        # uprobes and kprobes print their address as "(%lx)"
        probe = re.fullmatch(r"\(([0-9a-f]+)\)", line.strip())
        if probe and "__probe_ip" in fields:
            assert int(probe.group(1), 16) == fields["__probe_ip"], (rec, line)
            compared += 1
    assert compared > 0


def test_tracepoint_fields_equal_perf_script(recorded):
    check_tracepoint_fields(need(recorded, "tracepoint"))


@pytest.mark.parametrize("name", _corpus_with(lambda attrs: any(ea.attr["type"] == 2
                                                                for ea in attrs)))
def test_corpus_tracepoint_fields_equal_perf_script(name):
    if name in SCRIPT_QUIRKS:
        pytest.skip(SCRIPT_QUIRKS[name])
    check_tracepoint_fields(corpus_dir() / "perfdata" / name)


# ------------------------------------------------- synthetic files, perf as oracle
def synthetic_for_perf(little, seed, pipe=False, magic=None):
    """A file perf 6.1 reads: a cpu-clock event, COMM/MMAP2/FORK/EXIT and samples
    whose times overlap across FINISHED_ROUNDs (two CPUs' buffers), built with
    the reader's schemas in either byte order."""
    import random

    from perfdata.format.constants import MAGIC_V2, Feature
    from perfdata.format.features import build_feature
    from synth import Builder
    from test_reader_synthetic import make_attr, mmap2_body, sample_value
    rnd = random.Random(seed)
    st = ST.IP | ST.TID | ST.TIME | ST.PERIOD | ST.CPU | ST.ID | ST.CALLCHAIN
    # perf reads the PERFFILE magic only with attrs of PERF_ATTR_SIZE_VER0..4
    # (try_all_file_abis): a 104-byte attr then, as the perf of that era wrote
    a = make_attr(st, [7], size=104 if magic else 128, type=1, config=0,
                  sample_period=4000,
                  flags={"sample_id_all": 1, "mmap2": 1, "comm": 1, "task": 1})
    b = Builder(little)
    trailer = dict(pid=5, tid=5, id=7, cpu=0)
    recs = [b.kernel_record(RT.COMM, {"pid": 5, "tid": 5, "comm": "synth\0\0"}, a,
                            time=900, **trailer),
            b.record(RT.MMAP2, mmap2_body(b) + b.trailer(a, time=901, **trailer), misc=2)]
    base, seq = 1000, 0
    for _ in range(6):
        for _ in range(rnd.randint(1, 15)):
            seq += 1
            t = base + rnd.randint(-300, 500)
            kind = rnd.random()
            if kind < 0.85:
                v = sample_value(a, seq % 50, 7)
                v.update(time=t, period=seq, cpu=rnd.randint(0, 1), pid=5, tid=5)
                recs.append(b.sample(a, v, misc=2))
            elif kind < 0.93:
                recs.append(b.kernel_record(RT.FORK, {"pid": 5, "ppid": 5, "tid": 100 + seq,
                                                      "ptid": 5, "time": t}, a, time=t,
                                            **trailer))
            else:
                recs.append(b.kernel_record(RT.COMM, {"pid": 5, "tid": 5,
                                                      "comm": "c%d\0" % seq}, a, time=t,
                                            **trailer))
        base += 400
        recs.append(b.record(RT.FINISHED_ROUND, b""))
    recs.append(b.kernel_record(RT.EXIT, {"pid": 5, "ppid": 5, "tid": 5, "ptid": 5,
                                          "time": base + 1000}, a, time=base + 1000,
                                **trailer))
    if pipe:
        return b.pipe([a], recs)
    feats = {Feature.HOSTNAME: build_feature(Feature.HOSTNAME, "synth", little)}
    return b.file([a], recs, feats, magic=magic or MAGIC_V2)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("form", ["le", "be", "le-pipe", "be-pipe", "le-v1magic",
                                  "be-v1magic"])
def test_synthetic_files_read_by_perf_as_by_us(form, seed, tmp_path):
    """perf 6.1 byte-swaps foreign-endian files: it is the oracle for our
    big-endian and pipe builds, and for the round order of overlapping times."""
    from perfdata.format.constants import MAGIC_V1
    path = tmp_path / ("%s-%d.data" % (form, seed))
    path.write_bytes(synthetic_for_perf(form.startswith("le"), seed, pipe="pipe" in form,
                                        magic=MAGIC_V1 if "v1" in form else None))
    want, _ = perf_out(["report", "-i", str(path), "--stats"])
    assert "SAMPLE events" in want, want
    rc, got, err = run_cli(["stats", str(path)])
    assert rc == 0, err
    assert _normalise(got) == _normalise(want)
    # perf 6.1 does not put the two u32 halves of CPU (cpu, reserved) back in
    # order for a big-endian pipe-mode file (it prints cpu 0 where the file
    # says 1); it does for file mode.  The values we read are the ones built
    # (test_reader_synthetic checks them).
    compare_samples(path, drop=("cpu",) if form in ("be-pipe",) else ())
    check_delivery_order(path)


def timed_samples_file(events, little=True):
    """Samples with the given times (period = position) and 'R' = FINISHED_ROUND."""
    from perfdata.format.constants import Feature
    from perfdata.format.features import build_feature
    from synth import Builder
    from test_reader_synthetic import make_attr, sample_value
    a = make_attr(ST.IP | ST.TID | ST.TIME | ST.PERIOD, [], type=1, config=0,
                  sample_period=4000, flags={"sample_id_all": 1})
    b = Builder(little)
    recs = []
    for n, ev in enumerate(events):
        if ev == "R":
            recs.append(b.record(RT.FINISHED_ROUND, b""))
        else:
            v = sample_value(a, 1)
            v.update(time=ev, period=n, pid=5, tid=5)
            recs.append(b.sample(a, v, misc=2))
    feats = {Feature.HOSTNAME: build_feature(Feature.HOSTNAME, "synth", little)}
    return b.file([a], recs, feats)


ROUND_CASES = {
    # After a round empties the queue, perf's max_timestamp is the time of the
    # next event queued at the tail, even if lower than times already delivered
    # (queue_event() in ordered-events.c): the next round's limit can go down.
    "limit-goes-down": [1000, "R", 5000, "R", "R", 3000, 4000, "R", 4500, 4200, "R",
                        4100],
    "equal-times": [10, 10, 20, "R", 10, 20, 20, "R", 15, "R", 20, 10],
    "all-late": [100, 200, "R", 50, 60, "R", 10, "R", 5],
}


@pytest.mark.parametrize("case", ROUND_CASES)
def test_round_order_equals_perf(case, tmp_path):
    path = tmp_path / ("%s.data" % case)
    path.write_bytes(timed_samples_file(ROUND_CASES[case]))
    out, _ = perf_out(["script", "-i", str(path), "-F", "period", "--ns"])
    want = [int(line.split()[0]) for line in out.splitlines() if line.strip()]
    got = [r.parse()["period"] for r in perfdata.open(str(path)).samples()]
    assert len(want) == sum(1 for e in ROUND_CASES[case] if e != "R")
    assert got == want


@pytest.mark.parametrize("case", ROUND_CASES)
def test_out_of_order_count_equals_perf(case, tmp_path):
    """perf script's closing warning, "N out of order events recorded.":
    the records timed before the last one a round delivered."""
    path = tmp_path / ("%s.data" % case)
    path.write_bytes(timed_samples_file(ROUND_CASES[case]))
    _, err = perf_out(["script", "-i", str(path)])
    theirs = re.findall(r"^(\d+ out of order events recorded\.)$", err, re.M)
    pf = perfdata.open(str(path))
    assert sum(1 for _ in pf.records()) == len(ROUND_CASES[case])
    ours = [w for w in pf.warnings if "out of order" in w]
    assert ours == theirs


# ------------------------------------------------- kernel records vs perf -D
DUMP_HEAD = re.compile(r"^(?:-?\d+ )?(\d+) 0x([0-9a-f]+) \[0x([0-9a-f]+)\]: "
                       r"PERF_RECORD_([A-Z0-9_]+)(.*)$")
_HEX = r"(0x[0-9a-f]+|0)"
DUMP_MMAP2 = re.compile(r" (-?\d+)/(-?\d+): \[%s\(%s\) @ %s ([0-9a-f]+):([0-9a-f]+) (\d+) (\d+)\]:"
                        r" \S+ (.*)$" % (_HEX, _HEX, _HEX))
DUMP_MMAP = re.compile(r" (-?\d+)/(-?\d+): \[%s\(%s\) @ %s\]: \S+ (.*)$" % (_HEX, _HEX, _HEX))
DUMP_COMM = re.compile(r"(?: exec)?: (.*):(-?\d+)/(-?\d+)$")
DUMP_TASK = re.compile(r"\((-?\d+):(-?\d+)\):\((-?\d+):(-?\d+)\)$")


def perf_dump_kernel_records(path):
    """{offset: [(time, size, name, text)]} of the kernel records perf report -D
    prints (perf's own records are left out: perf 6.1 does not print all of
    them in pipe mode)."""
    from perfdata.format.constants import record_type_name
    kernel = {record_type_name(t) for t in range(1, 22)}
    out, _ = perf_out(["report", "-D", "-i", str(path)])
    recs = {}
    for line in out.splitlines():
        m = DUMP_HEAD.match(line)
        if m and m.group(4) in kernel:
            recs.setdefault(int(m.group(2), 16), []).append(
                (int(m.group(1)), int(m.group(3), 16), m.group(4), m.group(5)))
    return recs


def _task_fields(rec):
    """(got, pattern) for the records whose fields perf -D prints in full."""
    p = rec.parse()
    if rec.type == RT.MMAP2:
        return ((_s32(p["pid"]), _s32(p["tid"]), p["start"], p["len"], p["pgoff"], p["maj"],
                 p["min"], p["ino"], p["ino_generation"], p["filename"]), DUMP_MMAP2,
                (int, int, _h, _h, _h, _h, _h, int, int, str))
    if rec.type == RT.MMAP:
        return ((_s32(p["pid"]), _s32(p["tid"]), p["start"], p["len"], p["pgoff"],
                 p["filename"]), DUMP_MMAP, (int, int, _h, _h, _h, str))
    if rec.type == RT.COMM:
        return ((p["comm"], _s32(p["pid"]), _s32(p["tid"])), DUMP_COMM, (str, int, int))
    return ((_s32(p["pid"]), _s32(p["tid"]), _s32(p["ppid"]), _s32(p["ptid"])), DUMP_TASK,
            (int, int, int, int))


def _h(text):
    return int(text, 16)


# Files whose MMAP2 records have the Linux 3.12-3.15 layout (no prot/flags):
# perf 6.1 reads prot/flags from the name and the name from the trailer.
PRE316_MMAP2 = {"hotspot__perf.data.true.v2"}


def check_against_perf_dump(path):
    """Every kernel record perf report -D prints is ours at the same offset, with
    the same size, type and time; MMAP, MMAP2, COMM, FORK and EXIT fields equal."""
    from perfdata.format.constants import record_type_name
    want = perf_dump_kernel_records(path)
    pf = perfdata.open(str(path))
    # perf 6.1 counts pipe-mode offsets from the end of the 16-byte header
    shift = 16 if pf.is_pipe else 0
    want = {off + shift: v for off, v in want.items()}
    ours = {}
    compressed = False
    for rec in pf.records(order="file"):
        compressed |= rec.compressed
        if rec.type < 64 and not rec.compressed:
            ours.setdefault(rec.offset, []).append(rec)
    if compressed:
        # perf prints the records inside COMPRESSED ones at offsets of its own
        want = {off: v for off, v in want.items() if off in ours}
    if pf.data_files:
        pytest.skip("perf -D prints the offsets of each data file of a directory")
    assert want and sorted(ours) == sorted(want)
    checked = 0
    for off, recs in ours.items():
        assert len(recs) == len(want[off]) == 1, off
        rec, (time, size, name, text) = recs[0], want[off][0]
        assert (rec.size, record_type_name(rec.type), rec.time or 0) == (size, name, time), off
        if rec.type in (RT.MMAP, RT.MMAP2, RT.COMM, RT.FORK, RT.EXIT):
            got, pattern, conv = _task_fields(rec)
            m = pattern.search(text)
            assert m, (off, text)
            want_fields = tuple(c(g) for c, g in zip(conv, m.groups()))
            if rec.type == RT.MMAP2 and path.name in PRE316_MMAP2:
                # perf's name is garbage; the truth is the string at body offset 56
                assert got[-1] == bytes(rec.body[56:]).split(b"\0")[0].decode()
                got, want_fields = got[:-1], want_fields[:-1]
            assert got == want_fields, (off, text)
            checked += 1
    return checked


@pytest.mark.parametrize("name", [n for n in RECORDED if not n.startswith("zstd")])
def test_kernel_records_equal_perf_dump(recorded, name):
    assert check_against_perf_dump(need(recorded, name)) > 0


def _dump_params():
    out = []
    for name in corpus_files_perf_reads():
        out.append(name)
    return out


@pytest.mark.parametrize("name", _dump_params())
def test_corpus_kernel_records_equal_perf_dump(name):
    if name in SCRIPT_QUIRKS:
        pytest.skip(SCRIPT_QUIRKS[name])
    check_against_perf_dump(corpus_dir() / "perfdata" / name)


# ------------------------------------------------------- feature sections
def check_features_against_header_only(path):
    """The string and number features equal what perf report --header-only
    prints (compared where perf prints the line)."""
    from perfdata.format.constants import Feature as F
    out, _ = perf_out(["report", "--header-only", "-i", str(path)])
    lines = {}
    for line in out.splitlines():
        m = re.match(r"^# ([a-z ]+?)\s*: (.*)$", line)
        if m:
            lines.setdefault(m.group(1), m.group(2))
    pf = perfdata.open(str(path))

    def plain_value(fid):
        value = pf.feature(fid)
        assert value is not None, F(fid).name
        return value
    # perf prints "(null)" for a string section it failed to read (quipper's
    # armv7 file has an empty CPUDESC) and then stops reading the feature
    # sections after it: it prints "total memory : 0 kB" for that file, whose
    # TOTAL_MEM section says 2049120.  Compare only the features before.
    keys = (("hostname", F.HOSTNAME), ("os release", F.OSRELEASE),
            ("perf version", F.VERSION), ("arch", F.ARCH), ("nrcpus online", F.NRCPUS),
            ("cpudesc", F.CPUDESC), ("cpuid", F.CPUID), ("total memory", F.TOTAL_MEM),
            ("cmdline", F.CMDLINE))
    failed = min([fid for key, fid in keys if lines.get(key) == "(null)"], default=1 << 30)
    compared = 0
    for key, fid in keys:
        if key not in lines or fid >= failed:
            continue
        if fid == F.NRCPUS:
            nr = plain_value(fid)
            assert (nr["nr_cpus_online"], nr["nr_cpus_available"]) == \
                (int(lines["nrcpus online"]), int(lines["nrcpus avail"]))
        elif fid == F.TOTAL_MEM:
            assert "%d kB" % plain_value(fid) == lines[key]
        elif fid == F.CMDLINE:
            assert " ".join(plain_value(fid)) == lines[key].rstrip()
        else:
            assert plain_value(fid) == lines[key], key
        compared += 1
    # events: names (EVENT_DESC) and ids, in attr order
    events = []
    for line in out.splitlines():
        if line.startswith("# event : name = "):
            ids = re.search(r"\bid = \{ ([0-9, ]*) \}", line)
            events.append((line[len("# event : name = "):].split(", ")[0],
                           ids.group(1) if ids else ""))
    if events and failed > F.EVENT_DESC:
        pf.resolve_event_names()
        assert [(ea.name, ea.ids) for ea in pf.attrs] == \
            [(n, [int(i) for i in ids.split(",") if i.strip()]) for n, ids in events]
        compared += 1
    return compared


@pytest.mark.parametrize("name", [n for n in RECORDED if "pipe" not in n])
def test_features_equal_perf_header_only(recorded, name):
    path = need(recorded, name)
    assert check_features_against_header_only(path) >= 8


@pytest.mark.parametrize("name", corpus_files_perf_reads())
def test_corpus_features_equal_perf_header_only(name):
    check_features_against_header_only(corpus_dir() / "perfdata" / name)


# ------------------------------------------- the same records, zstd-compressed
def compress_data_section(src, chunk):
    """src with its data section cut every `chunk` bytes (records straddle
    pieces) into COMPRESSED records of one zstd stream, as perf record -z
    writes them, and a HEADER_COMPRESSED feature; attrs and other features kept."""
    import zstandard

    from perfdata.format.constants import Feature
    from perfdata.format.features import build_feature
    from synth import Attr, Builder
    pf = perfdata.open(str(src))
    b = Builder(pf.little)
    with open(src, "rb") as f:
        raw = f.read()
    start, size = pf.header["data"]["offset"], pf.header["data"]["size"]
    data = raw[start:start + size]
    cctx = zstandard.ZstdCompressor(level=1).compressobj()
    recs = []
    for pos in range(0, len(data), chunk):
        piece = cctx.compress(data[pos:pos + chunk])
        piece += cctx.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
        recs.append(b.record(RT.COMPRESSED, piece))      # perf does not pad these
    attrs = [Attr(dict(ea.attr), ea.ids) for ea in pf.attrs]
    feats = {fid: bytes(pf.feature_bytes(fid)) for fid in pf.features}
    feats[Feature.COMPRESSED] = build_feature(Feature.COMPRESSED, {
        "version": 0, "type": 1, "level": 1, "ratio": 3, "mmap_len": 528384}, pf.little)
    return b.file(attrs, recs, feats)


@pytest.mark.parametrize("name,chunk", [("fp", 20000), ("fp", 7919), ("dwarf", 30011)])
def test_compressed_copy_holds_the_same_records(recorded, name, chunk, tmp_path):
    """Equivalence of plain and -z: one recording, and a copy of it whose data
    section is zstd-compressed.  perf reads the copy as the original (so the
    copy is what perf -z would write) and so do we, record for record."""
    src = need(recorded, name)
    path = tmp_path / ("%s.z.data" % name)
    path.write_bytes(compress_data_section(src, chunk))
    want, _ = perf_out(["report", "-i", str(path), "--stats"])
    plain_stats, _ = perf_out(["report", "-i", str(src), "--stats"])
    def counts(text):
        return [line for line in _normalise(text) if "TOTAL" not in line and
                "%" not in line and "COMPRESSED" not in line]
    # per-event counts equal; per-type lines carry percentages of a new total
    assert counts(want) == counts(plain_stats)
    rc, got, err = run_cli(["stats", str(path)])
    assert rc == 0, err
    assert _normalise(got) == _normalise(want)
    a = [(r.type, r.misc, bytes(r.body)) for r in perfdata.open(str(src)).records(order="file")]
    c = [(r.type, r.misc, bytes(r.body)) for r in perfdata.open(str(path)).records(order="file")]
    assert a == c
    assert [r.time for r in perfdata.open(str(src)).records()] == \
        [r.time for r in perfdata.open(str(path)).records()]
