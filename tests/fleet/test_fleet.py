"""`perfdata fleet`: many files on a real Dask cluster.

A `dask scheduler` and two `dask worker` processes (one thread each) are
started on 127.0.0.1 for this module and stopped after it; the fleet
commands run as a user runs them (`python3 cli.py fleet ... --scheduler
tcp://127.0.0.1:PORT`) and their output is compared with the single-file
commands' on each file.  The bundled recordings are read with `--debug-dir
samples/buildids` (their binaries' recorded paths need not exist here).
"""
import collections
import html
import re
import shutil
import socket
from pathlib import Path

import pytest

from conftest import need, requires_perf, run_cli
from dask_cluster import dask_scheduler, fleet

pytest.importorskip("distributed", reason="fleet needs dask[distributed] "
                                           "(pip install '.[fleet]')")

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
DEBUG = ["--debug-dir", str(SAMPLES / "buildids")]
# Recordings of several kinds: -g, two events, C++ with inlines, threads, zstd, DWARF.
FILES = ["plt_loop.fp.data", "two_events.data", "cpp_inline.fp.data", "threads.fp.data",
         "zstd.data", "cpp_inline.dwarf.data"]


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """The address of a scheduler with two single-thread workers, all
    separate processes, torn down after the module."""
    with dask_scheduler(tmp_path_factory.mktemp("dask")) as address:
        yield address


def folded(text):
    out = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        out[stack] = int(count)
    return out


def single(command, path, *args):
    rc, out, err = run_cli([command, str(path)] + list(args))
    assert rc == 0, err
    return out


def summed_collapse(paths, *args):
    total = collections.Counter()
    for path in paths:
        total.update(folded(single("collapse", path, *args)))
    return dict(total)


def test_collapse_equals_sum_of_single_files(scheduler):
    paths = [SAMPLES / f for f in FILES]
    rc, out, err = fleet("collapse", *paths, *DEBUG, "--scheduler", scheduler)
    assert rc == 0, err
    assert "%d files read" % len(paths) in err
    got = folded(out)
    assert got == summed_collapse(paths, *DEBUG)
    assert len(got) > 10
    # The same with the folded-stack options of collapse.
    rc, out, err = fleet("collapse", *paths, *DEBUG, "--tid-root", "--samples", "--addrs",
                         "--scheduler", scheduler)
    assert rc == 0, err
    assert folded(out) == summed_collapse(paths, *DEBUG, "--tid-root", "--samples", "--addrs")


@requires_perf
def test_collapse_of_perf_recordings(scheduler, recorded):
    paths = [need(recorded, n) for n in ("fp", "zstd", "dwarf", "pipe", "threads")]
    rc, out, err = fleet("collapse", *paths, "--scheduler", scheduler)
    assert rc == 0, err
    assert folded(out) == summed_collapse(paths)


def test_damaged_file_among_good_ones(scheduler, tmp_path):
    good = [SAMPLES / "plt_loop.fp.data", SAMPLES / "two_events.data"]
    junk = tmp_path / "junk.data"
    junk.write_bytes(b"not a perf.data file, only text " * 8)
    cut = tmp_path / "cut.data"
    cut.write_bytes((SAMPLES / "threads.fp.data").read_bytes()[:40])   # inside the header
    rc, out, err = fleet("collapse", good[0], junk, good[1], cut, *DEBUG,
                         "--scheduler", scheduler)
    assert rc == 0, err
    assert folded(out) == summed_collapse(good, *DEBUG)
    skipped = [line for line in err.splitlines() if "skipped:" in line]
    assert len(skipped) == 2 and str(junk) in skipped[0] + skipped[1] \
        and str(cut) in skipped[0] + skipped[1], err
    assert "2 files read" in err and "2 skipped" in err
    assert "Traceback" not in err
    # Only damaged files: nothing to print, exit 2, one line of error.
    rc, out, err = fleet("collapse", junk, "--scheduler", scheduler)
    assert rc == 2 and out == ""
    assert err.splitlines()[-1] == "perfdata: error: no file could be read (1 skipped)"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dead_scheduler_is_one_line_error():
    rc, out, err = fleet("collapse", SAMPLES / "plt_loop.fp.data", "--scheduler",
                         "tcp://127.0.0.1:%d" % _free_port(), "--connect-timeout", "2")
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("perfdata: error: cannot reach the Dask scheduler at "
                               "tcp://127.0.0.1:")
    rc, out, err = fleet("collapse", SAMPLES / "plt_loop.fp.data", "--scheduler",
                         "nonsense://", "--connect-timeout", "2")
    assert rc == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err


def test_peer_that_is_no_scheduler_is_one_line_error():
    """Something listens at the address, but speaks no Dask."""
    import threading
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"\xff" * 64 + b"HTTP/1.0 400 Bad Request\r\n\r\n")
    threading.Thread(target=serve, daemon=True).start()
    try:
        rc, out, err = fleet("collapse", SAMPLES / "plt_loop.fp.data", "--scheduler",
                             "tcp://127.0.0.1:%d" % server.getsockname()[1],
                             "--connect-timeout", "3")
    finally:
        server.close()
    assert rc == 2 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("perfdata: error: cannot reach the Dask scheduler at tcp://127.0.0.1:")


def test_missing_path_is_one_line_error():
    rc, out, err = fleet("collapse", "/nonexistent/perf.data")
    assert rc == 2 and err == "perfdata: error: /nonexistent/perf.data: no such file or " \
        "directory\n"
    rc, out, err = fleet("collapse", str(REPO / "no-such-dir" / "*.data"))
    assert rc == 2 and "no file matches" in err and len(err.splitlines()) == 1


def test_archive_beside_the_file_is_used(scheduler, tmp_path):
    """A stripped binary's names come from its debug file: packed by
    `perfdata archive` next to the copy, the fleet finds it there."""
    src = SAMPLES / "stripped.fp.data"
    debug = ["--debug-dir", str(SAMPLES / "debug")] + DEBUG
    copy = tmp_path / "host1" / "stripped.fp.data"
    copy.parent.mkdir()
    shutil.copy(src, copy)
    rc, out, err = run_cli(["archive", str(src), *debug, "-o", str(copy) + ".tar.zst"])
    assert rc == 0, err
    with_debug = folded(single("collapse", src, *debug))
    without = folded(single("collapse", src))
    assert with_debug != without            # the debug file matters here
    rc, out, err = fleet("collapse", tmp_path, "--scheduler", scheduler)
    assert rc == 0, err
    assert "1 file read" in err             # the directory's .data, not the archive
    assert folded(out) == with_debug


def test_directories_and_globs(scheduler, tmp_path):
    for i, name in enumerate(FILES[:3]):
        d = tmp_path / ("host%d" % i)
        d.mkdir()
        shutil.copy(SAMPLES / name, d / "perf.data")
    (tmp_path / "host0" / "notes.txt").write_text("not a profile")
    expected = summed_collapse([SAMPLES / n for n in FILES[:3]], *DEBUG)
    rc, out, err = fleet("collapse", tmp_path, *DEBUG, "--scheduler", scheduler)
    assert rc == 0 and "3 files read" in err, err
    assert folded(out) == expected
    rc, out, err = fleet("collapse", str(tmp_path / "host*" / "perf.data"), *DEBUG,
                         "--scheduler", scheduler)
    assert rc == 0 and "3 files read" in err, err
    assert folded(out) == expected


def _report_rows(text):
    """{(event, row cells): percentage} and {event: event count} of a report."""
    rows, counts, event = {}, {}, None
    for line in text.splitlines():
        m = re.match(r"# Samples: .* of events? '(.*)'", line)
        if m:
            event = m.group(1)
        m = re.match(r"# Event count \(approx.\): (\d+)", line)
        if m:
            counts[event] = int(m.group(1))
        m = re.match(r"\s+([\d.]+)%\s+(.*)$", line)
        if m and not line.startswith("#"):
            rows[(event, tuple(m.group(2).split()))] = float(m.group(1))
    return rows, counts


@pytest.mark.parametrize("flags", [(), ("--children", "--sort", "pid,dso,sym"),
                                   ("--group", "--sort", "dso"), ("--no-group", "--sort", "dso")])
def test_report_of_copies_equals_single_report(scheduler, tmp_path, flags):
    """The same profile twice: the same table, twice the samples; with
    --group one table of both events, as the report of one file."""
    src = SAMPLES / "two_events.data"
    one = single("report", src, *DEBUG, *flags)
    copies = []
    for i in range(2):
        copies.append(tmp_path / ("copy%d.data" % i))
        shutil.copy(src, copies[-1])
    rc, out, err = fleet("report", *copies, *DEBUG, *flags, "--scheduler", scheduler)
    assert rc == 0, err
    rows1, counts1 = _report_rows(one)
    rows2, counts2 = _report_rows(out)
    assert rows2 == rows1 and len(rows1) > 3
    # (--group: one table of both events)
    assert counts2 == {e: 2 * n for e, n in counts1.items()} and \
        len(counts1) == (1 if "--group" in flags else 2)
    strip = [line for line in one.splitlines() if not line.startswith(("# Samples",
                                                                        "# Event count"))]
    assert [line for line in out.splitlines()
            if not line.startswith(("# Samples", "# Event count"))] == strip


def test_report_over_different_files(scheduler):
    """Each row's share is the files' event-count-weighted shares."""
    paths = [SAMPLES / "plt_loop.fp.data", SAMPLES / "plt_loop.dwarf.data",
             SAMPLES / "cpp_inline.fp.data"]
    rc, out, err = fleet("report", *paths, *DEBUG, "--sort", "dso,sym", "--scheduler",
                         scheduler)
    assert rc == 0, err
    got, got_counts = _report_rows(out)
    weighted = collections.Counter()
    counts = collections.Counter()
    for path in paths:
        rows, c = _report_rows(single("report", path, *DEBUG, "--sort", "dso,sym"))
        counts.update(c)
        for (event, cells), pct in rows.items():
            weighted[(event, cells)] += pct * c[event]
    assert got_counts == dict(counts)
    assert set(got) == set(weighted)
    for key, pct in got.items():
        assert abs(pct - weighted[key] / counts[key[0]]) <= 0.01, key


def _frame_sums(svg):
    """{(depth, name): width} of a flame graph's frames."""
    out = collections.Counter()
    for depth, info in re.findall(r'<g data-d="(\d+)" data-kind="[^"]*" data-name="[^"]*" '
                                  r'data-info="([^"]*)"', svg):
        name, value = re.match(r"(.*) \(([\d,]+) \w+, [\d.]+%\)$",
                               html.unescape(info)).groups()
        out[(int(depth), name)] += int(value.replace(",", ""))
    return out


def test_flamegraph_adds_the_files_stacks(scheduler, tmp_path):
    paths = [SAMPLES / f for f in FILES[:4]]
    expected = collections.Counter()
    for path in paths:
        expected.update(_frame_sums(single("flamegraph", path, *DEBUG, "--minwidth", "0")))
    rc, out, err = fleet("flamegraph", *paths, *DEBUG, "--minwidth", "0", "-o",
                         tmp_path / "fleet.svg", "--scheduler", scheduler)
    assert rc == 0, err
    got = _frame_sums((tmp_path / "fleet.svg").read_text())
    assert got == expected and len(got) > 20
    assert "4 profiles" in (tmp_path / "fleet.svg").read_text()


def test_local_cluster_by_default():
    """No --scheduler: a local cluster (here of two workers) is started and stopped."""
    paths = [SAMPLES / f for f in FILES[:3]]
    rc, out, err = fleet("collapse", *paths, *DEBUG, "--workers", "2")
    assert rc == 0, err
    assert folded(out) == summed_collapse(paths, *DEBUG)


def test_partials_merge_is_a_sum():
    """The merge alone (no Dask): associative, and equal to the one-pass count."""
    from perfdata.fleet.partials import file_partial, merge_partials
    from perfdata.fleet.command import file_options
    from perfdata import cli
    args = cli.build_parser("fleet").parse_args(["fleet", "collapse", "x"] + DEBUG)
    opts = file_options(args)
    parts = [file_partial(str(SAMPLES / f), "collapse", opts) for f in FILES[:3]]
    left = merge_partials(merge_partials(parts[0], parts[1]), parts[2])
    right = merge_partials(parts[0], merge_partials(parts[1], parts[2]))
    assert left.data == right.data == summed_collapse([SAMPLES / f for f in FILES[:3]], *DEBUG)
    assert left.files == 3 and not left.errors
    assert parts[0].data == summed_collapse([SAMPLES / FILES[0]], *DEBUG)   # inputs unchanged


def test_tree_reduction_runs_on_the_workers(scheduler):
    """N files: N file tasks and N-1 pairwise merge tasks in ceil(log2 N)
    levels, all run by the cluster's workers; the client gets one result."""
    import math
    from distributed import Client, get_task_stream
    from perfdata.fleet.cluster import tree_reduce
    from perfdata.fleet.command import file_options
    from perfdata import cli
    args = cli.build_parser("fleet").parse_args(["fleet", "collapse", "x"] + DEBUG)
    paths = [str(SAMPLES / f) for f in FILES]
    with Client(scheduler, timeout=30, set_as_default=False) as client:
        workers = set(client.scheduler_info()["workers"])
        with get_task_stream(client) as ts:
            result = tree_reduce(client, paths, "collapse", file_options(args))
        tasks = [(t["key"] if isinstance(t["key"], str) else t["key"][0], t["worker"])
                 for t in ts.data]
    assert result.files == len(paths)
    merges = [k for k, _ in tasks if "-merge-" in k]
    files = [k for k, _ in tasks if "-file-" in k]
    assert len(files) == len(paths) and len(merges) == len(paths) - 1
    assert max(int(k.split("-merge-")[1].split("-")[0]) for k in merges) == \
        math.ceil(math.log2(len(paths)))
    assert {w for _, w in tasks} <= workers
    assert dict(result.data) == summed_collapse(paths, *DEBUG)


def test_diff_partials_merge_in_any_order():
    """`fleet diff`'s merge alone (no Dask): associative, the inputs kept;
    a set of one file gives `perfdata diff`'s text, a set of a file twice
    the same shares with twice the periods."""
    from perfdata.fleet.diff import diff_text
    from perfdata.fleet.partials import file_partial, merge_partials
    from perfdata.fleet.command import file_options
    from perfdata import cli
    files = [str(SAMPLES / f) for f in ("plt_loop.fp.data", "plt_loop_ibt.fp.data",
                                        "plt_loop.dwarf.data")]
    args = cli.build_parser("fleet").parse_args(["fleet", "diff", "--base", "x", "--new", "y",
                                                 "-p"] + DEBUG)
    parts = [file_partial(f, "diff", file_options(args)) for f in files]
    assert not any(p.errors for p in parts)
    before = diff_text(parts[0].data, parts[1].data, args)
    left = merge_partials(merge_partials(parts[0], parts[1]), parts[2])
    right = merge_partials(parts[0], merge_partials(parts[1], parts[2]))
    assert diff_text(left.data, parts[0].data, args) == diff_text(right.data, parts[0].data, args)
    assert diff_text(parts[0].data, parts[1].data, args) == before      # inputs unchanged
    rc, out, err = run_cli(["diff", files[0], files[1], "-p"] + DEBUG)
    assert rc == 0 and before == out
    two = diff_text(merge_partials(parts[0], parts[0]).data, parts[0].data, args)
    rows = [line.split() for line in two.splitlines() if line and not line.startswith("#")]
    assert len(rows) > 3
    assert all(int(r[1]) == 2 * int(r[3]) and r[2] == "+0.00%" for r in rows), two
