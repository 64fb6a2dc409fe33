#!/usr/bin/env python3
"""`perfdata stats` against `perf report --stats`, side by side in one run:
perf, perfdata on the compiled record walk, perfdata on the pure-Python path
(PERFDATA_CORE=pure), each run in turn, `--rounds` times; wall time (best
and median), start-up (the same command on a recording of `true`, a few
records; for perfdata also `perfdata --version`, which imports less) and
records/s net of start-up (best wall less best start-up: the machine's other
load only ever adds).

    python3 benchmarks/bench_stats.py BIG.data [--rounds 7]

Checks first that the compiled and pure outputs are the same bytes and that
perfdata's TOTAL is perf's."""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         check=True).stdout
    return time.perf_counter() - t0, out


def total_of(text: bytes) -> int:
    match = re.search(rb"TOTAL events:\s+(\d+)", text)
    if match is None:
        raise SystemExit("no TOTAL line in %r" % text[:200])
    return int(match.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--rounds", type=int, default=11)
    args = ap.parse_args()
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("perf is not installed")
    tiny = os.path.join(tempfile.mkdtemp(prefix="bench-stats-"), "true.data")
    subprocess.run([perf, "record", "-q", "-o", tiny, "--", "true"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ)
    env.pop("PERFDATA_CORE", None)
    pure_env = dict(env, PERFDATA_CORE="pure")
    perfdata = [sys.executable, "-m", "perfdata", "stats"]
    runs = {
        "perf report --stats": ([perf, "report", "--stats", "-i"], env),
        "perfdata stats, compiled": (perfdata, env),
        "perfdata stats, pure": (perfdata, pure_env),
    }
    version = subprocess.run(perfdata[:-1] + ["--version"], env=env, capture_output=True,
                             text=True).stdout
    print("".join(line for line in version.splitlines(True) if "core" in line), end="")
    _, compiled_out = timed(perfdata + [args.file], env)
    _, pure_out = timed(perfdata + [args.file], pure_env)
    _, perf_out = timed([perf, "report", "--stats", "-i", args.file], env)
    if compiled_out != pure_out:
        raise SystemExit("compiled and pure outputs differ")
    records = total_of(compiled_out)
    if records != total_of(perf_out):
        raise SystemExit("TOTAL %d, perf's %d" % (records, total_of(perf_out)))
    walls: dict[str, list[float]] = {name: [] for name in runs}
    starts: dict[str, list[float]] = {name: [] for name in runs}
    versions: list[float] = []
    for _ in range(args.rounds):
        for name, (cmd, run_env) in runs.items():
            walls[name].append(timed(cmd + [args.file], run_env)[0])
            starts[name].append(timed(cmd + [tiny], run_env)[0])
        versions.append(timed(perfdata[:-1] + ["--version"], env)[0])
    size = os.path.getsize(args.file) / (1 << 20)
    print("%s: %.1f MiB, %d records; %d rounds, each command in turn; load average %.2f"
          % (args.file, size, records, args.rounds, os.getloadavg()[0]))
    print()
    print("| command | wall best / median | start-up: recording of `true` | net | "
          "records/s net | start-up: `--version` | records/s net of that |")
    print("|---|---|---|---|---|---|---|")
    for name in runs:
        best, median, start = min(walls[name]), statistics.median(walls[name]), min(starts[name])
        net = max(best - start, 1e-4)
        other = ""
        if name.startswith("perfdata"):
            version = min(versions)
            other = "%.3f s | %.2fM" % (version, records / max(best - version, 1e-4) / 1e6)
        else:
            other = " | "
        print("| %s | %.3f / %.3f s | %.3f s | %.3f s | %.2fM | %s |"
              % (name, best, median, start, net, records / net / 1e6, other))
    return 0


if __name__ == "__main__":
    sys.exit(main())
