"""`perfdata export --format parquet`: the tables read back with pyarrow and
DuckDB (no perfdata code involved in the reading), checked against perf's own
counts (`perf report --stats`, `perf report`'s event count, `perf script`'s
callchains)."""
import collections
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import need, PERF, requires_perf, requires_sample_libc_debug, run_cli

pa = pytest.importorskip("pyarrow", reason="parquet export needs pyarrow "
                                           "(pip install '.[fleet]')")
pq = pytest.importorskip("pyarrow.parquet")

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
DEBUG = ["--debug-dir", str(SAMPLES / "buildids")]


def export(path, out_dir, *args):
    rc, out, err = run_cli(["export", str(path), "--format", "parquet", "-o", str(out_dir)]
                           + list(args))
    assert rc == 0, err
    return pq.read_table(out_dir / "samples.parquet"), pq.read_table(out_dir / "stacks.parquet")


def perf_sample_counts(path):
    """{event: samples} from `perf report --stats` (its per-event sections)."""
    out = subprocess.run([PERF, "report", "--stats", "-i", str(path)], capture_output=True,
                         text=True, timeout=120).stdout
    counts, event = {}, None
    for line in out.splitlines():
        m = re.match(r"(\S+) stats:$", line.strip())
        if m:
            event = m.group(1)
        m = re.match(r"\s*SAMPLE events:\s+(\d+)", line)
        if m and event not in (None, "Aggregated"):
            counts[event] = int(m.group(1))
    return counts


def perf_event_counts(path):
    """{event: sum of periods} from `perf report`'s `# Event count` lines."""
    out = subprocess.run([PERF, "report", "--stdio", "--no-children", "-i", str(path)],
                         capture_output=True, text=True, timeout=120).stdout
    counts, event = {}, None
    for line in out.splitlines():
        m = re.match(r"# Samples: .* of event '(.*)'", line)
        if m:
            event = m.group(1)
        m = re.match(r"# Event count \(approx.\): (\d+)", line)
        if m:
            counts[event] = int(m.group(1))
    return counts


@requires_perf
@pytest.mark.parametrize("name", ["fp", "twoev", "zstd", "dwarf", "group"])
def test_sample_count_and_periods_are_perfs(recorded, tmp_path, name):
    path = need(recorded, name)
    samples, stacks = export(path, tmp_path)
    by_event = collections.Counter(samples.column("event").to_pylist())
    perf_counts = perf_sample_counts(path)
    assert sum(by_event.values()) == sum(perf_counts.values()) > 0
    # perf's --stats names the event as its evsel (cpu-clock:pppH), the rows as
    # perf script does (cpu-clock:ppp...): compare counts in event order.
    assert sorted(by_event.values()) == sorted(perf_counts.values())
    periods = collections.Counter()
    for event, period in zip(samples.column("event").to_pylist(),
                             samples.column("period").to_pylist()):
        periods[event] += period
    theirs = perf_event_counts(path)
    if None in theirs:      # a group: perf report prints the group's total
        assert sum(periods.values()) == theirs[None]
    else:
        assert periods == theirs
    # Stack ids are 0..n-1, each stack's rows (none: an empty stack) at depths 0..k-1.
    ids = set(samples.column("stack_id").to_pylist())
    depth = collections.defaultdict(list)
    for sid, d in zip(stacks.column("stack_id").to_pylist(), stacks.column("depth").to_pylist()):
        depth[sid].append(d)
    assert ids == set(range(max(ids) + 1)) and set(depth) <= ids
    assert all(sorted(ds) == list(range(len(ds))) for ds in depth.values())


def perf_callchains(path):
    """The callchain addresses of every sample, leaf first, as `perf script -F ip` prints them."""
    out = subprocess.run([PERF, "script", "-F", "ip", "-i", str(path)], capture_output=True,
                         text=True, timeout=120).stdout
    chains, cur = [], None
    for line in out.splitlines():
        if line.startswith("\t"):
            if cur is None:
                cur = []
                chains.append(cur)
            cur.append(int(line.split()[0], 16))
        else:
            cur = None
    return chains


@requires_perf
def test_stacks_are_perfs_callchains(recorded, tmp_path):
    """Each sample's frames (leaf first, inlined ones left out) are the
    addresses perf script prints for it, in the same order."""
    path = need(recorded, "fp")
    samples, stacks = export(path, tmp_path)
    frames = collections.defaultdict(list)
    for row in stacks.to_pylist():
        if not row["inlined"]:
            frames[row["stack_id"]].append((row["depth"], row["dso_address"]))
    ours = [[a for _, a in sorted(frames[sid])] for sid in samples.column("stack_id").to_pylist()]
    theirs = perf_callchains(path)
    assert len(ours) == len(theirs) > 50
    assert ours == theirs


def test_duckdb_reads_the_dataset(tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="pip install duckdb")
    src = SAMPLES / "two_events.data"
    samples, stacks = export(src, tmp_path, *DEBUG)
    con = duckdb.connect()
    s, f = str(tmp_path / "samples.parquet"), str(tmp_path / "stacks.parquet")
    n, = con.execute("SELECT count(*) FROM '%s'" % s).fetchone()
    # perf report --stats on the same file (its committed output): the SAMPLE
    # events in all, then per event
    stats = (SAMPLES / "expected" / "two_events.stats.txt").read_text()
    perf_counts = [int(c) for c in re.findall(r"SAMPLE events:\s+(\d+)", stats)]
    assert n == samples.num_rows == perf_counts[0] > 0
    events = dict(con.execute("SELECT event, count(*) FROM '%s' GROUP BY event" % s).fetchall())
    assert sorted(events.values()) == sorted(perf_counts[1:]) and len(events) == 2
    # docs/fleet.md's query: top functions by self weight.
    top = con.execute("""
        SELECT f.symbol, f.dso, sum(s.period) AS self_period, count(*) AS samples
        FROM '%s' s JOIN '%s' f ON f.stack_id = s.stack_id AND f.depth = 0
        WHERE s.event = 'cpu-clock'
        GROUP BY ALL ORDER BY self_period DESC LIMIT 10""" % (s, f)).fetchall()
    assert top[0][:2] == ("__vdso_clock_gettime", "[vdso]")
    # The same leaf symbols and counts as perfdata's own report (sorted by sym).
    rc, out, err = run_cli(["report", str(src), *DEBUG, "--sort", "sym"])
    assert rc == 0, err
    section = out.split("of event 'cpu-clock'")[1].split("# Samples")[0]
    rows = re.findall(r"^\s+([\d.]+)%\s+\[.\] (\S+)", section, re.M)
    total = sum(r[2] for r in con.execute("""
        SELECT f.symbol, f.dso, sum(s.period) FROM '%s' s JOIN '%s' f
        ON f.stack_id = s.stack_id AND f.depth = 0 WHERE s.event = 'cpu-clock'
        GROUP BY ALL""" % (s, f)).fetchall())
    shares = {sym: round(100.0 * p / total, 2) for sym, _, p, _ in top if sym}
    for pct, sym in rows:
        if sym in shares:
            assert abs(shares[sym] - float(pct)) < 0.01, sym
    assert len([1 for _, sym in rows if sym in shares]) >= 3


@requires_sample_libc_debug
def test_readme_query_runs(tmp_path):
    """The DuckDB query of docs/fleet.md (once the README's), as written, on
    an exported file."""
    duckdb = pytest.importorskip("duckdb", reason="pip install duckdb")
    query = re.search(r"```sql\n(.*?)```", (REPO / "docs" / "fleet.md").read_text(), re.S).group(1)
    export(SAMPLES / "plt_loop.fp.data", tmp_path, *DEBUG)
    rows = duckdb.connect().execute(query.replace("DIR/", str(tmp_path) + "/")).fetchall()
    assert rows[0][:2] == ("__strlen_evex", "/usr/lib/x86_64-linux-gnu/libc.so.6")
    assert sum(r[3] for r in rows) <= 2387 and rows[0][3] > 1000


def test_batches_are_bounded_and_complete(tmp_path):
    """record_batches() never yields more than batch_size rows, and the
    batches add up to the whole table."""
    import perfdata
    from perfdata.arrow import open_samples, record_batches
    src = SAMPLES / "plt_loop.fp.data"
    whole = perfdata.to_arrow(src, debug_dirs=[SAMPLES / "buildids"])
    pf, samples = open_samples(src, debug_dirs=[SAMPLES / "buildids"])
    rows = collections.Counter()
    batches = 0
    with pf:
        for name, batch in record_batches(samples, batch_size=100):
            assert batch.num_rows <= 100
            rows[name] += batch.num_rows
            batches += 1
    assert rows == {"samples": whole.samples.num_rows, "stacks": whole.stacks.num_rows}
    assert whole.samples.num_rows == 2387 and batches > 24


def test_no_pyarrow_or_no_dir_is_one_line_error(tmp_path):
    rc, out, err = run_cli(["export", str(SAMPLES / "plt_loop.fp.data"), "--format", "parquet"])
    assert rc == 2 and err.strip().splitlines() == [
        "perfdata: error: parquet output is a directory: give -o DIR"]
    blocker = tmp_path / "file"
    blocker.write_text("x")
    rc, out, err = run_cli(["export", str(SAMPLES / "plt_loop.fp.data"), "--format",
                            "parquet", "-o", str(blocker / "sub")])
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
