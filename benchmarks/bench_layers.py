#!/usr/bin/env python3
"""Where `perfdata script -j 1` spends its CPU on one file, layer by layer.

    python3 benchmarks/bench_layers.py FILE.data [--repeat 3]

Each row runs the pipeline up to one layer more, in this process, and gives
its CPU time (best of --repeat; the symbol tables come from perfdata's
cache, so run `perfdata script` once first for a warm figure): the records
in file order, in perf's time order, with each sample decoded, the session's
Sample events (threads, maps), the symbolized samples as `perfdata script`
makes them (its options' defaults), and the whole command (its text written
to /dev/null, in a child: the interpreter's start and the imports
included).  The difference between two rows is the cost of a layer.
"""
import argparse
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from perfdata import cli  # noqa: E402
import perfdata  # noqa: E402
from perfdata.session.stream import Sample, SessionStream  # noqa: E402
from perfdata.resolve import build_sample_symbolizer  # noqa: E402
from perfdata.views.options import resolve_options  # noqa: E402


def best_cpu(work, repeat):
    best, count = None, 0
    for _ in range(repeat):
        start = time.process_time()
        count = work()
        spent = time.process_time() - start
        best = spent if best is None or spent < best else best
    return best, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    path = args.data
    script_args = cli.build_parser("script").parse_args(["script", "-j", "1", "-i", path])
    # (the collector as perfdata.cli sets it for a run)
    import gc
    gc.set_threshold(500_000, 100, 100)

    def records(order):
        with perfdata.open(path) as pf:
            return sum(1 for _ in pf.records(order))

    def decoded():
        with perfdata.open(path) as pf:
            n = 0
            for rec in pf.records():
                if rec.name == "SAMPLE":
                    rec.parse()
                    n += 1
            return n

    def session():
        with perfdata.open(path) as pf:
            return sum(1 for e in SessionStream(pf) if type(e) is Sample)

    def symbolized():
        with perfdata.open(path) as pf:
            return sum(len(s.frames) for s in build_sample_symbolizer(pf, resolve_options(script_args)))

    def whole():
        with open(os.devnull, "w") as null:
            before = os.times()
            subprocess.run([sys.executable, os.path.join(REPO, "cli.py"), "script", "-j", "1",
                            "-i", path], stdout=null, check=True)
            after = os.times()
        return after.children_user + after.children_system - \
            before.children_user - before.children_system

    rows = [("records, file order", lambda: records("file"), "records"),
            ("records, time order", lambda: records("time"), "records"),
            ("+ samples decoded", decoded, "samples"),
            ("session: Sample events", session, "samples"),
            ("symbolized samples", symbolized, "frames")]
    for name, work, unit in rows:
        spent, count = best_cpu(work, args.repeat)
        print("%-24s %.3f s CPU  (%d %s)" % (name, spent, count, unit))
    print("%-24s %.3f s CPU  (the command, text to /dev/null)" % (
        "perfdata script -j 1", min(whole() for _ in range(args.repeat))))


if __name__ == "__main__":
    main()
