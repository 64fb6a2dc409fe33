#!/usr/bin/env python3
"""`perfdata script` against `perf script` on the same files, in one run.

    python3 benchmarks/bench_script.py [--fp FILE] [--dwarf FILE] [--repeat 3] [--keep DIR]

Without --fp/--dwarf it records, with perf, one of the bundled test programs
(samples/bin/threads: two threads through libc), into a tmp dir:
  fp:    ~30,000 frame-pointer samples     (perf record -g -F 4000)
  dwarf: ~30 MiB of --call-graph=dwarf     (perf record --call-graph=dwarf -F 1000)
then prints, best of --repeat runs, the wall and CPU time of each command, the
ratios perfdata/perf, and the share of stack lines that are identical.
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

from bench_reader import PERFDATA, best_of, fmt_row  # noqa: E402

PROGRAM = os.path.join(REPO, "samples", "bin", "threads")


def record(perf, out, opts, seconds):
    subprocess.run([perf, "record", "-q", "-o", out] + opts + ["--", PROGRAM, str(seconds)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def same_lines(perf, path):
    theirs = subprocess.run([perf, "script", "-i", path], capture_output=True,
                            text=True).stdout.splitlines()
    ours = subprocess.run(PERFDATA + ["script", path], capture_output=True, text=True,
                          cwd=REPO).stdout.splitlines()
    frames = [(a, b) for a, b in zip(theirs, ours) if a.startswith("\t")]
    return sum(a == b for a, b in frames), len(frames), len(theirs) == len(ours)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fp")
    ap.add_argument("--dwarf")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep")
    args = ap.parse_args(argv)
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("perf is not installed")
    tmp = args.keep or tempfile.mkdtemp(prefix="bench_script.")
    os.makedirs(tmp, exist_ok=True)
    fp = args.fp or record(perf, os.path.join(tmp, "fp.data"), ["-g", "-F", "4000"], 3.8)
    dwarf = args.dwarf or record(perf, os.path.join(tmp, "dwarf.data"),
                                 ["--call-graph=dwarf", "-F", "1000"], 1.8)
    widths = (6, 6, 8, 14, 14, 11, 11, 16)
    print(fmt_row(("file", "MiB", "samples", "ours wall/cpu", "perf wall/cpu", "ratio wall",
                   "ratio cpu", "same stack lines"), widths))
    print(fmt_row(["---"] * 8, widths))
    import perfdata
    for name, path in (("fp", fp), ("dwarf", dwarf)):
        samples = sum(1 for _ in perfdata.open(path).samples())
        ours, _, ours_cpu = best_of(PERFDATA + ["script", path], args.repeat)
        theirs, _, theirs_cpu = best_of([perf, "script", "-i", path], args.repeat)
        same, total, aligned = same_lines(perf, path)
        print(fmt_row((name, "%.1f" % (os.path.getsize(path) / 2 ** 20), samples,
                       "%.2f/%.2f" % (ours, ours_cpu), "%.2f/%.2f" % (theirs, theirs_cpu),
                       "%.1fx" % (ours / theirs), "%.1fx" % (ours_cpu / max(theirs_cpu, 1e-3)),
                       "%d/%d%s" % (same, total, "" if aligned else " (unaligned)")), widths))
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
