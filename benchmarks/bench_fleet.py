#!/usr/bin/env python3
"""Many profiles: `perfdata fleet collapse` (and `fleet diff`) on a local Dask
cluster against a loop of single-file `perfdata collapse`; and the memory of
the Parquet export of a large file.

    python3 benchmarks/bench_fleet.py [--files 24] [--workers 2] [--keep DIR]
                                      [--parquet-mib 1024]

Records --files perf.data files with perf into a tmp dir (a Python loop for
0.5 to 1.5 s under `perf record -g -F 4999`, every third file
`--call-graph=dwarf -F 999`, so the files differ), then
measures twice, with perfdata's symbol cache cold (an empty one for each
run: the symbol tables, kallsyms and DWARF inline names are built afresh)
and warm (filled by a loop over the files before):
  loop        `perfdata collapse FILE -o OUT` once per file, a process each
              (wall and CPU summed, the largest peak RSS)
  loop, 1 process  the same files collapsed one after the other in one
              Python process (no start-up per file)
  fleet       `perfdata fleet collapse FILES --workers N` (wall and CPU of the
              command, its workers included; the peak RSS of the client)
  fleet diff  `perfdata fleet diff --base (first half) --new (second half)`,
              --folded and the table (wall and CPU, workers included)
  fleet, per worker  the same reduction on a LocalCluster of N workers kept
              by this script: the time without the cluster's start-up and
              each worker's peak RSS (getrusage in the worker)
and checks that the fleet's folded stacks are the sum of the loop's, and
`fleet diff --folded`'s columns the sums of the loop's two halves.

--parquet-mib N: a file of N MiB is made from a recorded one (its data
section repeated, as bench_reader.py does) and exported with `perfdata
export --format parquet`: peak RSS against the file size, and the row count
against `perfdata stats`'s sample count.
"""
import argparse
import collections
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

from bench_reader import compile_bytecode, make_big, run_measured  # noqa: E402

PERFDATA = [sys.executable, "-m", "perfdata"]
LOOP = ("import time\n"
        "def leaf(n): return sum(i * i for i in range(n))\n"
        "def mid(n): return leaf(n) + leaf(n // 2)\n"
        "t = time.time()\n"
        "while time.time() - t < %s: mid(3000)")
IN_PROCESS = ("import sys\n"
              "from perfdata import cli\n"
              "for i, f in enumerate(sys.argv[2:]):\n"
              "    cli.main(['collapse', f, '-o', '%s/%d.folded' % (sys.argv[1], i)])\n")


def record(perf, directory, n):
    files = []
    pending = []
    for i in range(n):
        path = os.path.join(directory, "host%02d.data" % i)
        seconds = 0.5 + 0.2 * (i % 6)
        mode = ["--call-graph=dwarf", "-F", "999"] if i % 3 == 2 else ["-g", "-F", "4999"]
        pending.append((path, subprocess.Popen(
            [perf, "record", "-q", "-o", path] + mode + ["--", sys.executable, "-c",
                                                         LOOP % seconds],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
        if len(pending) >= 2:
            for p, proc in pending:
                proc.wait()
                files.append(p)
            pending = []
    for p, proc in pending:
        proc.wait()
        files.append(p)
    return [f for f in files if os.path.isfile(f)]


def folded(path):
    out = collections.Counter()
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            out[stack] += int(count)
    return out


def diff_columns(path):
    """{stack: (count1, count2)} of difffolded.pl's three columns."""
    out = {}
    with open(path) as f:
        for line in f:
            stack, c1, c2 = line.rstrip("\n").rsplit(" ", 2)
            out[stack] = (int(c1), int(c2))
    return out


def summed_diff(outs, half, n):
    """difffolded.pl's columns (no -n) of the loop's folded outputs 0..half-1
    summed against half..n-1 summed."""
    sums = []
    for part in (range(half), range(half, n)):
        total = collections.Counter()
        for i in part:
            total.update(folded(os.path.join(outs, "%d.folded" % i)))
        sums.append(total)
    return {stack: (sums[0].get(stack, 0), sums[1].get(stack, 0))
            for stack in set(sums[0]) | set(sums[1])}


def worker_rss_run(files, workers, options):
    """(seconds of the reduction, [peak RSS MiB per worker], Partial) on a
    LocalCluster of `workers` single-thread processes started here."""
    import logging
    import resource
    from distributed import Client, LocalCluster
    from perfdata.fleet.cluster import tree_reduce

    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            Client(cluster) as client:
        before = client.run(peak)
        t0 = time.perf_counter()
        result = tree_reduce(client, files, "collapse", options)
        seconds = time.perf_counter() - t0
        after = client.run(peak)
    return seconds, sorted(before.values()), sorted(after.values()), result


def measure(tmp, files, workers, state, options):
    """Print the table of the three runs and the per-worker figures, with
    the symbol cache `state`: cold (an empty cache for each run) or warm (a
    cache filled by one loop over the files before)."""
    def cache(name):
        path = os.path.join(tmp, "cache-%s-%s" % (state, name if state == "cold" else "all"))
        if state == "cold":
            shutil.rmtree(path, ignore_errors=True)
        os.environ["PERFDATA_CACHE_DIR"] = path
        return path

    if state == "warm":
        cache("warm-up")
        for f in files:
            run_measured(PERFDATA + ["collapse", f, "-o", os.devnull])
    outs = os.path.join(tmp, "loop")
    os.makedirs(outs, exist_ok=True)
    cache("loop")
    wall = cpu = rss = 0.0
    for i, f in enumerate(files):
        w, r, rc, c = run_measured(PERFDATA + ["collapse", f, "-o",
                                               os.path.join(outs, "%d.folded" % i)])
        assert rc == 0, f
        wall += w
        cpu += c
        rss = max(rss, r)
    expected = collections.Counter()
    for i in range(len(files)):
        expected.update(folded(os.path.join(outs, "%d.folded" % i)))
    rows = [("loop of `collapse` (a process per file)", wall, cpu, rss / 1024.0)]

    cache("loop1")
    w, r, rc, c = run_measured([sys.executable, "-c", IN_PROCESS, outs] + files)
    assert rc == 0
    rows.append(("loop of `collapse`, one process", w, c, r / 1024.0))

    out = os.path.join(tmp, "fleet.folded")
    cache("fleet")
    w, r, rc, c = run_measured(PERFDATA + ["fleet", "collapse", "--workers", str(workers),
                                           "-o", out] + files)
    assert rc == 0
    same = folded(out) == expected
    rows.append(("`fleet collapse --workers %d` (cluster start included)" % workers,
                 w, c, r / 1024.0))

    half = len(files) // 2
    sets = ["--base"] + files[:half] + ["--new"] + files[half:]
    out = os.path.join(tmp, "fleet-diff.folded")
    cache("fleet-diff-folded")
    w, r, rc, c = run_measured(PERFDATA + ["fleet", "diff", "--folded", "--workers",
                                           str(workers), "--output", out] + sets)
    assert rc == 0
    same_diff = diff_columns(out) == summed_diff(outs, half, len(files))
    rows.append(("`fleet diff --folded --workers %d`, the first half against the second"
                 % workers, w, c, r / 1024.0))
    cache("fleet-diff")
    w, r, rc, c = run_measured(PERFDATA + ["fleet", "diff", "--workers", str(workers),
                                           "--output", os.devnull] + sets)
    assert rc == 0
    rows.append(("`fleet diff --workers %d` (perf diff's table), the same sets" % workers,
                 w, c, r / 1024.0))

    cache("cluster")
    seconds, before, after, result = worker_rss_run(files, workers, options)
    same_lib = dict(result.data) == dict(expected)

    print()
    print("%s symbol cache, load average %.2f:" % (state, os.getloadavg()[0]))
    print()
    print("| run | wall s | CPU s | peak RSS MiB |")
    print("|---|---|---|---|")
    for name, w, c, r in rows:
        print("| %s | %.2f | %.2f | %.0f |" % (name, w, c, r))
    print("| fleet on a running local cluster (reduction only) | %.2f | | %s per worker "
          "(%s before) |" % (seconds, ", ".join("%.0f" % x for x in after),
                             ", ".join("%.0f" % x for x in before)))
    print()
    print("fleet folded stacks == sum of the loop's: %s (CLI), %s (cluster kept here); "
          "%d distinct stacks, %d samples" % (same, same_lib, len(expected), result.samples))
    print("fleet diff --folded == difffolded's columns of the loop's two halves summed: %s"
          % same_diff)
    sys.stdout.flush()
    return same and same_lib and same_diff


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=24)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", help="record into this directory and keep it")
    ap.add_argument("--parquet-mib", type=int, default=0,
                    help="also export a file of this many MiB to Parquet (0: no)")
    args = ap.parse_args(argv)
    compile_bytecode()
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("perf is not installed")
    tmp = args.keep or tempfile.mkdtemp(prefix="bench-fleet.")
    os.makedirs(tmp, exist_ok=True)
    os.environ["PERFDATA_CACHE_DIR"] = os.path.join(tmp, "cache")
    try:
        data = os.path.join(tmp, "data")
        os.makedirs(data, exist_ok=True)
        files = sorted(os.path.join(data, f) for f in os.listdir(data) if f.endswith(".data"))
        if len(files) < args.files:
            files = record(perf, data, args.files)
        files = files[:args.files]
        print("%d recordings, %.1f MiB in all; %s, %d cores, load average %.2f"
              % (len(files), sum(os.path.getsize(f) for f in files) / 2**20,
                 platform.python_version(), os.cpu_count(), os.getloadavg()[0]))
        from perfdata import cli
        from perfdata.fleet.command import file_options
        options = file_options(cli.build_parser("fleet").parse_args(
            ["fleet", "collapse", "x"]))
        ok = True
        for state in ("cold", "warm"):
            ok &= measure(tmp, files, args.workers, state, options)
        if args.parquet_mib:
            src = os.path.join(tmp, "big-src.data")
            if not os.path.isfile(src):
                subprocess.run([perf, "record", "-q", "-g", "-F", "10000", "-o", src, "--",
                                sys.executable, "-c", LOOP % 2.0],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            big = os.path.join(tmp, "big.data")
            make_big(src, big, args.parquet_mib << 20)
            size = os.path.getsize(big) / 2**20
            pq_dir = os.path.join(tmp, "big-parquet")
            w, r, rc, c = run_measured(PERFDATA + ["export", big, "--format", "parquet",
                                                   "-o", pq_dir])
            assert rc == 0
            import pyarrow.parquet as pq
            nrows = pq.ParquetFile(os.path.join(pq_dir, "samples.parquet")).metadata.num_rows
            stats = subprocess.run(PERFDATA + ["stats", big], capture_output=True, text=True,
                                   cwd=REPO).stdout
            print("parquet export of %.0f MiB: %.1f s wall, %.1f s CPU, peak RSS %.0f MiB; "
                  "%d rows (%s), %.1f MiB of Parquet"
                  % (size, w, c, r / 1024.0, nrows,
                     next((ln.strip() for ln in stats.splitlines() if "SAMPLE" in ln), "?"),
                     sum(os.path.getsize(os.path.join(pq_dir, f))
                         for f in os.listdir(pq_dir)) / 2**20))
            os.unlink(big)
        return 0 if ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
