#!/usr/bin/env python3
"""The compiled core against the pure-Python path and perf, side by side.

    python3 benchmarks/bench_core.py DIR [--repeat 5]
                                         [--command script|collapse|report|flamegraph]
                                         [--only NAME,...] [--no-first] [--no-pure]
                                         [--before CHECKOUT]

DIR holds recordings (NAME.data), e.g. those `bench_real.py --record-only
--keep DIR` makes (make, cc1plus, forks, ...).  For each, rounds of: perf
script; perfdata with the compiled core, warm (its cache filled) and first
(an empty $PERFDATA_CACHE_DIR); the same with PERFDATA_CORE=pure.  Each run
is wall time and CPU time of the whole process tree (perf stat's
task-clock: the workers of a sharded run count) and peak RSS; the figures
are medians over the rounds, the ratios the medians of each round's own
ratio to perf's run of that round (the machine's speed drifts).  Default
options, output to /dev/null; `collapse` and `flamegraph` are compared
with `perf script` too (what stackcollapse-perf.pl and flamegraph.pl
read); `report` with `perf report --stdio --no-children -g none` (the
table perfdata report prints).  --before CHECKOUT adds the compiled core of
another checkout (its extensions built in place), measured in the same
rounds: a change's before and after under the same load.
"""
import argparse
import glob
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bench_reader import PERFDATA, compile_bytecode  # noqa: E402
from bench_real import run_tree, shown_ratio  # noqa: E402


def one(cmd, env):
    """run_tree(cmd) with the environment changed as `env` says (None: unset)."""
    saved = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        # (from a directory holding no perfdata: `python -m` puts the
        # current directory before PYTHONPATH, and the checkout's own would
        # run for every kind)
        wall, rss, rc, cpu = run_tree(cmd, cwd=tempfile.gettempdir())
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if rc != 0:
        raise SystemExit("failed (rc %d): %s" % (rc, " ".join(cmd)))
    return wall, cpu, rss


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--command", default="script", choices=("script", "collapse", "report", "flamegraph"))
    ap.add_argument("--only", help="comma-separated recording names")
    ap.add_argument("--no-first", action="store_true", help="warm runs only")
    ap.add_argument("--no-pure", action="store_true", help="the compiled core only")
    ap.add_argument("--before", metavar="CHECKOUT",
                    help="another checkout's compiled core, measured alongside")
    args = ap.parse_args(argv)
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("perf is not installed")
    compile_bytecode()
    data_dir = os.path.abspath(args.dir)
    os.chdir(tempfile.gettempdir())
    names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(data_dir, "*.data")))
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    # (each kind's perfdata by PYTHONPATH, run from a directory holding none)
    repo = os.path.dirname(HERE)
    kinds = [("compiled", {"PERFDATA_CORE": None, "PYTHONPATH": repo})]
    if not args.no_pure:
        kinds.append(("pure", {"PERFDATA_CORE": "pure", "PYTHONPATH": repo}))
    if args.before:
        compile_bytecode(os.path.abspath(args.before))
        kinds.append(("before", {"PERFDATA_CORE": None,
                                 "PYTHONPATH": os.path.abspath(args.before)}))

    print("| recording | perf wall / CPU / RSS | path | warm wall / CPU / RSS | warm vs perf "
          "(wall, CPU) | first wall / CPU | first vs perf (wall, CPU) | load average |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        data = os.path.join(data_dir, name + ".data")
        perf_cmd = [perf, "report", "--stdio", "--no-children", "-g", "none", "-i", data] \
            if args.command == "report" else [perf, "script", "-i", data]
        ours = PERFDATA + [args.command, data]
        with tempfile.TemporaryDirectory(prefix="bench-core.") as warm_root:
            # (a warm cache per kind: another checkout's cache files may be
            # of another format, each kind's run replacing the other's)
            warm = {kind: os.path.join(warm_root, kind) for kind, _ in kinds}
            for kind, env in kinds:       # (fill the warm caches)
                one(ours, dict(env, PERFDATA_CACHE_DIR=warm[kind]))
            rounds = []
            for _ in range(args.repeat):
                r = {"perf": one(perf_cmd, {})}
                for kind, env in kinds:
                    r[kind, "warm"] = one(ours, dict(env, PERFDATA_CACHE_DIR=warm[kind]))
                    if not args.no_first:
                        with tempfile.TemporaryDirectory(prefix="bench-core-first.") as fresh:
                            r[kind, "first"] = one(ours, dict(env, PERFDATA_CACHE_DIR=fresh))
                rounds.append(r)
        med = {k: tuple(statistics.median(r[k][i] for r in rounds) for i in range(2)) +
               (max(r[k][2] for r in rounds),) for k in rounds[0]}
        ratio = {k: tuple(statistics.median(r[k][i] / max(r["perf"][i], 1e-3) for r in rounds)
                          for i in range(2)) for k in rounds[0] if k != "perf"}
        p = med["perf"]
        for kind, _ in kinds:
            w = med[kind, "warm"]
            first = med.get((kind, "first"))
            print("| %s | %.2f s / %.2f s / %d MiB | %s | %.2f s / %.2f s / %d MiB | %s, %s | %s | %s "
                  "| %.1f |"
                  % (name, p[0], p[1], p[2] // 1024, kind, w[0], w[1], w[2] // 1024,
                     shown_ratio(ratio[kind, "warm"][0]), shown_ratio(ratio[kind, "warm"][1]),
                     "%.2f s / %.2f s" % first[:2] if first else "-",
                     "%s, %s" % tuple(map(shown_ratio, ratio[kind, "first"]))
                     if first else "-", os.getloadavg()[0]))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
