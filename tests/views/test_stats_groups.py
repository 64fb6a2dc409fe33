"""`perfdata stats` on a recording whose samples read a whole group
(`perf record -e '{a,b}:S'`), made now: the per-event SAMPLE counts are
perf's, whose deliver_sample_value() counts a member only where its counter
grew since its last sample (page-faults grow in fewer samples than the
cpu-clock that leads)."""
import re
import subprocess
import sys

import pytest

from conftest import PERF, requires_perf, run_cli

LOAD = "x = [bytearray(4096) for i in range(20000)]; sum(range(3000000))"


def _sections(text):
    """{event: {record type: count}} of the "<event> stats:" sections."""
    out, current = {}, None
    for line in text.splitlines():
        m = re.match(r"(\S.*) stats:$", line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        m = re.match(r"\s+(\S+) events:\s+(\d+)", line)
        if m and current is not None:
            current[m.group(1)] = int(m.group(2))
    return out


@requires_perf
def test_group_read_counts_as_perf(tmp_path):
    data = tmp_path / "group.data"
    rec = subprocess.run([PERF, "record", "-q", "-e", "{cpu-clock,page-faults}:S", "-o", str(data),
                          "--", sys.executable, "-c", LOAD], capture_output=True, text=True,
                         timeout=120)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record a group: %s" % rec.stderr.strip()[-200:])
    theirs = subprocess.run([PERF, "report", "--stats", "-i", str(data)], capture_output=True,
                            text=True, timeout=120).stdout
    rc, ours, err = run_cli(["stats", str(data)])
    assert rc == 0, err
    want, got = _sections(theirs), _sections(ours)
    assert got == want
    clock, faults = want["cpu-clock"]["SAMPLE"], want["page-faults"]["SAMPLE"]
    assert 0 < faults < clock           # (the case this is about: members that did not grow)


@requires_perf
def test_counter_read_periods_as_perf(tmp_path):
    """`-e cpu-clock:S` alone: each sample reads its own counter, and perf
    prints the counter's growth since the sample before as the period (u64:
    an inherited counter read in another thread wraps), not the recorded
    period; stats count the same samples.  -j 2 prints -j 1's bytes."""
    data = tmp_path / "read.data"
    spin = "import threading\n" \
           "def w():\n    sum(range(2000000))\n" \
           "ts = [threading.Thread(target=w) for _ in range(3)]\n" \
           "[t.start() for t in ts]; [t.join() for t in ts]; sum(range(3000000))"
    rec = subprocess.run([PERF, "record", "-q", "-e", "cpu-clock:S", "-F", "997", "-o", str(data),
                          "--", sys.executable, "-c", spin], capture_output=True, text=True,
                         timeout=120)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record: %s" % rec.stderr.strip()[-200:])
    theirs = subprocess.run([PERF, "script", "-i", str(data), "-F", "tid,period,event"],
                            capture_output=True, text=True, timeout=120).stdout
    rc, ours, err = run_cli(["script", str(data), "-F", "tid,period,event", "-j", "1"])
    assert rc == 0, err
    assert ours == theirs
    recorded = {int(l.split()[1]) for l in theirs.splitlines() if l.strip()}
    assert len(recorded) > 3                # growths, not the one recorded period
    assert run_cli(["script", str(data), "-F", "tid,period,event", "-j", "2"])[1] == ours
    stats = subprocess.run([PERF, "report", "--stats", "-i", str(data)], capture_output=True,
                           text=True, timeout=120).stdout
    assert _sections(run_cli(["stats", str(data)])[1]) == _sections(stats)
