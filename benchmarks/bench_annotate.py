#!/usr/bin/env python3
"""`perfdata annotate` against `perf annotate --stdio` on the 10 hottest
functions of a recording of a build: wall and CPU time (user + system, the
children's included: perf's objdump) of each, the first perfdata run with
an empty cache (PERFDATA_CACHE_DIR a fresh folder) and then warm,
`--rounds` times each; outputs to /dev/null.

    python3 benchmarks/bench_annotate.py [FILE] [--rounds 3] [--jobs 2]

Without FILE it writes a small C project (four files of generated loops)
in a temporary folder and records its build, `perf record -g -F 20000 --
make -j2`.  Both commands are limited to the same functions by
`--percent-limit`: halfway between the 10th and the 11th hottest
function's share of the period, as `perf report --sort dso,sym` gives them
(perf annotate takes one symbol name, and a run per function would read
the file ten times)."""
from __future__ import annotations

import argparse
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall s, CPU s of the child and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def write_project(folder: str) -> None:
    """Four C files of 20 functions of 20 loops each, and their Makefile."""
    rnd = random.Random(1)
    for k in range(4):
        with open(os.path.join(folder, "f%d.c" % k), "w") as f:
            for j in range(20):
                f.write("static int g%d_%d(int *a, int n) {\n int s = 0;\n" % (k, j))
                for _ in range(20):
                    f.write(" for (int i = 0; i < n; i++) s += a[i] * %d + (s >> %d) ^ %d;\n"
                            % (rnd.randint(1, 99), rnd.randint(1, 9), rnd.randint(1, 999)))
                f.write(" return s;\n}\n")
            f.write("int f%d(int *a, int n) { return %s; }\n"
                    % (k, " + ".join("g%d_%d(a,n)" % (k, j) for j in range(20))))
    with open(os.path.join(folder, "main.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    with open(os.path.join(folder, "Makefile"), "w") as f:
        f.write("OBJS=f0.o f1.o f2.o f3.o\nall: prog\nprog: $(OBJS) main.o\n\tgcc -o $@ $^\n"
                "%.o: %.c\n\tgcc -O2 -g -c $< -o $@\n")


def record(perf: str, folder: str, jobs: int) -> str:
    write_project(folder)
    path = os.path.join(folder, "make.data")
    subprocess.run([perf, "record", "-q", "-g", "-F", "20000", "-o", path, "--", "make",
                    "-j%d" % jobs], cwd=folder, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return path


def limit_for_ten(perf: str, path: str) -> float:
    """A --percent-limit that keeps the 10 hottest functions."""
    out = subprocess.run([perf, "report", "-i", path, "--stdio", "--no-children", "-g", "none",
                          "--sort", "dso,sym", "-q", "--percent-limit", "0"],
                         capture_output=True, text=True, check=True).stdout
    shares = sorted((float(m.group(1)) for m in re.finditer(r"^\s+(\d+\.\d+)%", out, re.M)),
                    reverse=True)
    if len(shares) < 11 or shares[9] == shares[10]:
        raise SystemExit("no percent limit keeps exactly 10 functions: %s" % shares[:12])
    return (shares[9] + shares[10]) / 2


def summary(name: str, runs: list[tuple[float, float]]) -> str:
    walls, cpus = [w for w, _ in runs], [c for _, c in runs]
    return "%-34s wall best %6.2f s median %6.2f s   CPU best %6.2f s median %6.2f s" % (
        name, min(walls), statistics.median(walls), min(cpus), statistics.median(cpus))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("perf is not installed")
    folder = tempfile.mkdtemp(prefix="bench-annotate-")
    try:
        path = args.file or record(perf, folder, args.jobs)
        limit = "%.4f" % limit_for_ten(perf, path)
        env = dict(os.environ, PYTHONPATH=ROOT)
        ours = [sys.executable, "-m", "perfdata", "annotate", path, "--percent-limit", limit]
        theirs = [perf, "annotate", "--stdio", "-i", path, "--percent-limit", limit]
        results: dict[str, list[tuple[float, float]]] = {}
        for _ in range(args.rounds):
            cache = tempfile.mkdtemp(prefix="cache-", dir=folder)
            results.setdefault("perfdata annotate (first run)", []).append(
                timed(ours, dict(env, PERFDATA_CACHE_DIR=cache)))
            results.setdefault("perfdata annotate (warm)", []).append(
                timed(ours, dict(env, PERFDATA_CACHE_DIR=cache)))
            results.setdefault("perf annotate --stdio", []).append(timed(theirs))
        print("%s, --percent-limit %s (the 10 hottest functions)" % (path, limit))
        for name, runs in results.items():
            print(summary(name, runs))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
