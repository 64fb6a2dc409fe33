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
import subprocess
import sys

import pytest

from conftest import PERF, requires_perf
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
    "stackcollapse.py": ("cpu", [], "names"),
    "syscall-counts.py": ("syscalls", [], None),
    "syscall-counts-by-pid.py": ("syscalls", [], None),
    "failed-syscalls-by-pid.py": ("syscalls", [], None),
    "futex-contention.py": ("futex", [], None),
    "check-perf-trace.py": ("syscalls", [], None),
    "compaction-times.py": ("compaction", [], None),
    "powerpc-hcalls.py": ("syscalls", [], None),
    "mem-phys-addr.py": ("cpu", [], None),
    "event_analyzing_sample.py": ("cpu", [], None),
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


def _stacks(text):
    """`script -F ip,sym` of a -g recording: per sample, its frames' names
    root first, joined as stackcollapse.py joins them."""
    out, frames = [], None
    for line in text.splitlines():
        if not line.strip():
            if frames is not None:
                out.append(";".join(reversed(frames)))
            frames = None
            continue
        parts = line.split(None, 1)
        if frames is None:
            frames = []
        frames.append((parts[1] if len(parts) > 1 else "[unknown]").replace(";", ":"))
    if frames is not None:
        out.append(";".join(reversed(frames)))
    return out


def _perf_to_perfdata_names(data, tmp_path):
    """{perf's stack: perfdata's stack} for the samples of a -g recording."""
    perf = subprocess.run([PERF, "script", "-i", str(data), "-F", "ip,sym"],
                          capture_output=True, text=True, errors="replace")
    ours = subprocess.run([sys.executable, "-m", "perfdata", "script", "-i", str(data),
                           "-F", "ip,sym"], capture_output=True, text=True, errors="replace")
    theirs, mine = _stacks(perf.stdout), _stacks(ours.stdout)
    assert len(theirs) == len(mine) and theirs, "the two scripts differ in samples"
    mapping: dict[str, str] = {}
    for a, b in zip(theirs, mine):
        assert mapping.setdefault(a, b) == b, "perf's stack %r has two perfdata names" % a
    return mapping


def _normalise_collapsed(text, mapping):
    counts: dict[str, int] = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        comm, sep, frames = stack.partition(";")
        frames = mapping.get(frames, frames) if sep else frames
        key = comm + sep + frames
        counts[key] = counts.get(key, 0) + int(count)
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
    if normalise == "names":
        out_perf = _normalise_collapsed(out_perf, _perf_to_perfdata_names(data, tmp_path))
        out_ours = _normalise_collapsed(out_ours, {})
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


def _frame_pairs(data):
    """(perf's "sym+off (dso)", perfdata's) of every frame, from both tools'
    script (user
    frames' addresses are map-relative there: the name and dso say which)."""
    def lines(cmd):
        out = subprocess.run(cmd + ["script", "-i", str(data), "-F", "ip,sym,symoff,dso"],
                             capture_output=True, text=True, errors="replace").stdout
        return [line.split(None, 1)[1] for line in out.splitlines()
                if line.startswith("\t") and len(line.split(None, 1)) == 2]
    theirs, mine = lines([PERF]), lines([sys.executable, "-m", "perfdata"])
    assert len(theirs) == len(mine) and theirs
    return list(zip(theirs, mine))


def _frame_names(data):
    """_frame_pairs as a mapping (a perf frame named two ways fails)."""
    names: dict[str, str] = {}
    for a, b in _frame_pairs(data):
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
RENAMED = set(open("renamed.txt").read().split("\\n")) if os.path.exists("renamed.txt") else set()
from perf_trace_context import *
print(sorted(n for n in dir(perf_trace_context) if not n.startswith("_")))
def trace_begin():
    print("begin")
def trace_end():
    print("end")
def process_event(d):
    s = dict(d)
    s["callchain"] = [dict(e, sym={k: v for k, v in e["sym"].items()
                                   if k not in ("name", "binding", "end")})
                      if "sym" in e else dict(e) for e in d["callchain"]]
    for e, entry in zip(s["callchain"], d["callchain"]):
        if entry.get("sym", {}).get("name") in RENAMED:
            e.pop("sym"), e.pop("sym_off", None)    # (another symbol: another start)
    if s.pop("symbol", None) in RENAMED:
        s.pop("symoff")
    if s.get("dso", "").startswith("[kernel"):
        s.pop("dso_map_end")    # (perf: the MMAP record's end; perfdata: _etext)
    print(list(d), sorted(d["sample"].items()), [list(e) for e in d["callchain"]])
    print(sorted((k, repr(v)) for k, v in s.items()))
def trace_unhandled(event_name, context, fields, sample):
    print(event_name, sorted(fields.items()), common_pc(context), common_flags(context),
          common_lock_depth(context), list(sample), sorted(sample["sample"].items()))
'''


@pytest.mark.parametrize("name", ["cpu", "syscalls"])
def test_handler_arguments_as_perf(name, recordings, tmp_path):
    """What a script is handed, printed whole: param_dict (its keys in perf
    6.1's order, attr, sample, raw_buf, comm, dso, dso_bid, map bounds,
    symoff, the callchain's ip/dso/sym_off/sym start and end), the unhandled
    tracepoints' field dicts and perf_sample_dict, common_pc, common_flags,
    common_lock_depth and the perf_trace_context names.  Symbol names are
    left out (stackcollapse compares them), and so are sym's binding (1 for
    every symbol: perfdata's symbol tables do not keep it), sym's end (a
    symbol of size 0 ends at the next symbol in perf, not always in
    perfdata's tables: 1 frame in 600 here) and the kernel
    map's end (perf gives the end its kernel MMAP record says, perfdata's
    session the end of the kernel's text, _etext)."""
    data = _recording(recordings, name)
    if name == "cpu":
        # The frames perfdata names otherwise (their symbols' start and offset
        # differ with the name): both names, for the probe to leave out.
        renamed = set()
        for theirs, ours in _frame_pairs(data):
            if theirs != ours:
                renamed |= {theirs.rsplit("+0x", 1)[0], ours.rsplit("+0x", 1)[0]}
        (tmp_path / "renamed.txt").write_text("\n".join(sorted(renamed)))
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    rc_perf, out_perf, err_perf = _run("perf", data, str(probe), [], tmp_path)
    rc_ours, out_ours, err_ours = _run("perfdata", data, str(probe), [], tmp_path)
    assert rc_perf == rc_ours == 0, (err_perf[-500:], err_ours[-500:])
    assert out_perf.count("\n") > 20
    assert out_ours == out_perf
