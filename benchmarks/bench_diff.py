#!/usr/bin/env python3
"""`perfdata diff BASE NEW` against the two `perfdata collapse` runs of the
same files (issue 36: the diff must take at most their time), in
interleaved rounds: collapse BASE, collapse NEW, diff BASE NEW, each
round; wall time, best and median, and the ratio of the diff's to the two
collapses' sum (per round, then its median).

    python3 benchmarks/bench_diff.py [BASE.data NEW.data] [--rounds 5]
        [--keep DIR] [--samples 70000]

Without files it records a pair (tests/progs/diff_work.c: -O1, then with
grows()' work doubled; -g at 20 kHz, about --samples samples each) in a
temporary directory (the two averaging --samples), or in --keep DIR (kept, and reused when there)."""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "tests" / "progs" / "diff_work.c"
FREQ = 20000
# diff_work's samples per unit of its N at FACTOR 1 (measured: N = 14e6 gave
# 27,688 samples: 10 rounds of 2.5 N loop iterations, about 0.4 ns each)
SAMPLES_PER_N = 27688 / 14e6


def record_pair(folder: Path, samples: int) -> tuple[Path, Path]:
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("perf is not installed")
    folder.mkdir(parents=True, exist_ok=True)
    base, new = folder / "base.data", folder / "new.data"
    if base.exists() and new.exists():
        return base, new
    binary = folder / "diff_work"
    subprocess.run(["gcc", "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(binary),
                    str(SOURCE)], check=True)
    # (NEW's grows() does twice the work: NEW has 7/5 of BASE's samples; the
    # two average `samples`)
    n = str(int(samples / 1.2 / SAMPLES_PER_N))
    for path, factor in ((base, "1"), (new, "2")):
        subprocess.run([perf, "record", "-q", "-g", "-F", str(FREQ), "-o", str(path), "--",
                        str(binary), factor, n], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return base, new


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def sample_count(path: Path) -> int:
    out = subprocess.run([sys.executable, "-m", "perfdata", "stats", str(path)],
                         capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("SAMPLE events:"):
            return int(line.split(":")[1].split()[0])
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", metavar="DIR")
    ap.add_argument("--samples", type=int, default=70000)
    args = ap.parse_args()
    if len(args.files) == 2:
        base, new = Path(args.files[0]), Path(args.files[1])
    elif not args.files:
        folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-diff-"))
        base, new = record_pair(folder, args.samples)
    else:
        raise SystemExit("give BASE and NEW, or no file")
    perfdata = [sys.executable, "-m", "perfdata"]
    runs = {"collapse BASE": perfdata + ["collapse", str(base)],
            "collapse NEW": perfdata + ["collapse", str(new)],
            "diff BASE NEW": perfdata + ["diff", str(base), str(new)]}
    for cmd in runs.values():      # (warm: the symbol cache, the page cache)
        timed(cmd)
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, cmd in runs.items():
            times[name].append(timed(cmd))
    print("BASE %s: %d samples; NEW %s: %d samples" % (base, sample_count(base), new,
                                                       sample_count(new)))
    for name, values in times.items():
        print("%-16s best %6.2f s   median %6.2f s" % (name, min(values),
                                                        statistics.median(values)))
    ratios = [d / (b + n) for b, n, d in zip(times["collapse BASE"], times["collapse NEW"],
                                             times["diff BASE NEW"])]
    print("diff / (collapse BASE + collapse NEW): median %.2f, best round %.2f, worst %.2f"
          % (statistics.median(ratios), min(ratios), max(ratios)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
