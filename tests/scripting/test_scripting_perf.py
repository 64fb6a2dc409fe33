"""perf's own Python scripts (Debian's linux-perf installs them) run by
`perf script -s` and by `perfdata script -s` on recordings made now: the
same standard output, and both succeed or both fail.

What is normalised, and why: stackcollapse.py prints function names, and
where perfdata names a frame differently from perf (an alias perf picks
differently, a PLT entry perf leaves [unknown]: docs/differences.md) the
perf stack is translated to perfdata's through the two tools' own
`script -F ip,sym` output of the same samples, sample by sample; a stack
perf names two ways fails the test.

Scripts left out, and why:
  sched-migration.py, exported-sql-viewer.py   GUI (wxPython, Qt)
  export-to-postgresql.py                      a PostgreSQL server
  export-to-sqlite.py                          perf's database export tables
                                               (perf_db_export_mode): not supported
  intel-pt-events.py, arm-cs-trace-disasm.py   Intel PT / CoreSight AUX traces
  stat-cpi.py                                  `perf stat record` files (stat__* handlers)
  libxed.py                                    a library, not a script
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import PERF, requires_perf
from script_compare import _is_plt_misname, deliberate_difference, parse_samples
from perfdata.scripting.exec_path import find_exec_path

EXEC_PATH = find_exec_path()
SCRIPTS = os.path.join(EXEC_PATH or "", "scripts", "python")

pytestmark = [requires_perf, pytest.mark.skipif(
    EXEC_PATH is None, reason="perf's Python scripts are not installed (linux-perf)")]

_CPU_WORK = ("import json\n"
             "for i in range(30000): json.dumps({'a': [i] * 10})\n")
_FUTEX_WORK = ("import threading\n"
               "lock = threading.Lock()\n"
               "def work():\n"
               "    for _ in range(3000):\n"
               "        with lock: pass\n"
               "ts = [threading.Thread(target=work) for _ in range(4)]\n"
               "[t.start() for t in ts]; [t.join() for t in ts]\n")
_NET_WORK = ("import socket\n"
             "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 0))\n"
             "c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
             "for i in range(200): c.sendto(b'x' * 100, s.getsockname()); s.recv(200)\n")
_SYSCALLS = ["syscalls:sys_enter_openat", "syscalls:sys_exit_openat",
             "syscalls:sys_enter_read", "syscalls:sys_exit_read",
             "syscalls:sys_enter_futex", "syscalls:sys_exit_futex"]

# name -> (perf record options, workload)
RECORDINGS = {
    "cpu": (["-g", "-e", "cpu-clock"], [sys.executable, "-c", _CPU_WORK]),
    "syscalls": (["-e", "raw_syscalls:*", "-e", ",".join(_SYSCALLS), "-e", "sched:*"],
                 ["sh", "-c", "ls /nonexistent / >/dev/null 2>&1; cat /etc/hostname "
                  ">/dev/null; sleep 0.01"]),
    "futex": (["-e", "syscalls:sys_enter_futex,syscalls:sys_exit_futex"],
              [sys.executable, "-c", _FUTEX_WORK]),
    "net": (["-a", "-e", "skb:kfree_skb,skb:consume_skb,skb:skb_copy_datagram_iovec,"
             "net:net_dev_xmit,net:net_dev_queue,net:netif_receive_skb,net:netif_rx,"
             "irq:irq_handler_entry,irq:irq_handler_exit,irq:softirq_entry,"
             "irq:softirq_exit,irq:softirq_raise,napi:napi_poll"],
            [sys.executable, "-c", _NET_WORK]),
    "compaction": (["-e", "compaction:*"], ["sleep", "0.01"]),
}

# script -> (recording, script arguments, what is normalised)
CASES = {
    "stackcollapse.py": ("cpu", [], "collapsed"),
    "syscall-counts.py": ("syscalls", [], None),
    "syscall-counts-by-pid.py": ("syscalls", [], None),
    "failed-syscalls-by-pid.py": ("syscalls", [], None),
    "futex-contention.py": ("futex", [], None),
    "check-perf-trace.py": ("syscalls", [], None),
    "compaction-times.py": ("compaction", [], None),
    "powerpc-hcalls.py": ("syscalls", [], None),
    "mem-phys-addr.py": ("cpu", [], None),
    "event_analyzing_sample.py": ("cpu", [], "symbols"),
    # its JSON on standard output (html needs d3-flame-graph's template);
    # `--` ends perf's options, as perf's documentation writes it
    "flamegraph.py": ("cpu", ["--", "-f", "json", "-o", "-"], "flamegraph"),
    # The 6.1 scripts' handlers take fewer fields than this kernel's
    # skb:kfree_skb and skb:consume_skb have: both tools stop at the first
    # (perf aborts), after the same output.
    "net_dropmonitor.py": ("net", [], None),
    "netdev-times.py": ("net", [], None),
}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scripting")
    procs = {}
    for name, (opts, work) in RECORDINGS.items():
        path = tmp / ("%s.data" % name)
        procs[name] = (path, subprocess.Popen(
            [PERF, "record", "-q", "-o", str(path)] + opts + ["--"] + work,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    out = {}
    for name, (path, proc) in procs.items():
        _, err = proc.communicate(timeout=180)
        if proc.returncode == 0 and path.exists():
            out[name] = path
        else:
            out[name] = err.decode("utf-8", "replace").strip()
    return out


def _recording(recordings, name):
    path = recordings[name]
    if isinstance(path, str):
        pytest.fail("perf record of %r failed: %s" % (name, path))
    return path


def _run(tool, data, script, args, cwd):
    if tool == "perf":
        cmd = [PERF, "script", "-i", str(data), "-s", script] + args
    else:
        cmd = [sys.executable, "-m", "perfdata", "script", "-i", str(data), "-s", script] + args
    # event_analyzing_sample.py keeps its samples in /dev/shm/perf.db
    # across runs: each run starts without it.
    for stale in ("/dev/shm/perf.db",):
        if os.path.exists(stale):
            os.unlink(stale)
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=300,
                         errors="replace")
    return res.returncode, res.stdout, res.stderr


_FRAME_FIELDS = "comm,pid,time,ip,sym,symoff,dso"
_HEADER = re.compile(r"^\s*(.*?)\s+(\d+)\s+\d+\.\d+:\s*$")


def _paired_frames(data):
    """Per sample of a -g recording, (comm, pid, [(perf's frame,
    perfdata's), ...] leaf first), each frame (addr, sym+off, dso) from both
    tools' `script -F comm,pid,time,ip,sym,symoff,dso` (user frames'
    addresses map-relative there: the name and dso say which).  Two frames
    may differ only by a deliberate difference script_compare tells (perf's
    PLT misname, perf's [unknown] where perfdata names the frame, a return
    address at a function's end: docs/differences.md); any other
    difference, or another count of samples or frames, fails here."""
    def samples(cmd):
        res = subprocess.run(cmd + ["script", "-i", str(data), "-F", _FRAME_FIELDS],
                             capture_output=True, text=True, errors="replace")
        assert res.returncode == 0, res.stderr[-500:]
        return parse_samples(res.stdout)
    theirs, mine = samples([PERF]), samples([sys.executable, "-m", "perfdata"])
    assert len(theirs) == len(mine) and theirs, "the two scripts differ in samples"
    out = []
    for (header, perf_frames), (our_header, our_frames) in zip(theirs, mine):
        assert our_header.rstrip() == header.rstrip()
        assert len(our_frames) == len(perf_frames), (header, perf_frames, our_frames)
        for theirs_fr, ours_fr in zip(perf_frames, our_frames):
            assert ours_fr == theirs_fr or deliberate_difference(ours_fr, theirs_fr), \
                (header, theirs_fr, ours_fr)
        comm, pid = _HEADER.match(header).groups()
        out.append((comm, int(pid), list(zip(perf_frames, our_frames))))
    return out


def _function(sym):
    """A frame's function name as a script gets it (`sym+0x1f` -> `sym`)."""
    return re.sub(r"\+0x[0-9a-f]+$", "", sym)


def _stack(frames, kernel_mark=""):
    """Frames (leaf first) joined root first as stackcollapse.py joins
    them; kernel_mark after the name of a kernel frame (flamegraph.py's
    libtype)."""
    return ";".join(_function(sym).replace(";", ":") +
                    (kernel_mark if dso == "[kernel.kallsyms]" or dso.endswith("/vmlinux") else "")
                    for _, sym, dso in reversed(frames))


def _renamed_samples(data):
    """(comm, pid, perf's frames, perfdata's) of each sample whose stack
    the two tools name differently: the deliberate differences only
    (_paired_frames)."""
    out = []
    for comm, pid, pairs in _paired_frames(data):
        if any(a != b for a, b in pairs):
            out.append((comm, pid, [a for a, _ in pairs], [b for _, b in pairs]))
    return out


def _move_counts(counts, renames):
    """counts (what a script counted per name or stack) with one sample
    of each (perf's key, perfdata's) counted under perfdata's key: a
    sample perf names otherwise is counted as perfdata names it."""
    for theirs, ours in renames:
        assert counts.get(theirs, 0) > 0, "no sample of %r in %s" % (theirs, sorted(counts))
        counts[theirs] -= 1
        counts[ours] = counts.get(ours, 0) + 1
    return {k: v for k, v in counts.items() if v}


def _normalise_collapsed(text, renames=()):
    """stackcollapse.py's `comm;stack count` lines, perf's renamed samples
    counted under perfdata's stacks, sorted."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        counts[stack] = counts.get(stack, 0) + int(count)
    counts = _move_counts(counts, [(comm.replace(" ", "_") + ";" + _stack(theirs),
                                    comm.replace(" ", "_") + ";" + _stack(ours))
                                   for comm, _, theirs, ours in renames])
    return "".join("%s %d\n" % kv for kv in sorted(counts.items()))


_SYMBOL_ROW = re.compile(r"^\s*(.*?)\s+(\d+)\s+#+$")


def _normalise_symbol_counts(text, renames=()):
    """event_analyzing_sample.py's output with each `symbol number
    histogram` table as `symbol number` lines, sorted (rows of equal
    numbers come in the database's order; the histogram is the number's),
    a sample whose leaf perf names otherwise counted under perfdata's name
    (perf's Unknown_symbol where it has none, as the script puts it)."""
    def name(frames):
        return "Unknown_symbol" if frames[0][1] == "[unknown]" else _function(frames[0][1])
    leaf_renames = [(name(theirs), name(ours)) for _, _, theirs, ours in renames
                    if theirs[0] != ours[0]]
    out, lines = [], iter(text.splitlines(True))
    for line in lines:
        out.append(line)
        if line.split() != ["symbol", "number", "histogram"]:
            continue
        out.append(next(lines))         # (the ==== rule)
        counts: dict[str, int] = {}
        after = []
        for row in lines:
            m = _SYMBOL_ROW.match(row)
            if not m:
                after = [row]
                break
            counts[m.group(1)] = counts.get(m.group(1), 0) + int(m.group(2))
        counts = _move_counts(counts, leaf_renames)
        out += ["%s %d\n" % kv for kv in sorted(counts.items())] + after
    return "".join(out)


def _normalise_flame(text, renames=()):
    """flamegraph.py's JSON tree as `root;comm;stack count` lines, a kernel
    frame's name marked [k] (its libtype), perf's renamed samples counted
    under perfdata's stacks, sorted (a sibling's place is where its first
    sample came: a renamed frame may merge or split siblings, so no order
    is compared)."""
    import json
    counts: dict[str, int] = {}

    def walk(node, names):
        names = names + [node["n"].replace(";", ":") + ("[k]" if node["l"] == "kernel" else "")]
        if node["v"]:
            counts[";".join(names)] = counts.get(";".join(names), 0) + node["v"]
        for child in node["c"]:
            walk(child, names)
    root = json.loads(text)
    assert root["l"] == "root" and not root["v"], root
    walk(root, [])

    def comm_node(comm, pid):
        return "%s;%s" % (root["n"], "%s[k]" % comm if pid == 0 else "%s (%d)" % (comm, pid))
    counts = _move_counts(counts, [(comm_node(comm, pid) + ";" + _stack(theirs, "[k]"),
                                    comm_node(comm, pid) + ";" + _stack(ours, "[k]"))
                                   for comm, pid, theirs, ours in renames])
    return "".join("%s %d\n" % kv for kv in sorted(counts.items()))


@pytest.mark.parametrize("script", sorted(CASES))
def test_same_output_as_perf(script, recordings, tmp_path):
    name, args, normalise = CASES[script]
    data = _recording(recordings, name)
    path = os.path.join(SCRIPTS, script)
    rc_perf, out_perf, err_perf = _run("perf", data, path, args, tmp_path)
    rc_ours, out_ours, err_ours = _run("perfdata", data, path, args, tmp_path)
    assert (rc_perf == 0) == (rc_ours == 0), (rc_perf, rc_ours, err_perf[-800:], err_ours[-800:])
    if rc_ours != 0:
        # a failing handler: one line last, the script's error before it
        assert err_ours.splitlines()[-1].startswith("perfdata: error: "), err_ours
        assert "Error" in err_ours.splitlines()[-2], err_ours
    # perf's samples whose stacks it names otherwise counted as perfdata
    # names them: deliberate differences only (_paired_frames)
    normaliser = {"collapsed": _normalise_collapsed, "symbols": _normalise_symbol_counts,
                  "flamegraph": _normalise_flame}.get(normalise)
    if normaliser is not None:
        out_perf = normaliser(out_perf, _renamed_samples(data))
        out_ours = normaliser(out_ours)
    assert out_perf, "perf printed nothing: nothing is compared"
    assert out_ours == out_perf


# ------------------------------------------------- -g python and param_dict
TRACE_RECORDING = (["-g", "-e", "sched:sched_switch,sched:sched_wakeup,sched:sched_process_exec,"
                    "raw_syscalls:sys_enter,raw_syscalls:sys_exit"],
                   ["sh", "-c", "ls / >/dev/null; sleep 0.01"])


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """A tracepoint recording with callchains (and a __data_loc string field)."""
    path = tmp_path_factory.mktemp("traced") / "trace.data"
    opts, work = TRACE_RECORDING
    res = subprocess.run([PERF, "record", "-q", "-o", str(path)] + opts + ["--"] + work,
                         capture_output=True, text=True, timeout=180)
    if res.returncode != 0:
        pytest.fail("perf record failed: %s" % res.stderr)
    return path


def _generate(tool, data, cwd):
    cmd = ([PERF] if tool == "perf" else [sys.executable, "-m", "perfdata"]) + \
        ["script", "-i", str(data), "-g", "python"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip().splitlines()[-1] == "generated Python script: perf-script.py"
    return (cwd / "perf-script.py").read_text()


def _frame_names(data):
    """{perf's "sym+off (dso)": perfdata's} of the frames that differ
    deliberately (_paired_frames); a perf frame named two ways fails."""
    names: dict[str, str] = {}
    for _, _, pairs in _paired_frames(data):
        for (_, s2, d2), (_, s1, d1) in pairs:
            if (s1, d1) != (s2, d2):
                a, b = "%s (%s)" % (s2, d2), "%s (%s)" % (s1, d1)
                assert names.setdefault(a, b) == b, "perf's frame %r has two perfdata names" % a
    return names


def _renamed_frame(line, names):
    """A callchain line of the generated script, `\t[ip] sym+off (dso)`,
    with perfdata's name for perf's."""
    ip, sep, rest = line.partition("] ")
    if not sep:
        return line         # (a frame without a symbol: `\t[ip]`)
    return "%s] %s" % (ip, names.get(rest.rstrip("\n"), rest.rstrip("\n"))) + "\n"


@pytest.mark.parametrize("name", ["traced", "syscalls", "net", "cpu"])
def test_gen_script_as_perf_and_runs_alike(name, traced, recordings, tmp_path):
    """`-g python` writes perf's starter script byte for byte; run by both
    tools it prints every tracepoint field (flag_str/symbol_str tables from
    define_event_symbols), perf_sample_dict['sample'] and the callchain:
    the same text, perf's frame names put into perfdata's (as above)."""
    data = traced if name == "traced" else _recording(recordings, name)
    ours_dir, perf_dir = tmp_path / "ours", tmp_path / "perf"
    ours_dir.mkdir()
    perf_dir.mkdir()
    text = _generate("perfdata", data, ours_dir)
    assert text == _generate("perf", data, perf_dir)
    if name == "cpu":
        return          # (no tracepoints: handlers for none)
    script = str(perf_dir / "perf-script.py")
    rc_perf, out_perf, err_perf = _run("perf", data, script, [], tmp_path)
    rc_ours, out_ours, err_ours = _run("perfdata", data, script, [], tmp_path)
    assert rc_perf == rc_ours == 0, (err_perf[-500:], err_ours[-500:])
    if name == "traced":
        names = _frame_names(data)
        out_perf = "".join(_renamed_frame(line, names) if line.startswith("\t[") else line
                           for line in out_perf.splitlines(True))
    assert out_perf.count("\n") > 100
    assert out_ours == out_perf


_PROBE = '''
import os
import perf_trace_context
# "sample frame what" of the frames the two tools tell apart deliberately:
# what is "frame" (named otherwise) or "end" (perf's _init stretched over .plt)
LEFT_OUT = {}
for line in open("left_out.txt") if os.path.exists("left_out.txt") else ():
    n, i, what = line.split()
    LEFT_OUT[int(n), int(i)] = what
from perf_trace_context import *
print(sorted(n for n in dir(perf_trace_context) if not n.startswith("_")))
SAMPLES = [0]
def trace_begin():
    print("begin")
def trace_end():
    print("end")
def process_event(d):
    n = SAMPLES[0]
    SAMPLES[0] += 1
    s = dict(d)
    s["callchain"] = []
    for i, entry in enumerate(d["callchain"]):
        e = dict(entry)
        what = LEFT_OUT.get((n, i))
        if what == "frame":
            e.pop("sym", None), e.pop("sym_off", None)  # (another symbol: its own start, end)
        elif what == "end":
            e["sym"] = {k: v for k, v in e["sym"].items() if k != "end"}
        s["callchain"].append(e)
    if LEFT_OUT.get((n, 0)) == "frame":
        s.pop("symbol", None), s.pop("symoff", None)
    print(list(s), sorted(d["sample"].items()), [list(e) for e in s["callchain"]])
    print(sorted((k, repr(v)) for k, v in s.items()))
def trace_unhandled(event_name, context, fields, sample):
    print(event_name, sorted(fields.items()), common_pc(context), common_flags(context),
          common_lock_depth(context), list(sample), sorted(sample["sample"].items()))
'''


@pytest.mark.parametrize("name", ["cpu", "syscalls"])
def test_handler_arguments_as_perf(name, recordings, tmp_path):
    """What a script is handed, printed whole: param_dict (its keys in perf
    6.1's order, attr, sample, raw_buf, comm, dso, dso_bid, map bounds,
    symbol, symoff, the callchain's ip/dso/sym_off and sym name, start, end
    and binding), the unhandled tracepoints' field dicts and perf_sample_dict,
    common_pc, common_flags, common_lock_depth and the perf_trace_context
    names.  Left out: a frame perf and perfdata name differently, by a
    deliberate difference only (_paired_frames: another symbol, so another
    start, end and offset; the sample's symbol and symoff where it is the
    leaf) and the end of a size-0 _init both name (perf stretches it over
    .plt)."""
    data = _recording(recordings, name)
    if name == "cpu":
        left_out = []
        for n, (_, _, pairs) in enumerate(_paired_frames(data)):
            for i, (theirs, ours) in enumerate(pairs):
                if theirs != ours:
                    left_out.append("%d %d frame\n" % (n, i))
                elif _is_plt_misname(theirs[1]):
                    # (_init, of size 0, named by both: perf's ends at the
                    # next symbol past .plt, perfdata's at the first PLT slot
                    # it names: the PLT difference, docs/differences.md)
                    left_out.append("%d %d end\n" % (n, i))
        (tmp_path / "left_out.txt").write_text("".join(left_out))
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    rc_perf, out_perf, err_perf = _run("perf", data, str(probe), [], tmp_path)
    rc_ours, out_ours, err_ours = _run("perfdata", data, str(probe), [], tmp_path)
    assert rc_perf == rc_ours == 0, (err_perf[-500:], err_ours[-500:])
    assert out_perf.count("\n") > 20
    assert out_ours == out_perf


# ------------------------------------------- sym start/end: perf's load bias
_SPIN_C = r"""
volatile unsigned long sink;
__attribute__((noinline)) void spin(void)
{
    for (unsigned long i = 0; i < 60000000UL; i++)
        sink += i;
}
int main(void) { spin(); return 0; }
"""
_SYM_PROBE = '''
seen = set()
def process_event(d):
    for e in d["callchain"]:
        s = e.get("sym")
        # (the program's own symbols: elsewhere a return address at a
        # function's end is named deliberately otherwise, docs/differences.md)
        if s is not None and str(e.get("dso")).endswith("/spin") and \
                (s["name"], e.get("dso")) not in seen:
            seen.add((s["name"], e.get("dso")))
            print(s["name"], hex(s["start"]), hex(s["end"]), e.get("dso"))
def trace_end():
    print(len(seen))
'''


@pytest.mark.parametrize("link", [["-no-pie"], ["-fuse-ld=lld"]], ids=["non-pie", "lld"])
def test_symbol_bounds_as_perf_gives_them(link, tmp_path):
    """perf 6.1 hands a script each user symbol's value less its PT_LOAD's
    p_vaddr - p_offset (symbol-elf.c adjusts every user dso's symbols): a
    non-PIE executable's functions come 0x400000 lower than their ELF value,
    an lld-linked PIE's a page lower (Debian's /usr/bin/python3.11 is a
    non-PIE executable).  The same start and end from perfdata."""
    import shutil
    if shutil.which("gcc") is None or link == ["-fuse-ld=lld"] and shutil.which("ld.lld") is None:
        pytest.skip("needs gcc (and lld)")
    src = tmp_path / "spin.c"
    src.write_text(_SPIN_C)
    exe = tmp_path / "spin"
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", *link, "-o", str(exe),
                    str(src)], check=True)
    data = tmp_path / "spin.data"
    subprocess.run([PERF, "record", "-q", "-g", "-e", "cpu-clock:u", "-o", str(data), "--",
                    str(exe)], check=True, capture_output=True, timeout=120)
    probe = tmp_path / "probe.py"
    probe.write_text(_SYM_PROBE)
    rc_perf, out_perf, err_perf = _run("perf", data, str(probe), [], tmp_path)
    rc_ours, out_ours, err_ours = _run("perfdata", data, str(probe), [], tmp_path)
    assert rc_perf == rc_ours == 0, (err_perf[-500:], err_ours[-500:])
    spin = next(line for line in out_perf.splitlines() if line.startswith("spin "))
    elf_value = int(subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True)
                    .stdout.split(" T spin")[0].split()[-1], 16)
    assert int(spin.split()[1], 16) < elf_value       # (the case: a bias perf takes off)
    assert out_ours == out_perf
