#!/usr/bin/env python3
"""`perfdata offcpu` against `perf sched timehist` on a system-wide scheduler
recording: each run in turn, `--rounds` times; wall time (best and median)
and CPU time (user + system, best and median) of each, outputs to
/dev/null; perfdata with its compiled sums (perfdata/core/_switches.c) and on
the pure-Python path (PERFDATA_CORE=pure).

    python3 benchmarks/bench_offcpu.py [FILE] [--seconds 60] [--rounds 5]

Without FILE it records one first, `perf sched record -a -- sleep SECONDS`,
in a temporary folder (never in the checkout: a minute of a busy machine's
switches is tens of MiB), and removes it after.  Both read the same file:
timehist prints a line per switch, perfdata the per-thread table (wall, run
and wait time of each thread: what timehist's lines add up to)."""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def record(perf: str, seconds: float, folder: str) -> str:
    path = os.path.join(folder, "sched.data")
    subprocess.run([perf, "sched", "record", "-o", path, "--", "sleep", str(seconds)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("perf is not installed")
    env = dict(os.environ)
    env.pop("PERFDATA_CORE", None)
    pure_env = dict(env, PERFDATA_CORE="pure")
    folder = tempfile.mkdtemp(prefix="bench-offcpu-")
    try:
        path = args.file or record(perf, args.seconds, folder)
        perfdata = [sys.executable, "-m", "perfdata", "offcpu", path]
        runs = {
            "perf sched timehist": ([perf, "sched", "timehist", "-i", path], env),
            "perfdata offcpu --format threads": (perfdata + ["--format", "threads"], env),
            "perfdata offcpu (the report)": (perfdata, env),
            "perfdata offcpu --format threads, pure": (perfdata + ["--format", "threads"],
                                                       pure_env),
        }
        walls: dict[str, list[float]] = {name: [] for name in runs}
        cpus: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, (cmd, run_env) in runs.items():
                wall, cpu = timed(cmd, run_env)
                walls[name].append(wall)
                cpus[name].append(cpu)
        size = os.path.getsize(path) / (1 << 20)
        print("%s: %.1f MiB; %d rounds, each command in turn; load average %.2f"
              % ("a recording of %g s" % args.seconds if not args.file else path, size,
                 args.rounds, os.getloadavg()[0]))
        print()
        print("| command | wall best / median | CPU best / median |")
        print("|---|---|---|")
        for name in runs:
            print("| %s | %.3f / %.3f s | %.3f / %.3f s |"
                  % (name, min(walls[name]), statistics.median(walls[name]),
                     min(cpus[name]), statistics.median(cpus[name])))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
