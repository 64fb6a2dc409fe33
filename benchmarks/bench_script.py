#!/usr/bin/env python3
"""`perfdata script` against `perf script` on the same files, in one run.

    python3 benchmarks/bench_script.py [--fp FILE] [--dwarf FILE] [--repeat 3] [--keep DIR]

Without --fp/--dwarf it records, with perf, one of the bundled test programs
(samples/bin/threads: two threads through libc), into a tmp dir:
  fp:    ~30,000 frame-pointer samples     (perf record -g -F 4000)
  dwarf: ~30 MiB of --call-graph=dwarf     (perf record --call-graph=dwarf -F 1000)
then prints, best of --repeat runs, the wall and CPU time of each command and
the ratios perfdata/perf: "warm" runs find the symbol tables in perfdata's
cache (~/.cache/perfdata, filled by an earlier run: the usual case when a
profile is read again), "first" runs start each with an empty cache (the
first run on a machine: ELF symbol tables built, and the kernel's kallsyms
parsed, ~0.4 s, once per kernel).  The last
column counts the frames perf resolved that perfdata prints identically, and
the deliberate differences docs/differences.md lists (tests/script_compare.py).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))

from bench_reader import PERFDATA, best_of, compile_bytecode, fmt_row  # noqa: E402

PROGRAM = os.path.join(REPO, "samples", "bin", "threads")


def record(perf, out, opts, seconds):
    subprocess.run([perf, "record", "-q", "-o", out] + opts + ["--", PROGRAM, str(seconds)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def agreement(perf, path):
    """(equal frames, frames perf resolved) by the test suite's comparer,
    which aligns samples and knows the deliberate differences."""
    from script_compare import compare
    theirs = subprocess.run([perf, "script", "-i", path], capture_output=True,
                            text=True).stdout
    ours = subprocess.run(PERFDATA + ["script", path], capture_output=True, text=True,
                          cwd=REPO).stdout
    stats = compare(ours, theirs)
    deliberate = sum(stats[k] for k in ("plt", "return-address", "dwarf-cut"))
    return stats["equal"], stats["perf_resolved"], deliberate


def first_runs(cmd, repeat):
    """best_of with an empty symbol cache for every run."""
    best = None
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-cache.") as cache:
            os.environ["PERFDATA_CACHE_DIR"] = cache
            try:
                got = best_of(cmd, 1)
            finally:
                del os.environ["PERFDATA_CACHE_DIR"]
        best = got if best is None else tuple(min(a, b) for a, b in zip(best, got))
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fp")
    ap.add_argument("--dwarf")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep")
    args = ap.parse_args(argv)
    compile_bytecode()
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("perf is not installed")
    tmp = args.keep or tempfile.mkdtemp(prefix="bench_script.")
    os.makedirs(tmp, exist_ok=True)
    fp = args.fp or record(perf, os.path.join(tmp, "fp.data"), ["-g", "-F", "4000"], 6.5)
    dwarf = args.dwarf or record(perf, os.path.join(tmp, "dwarf.data"),
                                 ["--call-graph=dwarf", "-F", "1000"], 3.4)
    widths = (6, 6, 8, 10, 10, 10, 11, 11, 11, 14)
    print(fmt_row(("file", "MiB", "samples", "perf s", "warm s", "first s", "warm/perf",
                   "first/perf", "cpu warm/perf", "frames equal"), widths))
    print(fmt_row(["---"] * 10, widths))
    import perfdata
    for name, path in (("fp", fp), ("dwarf", dwarf)):
        samples = sum(1 for _ in perfdata.open(path).samples())
        first, _, _ = first_runs(PERFDATA + ["script", path], args.repeat)
        ours, _, ours_cpu = best_of(PERFDATA + ["script", path], args.repeat)
        theirs, _, theirs_cpu = best_of([perf, "script", "-i", path], args.repeat)
        same, total, deliberate = agreement(perf, path)
        print(fmt_row((name, "%.1f" % (os.path.getsize(path) / 2 ** 20), samples,
                       "%.2f" % theirs, "%.2f" % ours, "%.2f" % first,
                       "%.1fx" % (ours / theirs), "%.1fx" % (first / theirs),
                       "%.1fx" % (ours_cpu / max(theirs_cpu, 1e-3)),
                       "%d/%d%s" % (same, total, " (+%d deliberate)" % deliberate
                                    if deliberate else "")), widths))
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
