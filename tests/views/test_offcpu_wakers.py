"""`perfdata offcpu --wakers`: each wait attributed to the thread that woke
it and the stack it woke it from, against ground truth.

tests/progs/offcpu_wakeups.c is built and recorded now (per process, with
the wakeups' callchains, as docs/offcpu.md says): its waker thread wakes
`piper` from wake_pipe (a write to a pipe) and `condwaiter` from wake_cond
(a condition variable's signal); each measures its own time in its wait
function.  Of the waits the recording holds a wakeup of (a sleep, `S`, from
the thread's sched_switch out to its switch in, with a sched_wakeup or
sched_waking of it between, as `perf script` prints them), at least 95% of
the time must be in wakeup chains whose woken half holds the wait function
and whose waker half holds the waker's function, ending at the waker
thread; at most the time measured is.  (Not every wait has its wakeup in
the file: a wakeup the kernel queues to the woken thread's cpu fires
sched_wakeup there, in an untraced task's context. On two cores running
four such recordings, piper's first two wakeups of 25 were missing.)
"""
import re
import shutil
import subprocess

import pytest

from conftest import TESTS_DIR, requires_perf, run_cli, PERF

PROG = TESTS_DIR / "progs" / "offcpu_wakeups.c"
WAKER_OF = {"wait_pipe": "wake_pipe", "wait_cond": "wake_cond"}


def _record(tmp_path_factory, events):
    """(perf.data, {comm: (tid, function, ns)}, waker tid) of a recording of
    the switches and these wakeup events."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    tmp = tmp_path_factory.mktemp("offcpu_wakers")
    exe = tmp / "offcpu_wakeups"
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(exe),
                    str(PROG)], check=True)
    data = tmp / "wakeups.data"
    wakeups = [arg for event in events for arg in ("-e", event)]
    res = subprocess.run([PERF, "record", "-q", "-o", str(data), "-e", "sched:sched_switch"] +
                         wakeups + ["--switch-events", "--call-graph", "dwarf,16384", "--",
                                    str(exe)], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        pytest.skip("perf could not record the scheduler tracepoints here: %s"
                    % res.stderr.strip().splitlines()[-1:])
    waits, waker = {}, None
    for line in res.stdout.splitlines():
        parts = line.split()
        if parts[0] == "wait":
            waits[parts[1]] = (int(parts[2]), parts[3], int(parts[4]))
        elif parts[0] == "waker":
            waker = int(parts[2])
    assert len(waits) == 2 and waker, res.stdout
    return data, waits, waker


def _woken_sleeps(data, tid):
    """ns of the thread's sleeps that the recording holds a wakeup of, by
    perf script: from a sched_switch out of it in state S to its next
    PERF_RECORD_SWITCH in, with a sched_wakeup or sched_waking of it between."""
    text = subprocess.run([PERF, "script", "-i", str(data), "--show-switch-events",
                           "-F", "tid,time,event,trace"],
                          capture_output=True, text=True, timeout=120).stdout
    total, out, woken = 0, None, False
    for line in text.splitlines():
        m = re.match(r"\s*(\d+)\s+(\d+)\.(\d+):\s+(\S+)\s*(.*)", line)
        if m is None:
            continue
        ns = int(m.group(2)) * 10**9 + int(m.group(3).ljust(9, "0")[:9])
        event, rest = m.group(4), m.group(5)
        if event in ("sched:sched_wakeup:", "sched:sched_waking:"):
            woken = woken or re.search(r"\bpid=%d\b" % tid, rest) is not None
        elif int(m.group(1)) != tid:
            continue
        elif event == "sched:sched_switch:":
            out, woken = (ns if re.search(r"\bprev_state=S\b", rest) else None), False
        elif event == "PERF_RECORD_SWITCH" and rest.startswith("IN"):
            if out is not None and woken:
                total += ns - out
            out = None
    return total


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """The recipe of docs/offcpu.md: sched_wakeup."""
    return _record(tmp_path_factory, ["sched:sched_wakeup"])


@pytest.fixture(scope="module")
def with_waking(tmp_path_factory):
    """sched_waking beside sched_wakeup (perf sched record's pair): the
    first of a wait's wakeups, sched_waking's, names the waker."""
    return _record(tmp_path_factory, ["sched:sched_waking", "sched:sched_wakeup"])


def _offcpu(*args):
    rc, out, err = run_cli(["offcpu"] + [str(a) for a in args])
    assert rc == 0, err
    return out


@requires_perf
@pytest.mark.parametrize("which", ["recording", "with_waking"])
def test_waits_attributed_to_their_waker_and_its_stack(which, request):
    data, waits, waker = request.getfixturevalue(which)
    chains = []
    for line in _offcpu(data, "--wakers", "--format", "collapse", "--tid-root",
                        "--min-wait", "0").splitlines():
        stack, _, ns = line.rpartition(" ")
        names = stack.split(";")
        cut = names.index("--")
        chains.append((names[0], names[1:cut], names[cut + 1:-1], names[-1], int(ns)))
    assert chains
    for comm, (tid, func, measured) in waits.items():
        found = sum(ns for root, woken, by, end, ns in chains
                    if root.endswith("/%d" % tid) and func in woken
                    and WAKER_OF[func] in by and end.endswith("/%d" % waker)
                    and end.startswith("waker-"))
        woken = _woken_sleeps(data, tid)
        # (the recording holds most of the waits: the comparison is not empty)
        assert woken > 0.5 * measured, (comm, woken, measured)
        assert found >= 0.95 * woken, (comm, func, found, woken, measured)
        # (the scheduling latency after the wakeup, at most, beside it)
        assert found <= 1.05 * measured + 2000000, (comm, func, found, measured)
    # the waker's half is leaf first: the wake function before its caller
    for root, woken, by, end, ns in chains:
        if "wake_pipe" in by:
            assert by.index("wake_pipe") < by.index("waker")


@requires_perf
def test_wakers_report_and_flamegraph(recording, tmp_path):
    data, waits, waker = recording
    report = _offcpu(data, "--wakers")
    tid = waits["piper"][0]
    assert "piper" in report and "woken by waker" in report and "/%d" % waker in report
    lines = report.splitlines()
    at = next(n for n, line in enumerate(lines)
              if re.search(r" piper \d+/%d  woken by" % tid, line))
    block = "\n".join(lines[at:lines.index("", at)])
    assert "wait_pipe" in block and "wake_pipe" in block
    assert block.index("wait_pipe") < block.index("--") < block.index("wake_pipe")
    svg = tmp_path / "chains.svg"
    _offcpu(data, "--wakers", "--format", "flamegraph", "-o", svg)
    text = svg.read_text()
    assert "Wakeup Chain Flame Graph" in text and "wake_cond" in text and "wait_cond" in text


@requires_perf
def test_wakers_through_the_library(recording):
    """Profile.offcpu_folded(wakers=True) is the command's chains as data."""
    import perfdata
    data, _, _ = recording
    want = {}
    for line in _offcpu(data, "--wakers", "--format", "collapse").splitlines():
        stack, ns = line.rsplit(" ", 1)
        want[stack] = int(ns)
    assert perfdata.profile(data).offcpu_folded(wakers=True) == want and want


def test_wakers_refuse_wall(tmp_path):
    rc, _, err = run_cli(["offcpu", str(tmp_path / "x.data"), "--wakers", "--wall"])
    assert rc == 2 and "--wakers and --wall" in err
