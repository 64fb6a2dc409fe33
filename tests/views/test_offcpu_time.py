"""`perfdata offcpu` on the files of `perf record --off-cpu` (perf 5.20 on;
Debian's perf 6.1 is built without it and cannot record them): files built
here with the reader's own schemas (tests/synth.py) in the two forms perf
writes (perfdata/views/offcpu_time.py says which perf writes which, from
its sources: tools/perf/util/bpf_off_cpu.c, bpf_skel/off_cpu.bpf.c,
util/evsel.c's __set_offcpu_sample).

Their stacks are addresses in a program built now (tests/progs/
offcpu_wakeups.c, its functions' addresses read from its symbol table),
mapped by an MMAP2 record.  The older form, a sample with TID, PERIOD and
CALLCHAIN, is read by perf 6.1 as any sample: perfdata's folded waits must
equal the stacks and periods `perf script` prints of it.  The newer form
(the wait in the raw data; a long wait its own sample at its end, the short
ones summed at the end of the file) perf 6.1 cannot read: the folded waits,
the thread table and --time must say what was built.
"""
import re
import shutil
import subprocess

import pytest

from conftest import PERF, TESTS_DIR, requires_perf, run_cli
from perfdata.format.constants import CallchainContext, Feature, RecordType as RT, \
    SampleType as ST
from test_offcpu_export import offcpu_collapse

PROG = TESTS_DIR / "progs" / "offcpu_wakeups.c"
OFF_CPU_TIMESTAMP = 0xFFFFFFFF00000000
BASE = 0x555555554000
PID, MAIN, WORKER = 4000, 4000, 4001
# (tid, stack outermost first, ns) of the waits built
WAITS = [(WORKER, ["piper", "wait_pipe"], 300_000_000),
         (WORKER, ["condwaiter", "wait_cond"], 120_000_000),
         (MAIN, ["main"], 45_000_000)]
# perf 6.14's form: waits over the threshold as samples at their end (tid,
# stack, ns, end time), the rest summed at the end (WAITS, as above)
DIRECT = [(WORKER, ["piper", "wait_pipe"], 200_000_000, 5_000_000_000),
          (MAIN, ["waker", "wake_cond"], 80_000_000, 5_100_000_000)]
COMMON = ST.IDENTIFIER | ST.IP | ST.TID | ST.TIME | ST.CPU | ST.PERIOD


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """(the program built, {function: address in it})."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    from elftools.elf.elffile import ELFFile
    exe = tmp_path_factory.mktemp("offcpu_time") / "offcpu_wakeups"
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(exe),
                    str(PROG)], check=True)
    with open(exe, "rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        funcs = {s.name: s["st_value"] for s in symtab.iter_symbols()
                 if s["st_info"]["type"] == "STT_FUNC" and s["st_value"]}
    return exe, funcs


def _ips(funcs, stack):
    """A callchain's ips for a stack (outermost first): the user context
    marker, then the leaf and its callers (return addresses inside each)."""
    return [CallchainContext.USER] + [BASE + funcs[name] + 4 for name in reversed(stack)]


def _event_desc(attrs_names):
    """HEADER_EVENT_DESC naming the events, as perf record writes it
    (write_event_desc: nr, attr size, then each attr, its number of ids, its
    name as do_write_string writes a string, its ids)."""
    import struct

    from perfdata.format.attr import attr_schema
    out = struct.pack("<II", len(attrs_names), 128)
    for a, name in attrs_names:
        text = name.encode() + b"\0"
        text += bytes(-len(text) % 64)
        out += attr_schema(128, True).build(a.value) + struct.pack("<I", len(a.ids))
        out += struct.pack("<I", len(text)) + text + struct.pack("<%dQ" % len(a.ids), *a.ids)
    return out


def _file(exe, sample_type, samples):
    """A perf.data of the offcpu-time event (and perf's dummy event, which
    carries the COMM and MMAP2 records): samples, as sample values."""
    from synth import Builder
    from test_reader_synthetic import make_attr
    b = Builder(True)
    dummy = make_attr(COMMON, [1], type=1, config=9, sample_period=1,
                      flags={"sample_id_all": 1, "comm": 1, "mmap": 1, "mmap2": 1, "task": 1})
    offcpu = make_attr(sample_type, [2], type=1, config=10, sample_period=1,
                       flags={"sample_id_all": 1, "freq": 1})
    trailer = {"identifier": 1, "pid": PID, "tid": MAIN, "time": 1000, "cpu": 0}
    recs = [b.kernel_record(RT.COMM, {"pid": PID, "tid": MAIN, "comm": "offcpu_wakeups\0"},
                            dummy, **trailer),
            b.kernel_record(RT.COMM, {"pid": PID, "tid": WORKER, "comm": "worker\0"},
                            dummy, **dict(trailer, tid=WORKER)),
            b.kernel_record(RT.MMAP2, {"pid": PID, "tid": MAIN, "start": BASE,
                                       "len": (exe.stat().st_size + 0xfff) & ~0xfff,
                                       "pgoff": 0, "maj": 0, "min": 0, "ino": 0,
                                       "ino_generation": 0, "prot": 5, "flags": 2,
                                       "filename": str(exe) + "\0"}, dummy, misc=2,
                            **trailer)]
    recs += [b.sample(offcpu, dict(identifier=2, cpu=0, cpu_res=0, **s), misc=2)
             for s in sorted(samples, key=lambda s: s["time"])]
    feats = {Feature.EVENT_DESC: _event_desc([(dummy, "dummy:u"), (offcpu, "offcpu-time")])}
    return b.file([dummy, offcpu], recs, feats)


def _older_form(funcs):
    """perf 5.20-6.13: one sample per (thread, stack) at the end."""
    return [{"ip": _ips(funcs, stack)[1], "pid": PID, "tid": tid,
             "time": OFF_CPU_TIMESTAMP + n, "period": ns,
             "callchain": {"nr": len(stack) + 1, "ips": _ips(funcs, stack)}}
            for n, (tid, stack, ns) in enumerate(WAITS)]


def _raw(first, second, ns, ips):
    import struct
    data = struct.pack("<IIQQ%dQQ" % len(ips), first, second, ns, len(ips), *ips, 0)
    return {"size": len(data) + 4, "data": data + bytes(4)}


def _newer_form(funcs, thread_first=True):
    """perf 6.14 on: the wait in the raw data, the sample's own TID and
    PERIOD placeholders; the direct samples' u64 tgid << 32 | pid (the
    thread first; thread_first=False: the process first, as the summed
    ones' pid << 32 | tgid)."""
    out = [{"ip": 0, "pid": PID, "tid": MAIN, "time": end, "period": 1,
            "raw": _raw(tid, PID, ns, _ips(funcs, stack)) if thread_first
            else _raw(PID, tid, ns, _ips(funcs, stack))} for tid, stack, ns, end in DIRECT]
    out += [{"ip": 0, "pid": 0, "tid": 0, "time": OFF_CPU_TIMESTAMP + n, "period": 0,
             "raw": _raw(PID, tid, ns, _ips(funcs, stack))}
            for n, (tid, stack, ns) in enumerate(WAITS)]
    return out


def _expected(waits):
    comm = {MAIN: "offcpu_wakeups", WORKER: "worker"}
    want = {}
    for tid, stack, ns in waits:
        key = ";".join(["%s-%d/%d" % (comm[tid], PID, tid)] + stack)
        want[key] = want.get(key, 0) + ns
    return want


@requires_perf
def test_older_form_is_what_perf_script_reads(program, tmp_path):
    exe, funcs = program
    path = tmp_path / "offcpu_old.data"
    path.write_bytes(_file(exe, COMMON | ST.CALLCHAIN, _older_form(funcs)))
    res = subprocess.run([PERF, "script", "-i", str(path), "-F", "comm,pid,tid,period,ip,sym",
                          "--no-inline"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    theirs = {}
    for block in res.stdout.strip().split("\n\n"):
        lines = block.strip().splitlines()
        m = re.match(r"\s*(\S+)\s+(\d+)/(\d+)\s+(\d+)", lines[0])
        frames = [line.split()[1] for line in lines[1:]]
        key = ";".join(["%s-%s/%s" % m.group(1, 2, 3)] + frames[::-1])
        theirs[key] = theirs.get(key, 0) + int(m.group(4))
    assert len(theirs) == len(WAITS)
    assert offcpu_collapse(path, "--min-wait", "0") == theirs == _expected(WAITS)


def test_newer_form(program, tmp_path):
    exe, funcs = program
    path = tmp_path / "offcpu_new.data"
    path.write_bytes(_file(exe, COMMON | ST.RAW, _newer_form(funcs)))
    direct = [(tid, stack, ns) for tid, stack, ns, _ in DIRECT]
    assert offcpu_collapse(path, "--min-wait", "0") == _expected(WAITS + direct)
    # a perf writing the direct samples' ids in the other order: the order
    # that names a known thread of the process is taken
    other = tmp_path / "offcpu_new_other_order.data"
    other.write_bytes(_file(exe, COMMON | ST.RAW, _newer_form(funcs, thread_first=False)))
    assert offcpu_collapse(other, "--min-wait", "0") == _expected(WAITS + direct)
    # --time: the direct waits are clipped to it, the sums (no time) counted whole
    got = offcpu_collapse(path, "--time", "4.900000,5.050000")
    assert got == _expected(WAITS + [(WORKER, ["piper", "wait_pipe"], 100_000_000),
                                     (MAIN, ["waker", "wake_cond"], 30_000_000)])
    # the thread table: the worker's waits, state S|D; its wall from its direct wait
    rc, out, err = run_cli(["offcpu", str(path), "--format", "threads"])
    assert rc == 0, err
    row = next(line for line in out.splitlines() if "/%d " % WORKER in line)
    numbers = row.split()
    assert numbers[0] == "worker" and float(numbers[4]) == pytest.approx(620.0)
    assert float(numbers[2]) == pytest.approx(200.0)     # wall: the direct wait only


def test_cut_raw_data_is_left_out_with_a_warning(program, tmp_path):
    exe, funcs = program
    samples = _newer_form(funcs)
    raw = samples[0]["raw"]
    samples[0]["raw"] = {"size": 20, "data": raw["data"][:20]}
    path = tmp_path / "offcpu_cut.data"
    path.write_bytes(_file(exe, COMMON | ST.RAW, samples))
    rc, out, err = run_cli(["offcpu", str(path), "--format", "collapse", "--tid-root"])
    assert rc == 0 and "1 offcpu-time samples left out" in err, err
    assert "Traceback" not in err
