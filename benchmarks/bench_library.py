#!/usr/bin/env python3
"""The library's face against the command (issue 35: at most 1.2x).

    python3 benchmarks/bench_library.py [FILE.data ...] [--repeat 5] [--keep DIR]

Without files it records, with perf, the issue's case: a CPython workload
(json, regular expressions) with `-g` (~12,000 samples), and the same with
--call-graph=dwarf; the bundled samples/threads.fp.data is measured too.
For each file, rounds of three processes: `perfdata report FILE` (output
to /dev/null), the README's library example as written (its file replaced
by FILE), and `perfdata.profile(FILE).report()` alone, without printing.  Each run is the wall
time and CPU time of its process tree (perf stat's task-clock); the figures
are medians over the rounds, the ratios the medians of each round's own
ratio to the command's run of that round.  Then the same two in one
process, as in a notebook where perfdata is imported already: rounds of
`perfdata.cli.main(["report", ...])` and `profile(FILE).report()`, CPU time
of each call (getrusage: the process's and its workers', a sharded run's); the difference between the two tables is
the start-up (the command defers the standard modules construct imports and
never uses, perfdata/cli.py; a program importing perfdata keeps
sys.modules as it is).  The symbol cache is warm (a
first run of each fills it), as for a user's second look at a profile.
"""
import argparse
import os
import re
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from bench_reader import PERFDATA, compile_bytecode  # noqa: E402
from bench_real import PY_WORK, rec, run_tree, shown_ratio  # noqa: E402

BUNDLED = os.path.join(REPO, "samples", "threads.fp.data")
BUNDLED_DEBUG = os.path.join(REPO, "samples", "buildids")


def readme_example():
    """The python block of the README's library section."""
    with open(os.path.join(REPO, "README.md")) as f:
        text = f.read()
    section = text[text.index("## The library\n"):text.index("## Where the rest lives")]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def commands(path):
    """{name: argv} of the three runs for one file."""
    debug = BUNDLED_DEBUG if path == BUNDLED else os.path.join(REPO, "samples", "no-such-dir")
    example = readme_example().replace('"samples/threads.fp.data"', repr(path)).replace(
        '"samples/buildids"', repr(debug))
    alone = "import perfdata\nperfdata.profile(%r, debug_dirs=[%r]).report()\n" % (path, debug)
    return {
        "perfdata report": PERFDATA + ["report", path, "--debug-dir", debug, "-o", os.devnull],
        "README example": [sys.executable, "-c", example],
        "profile().report()": [sys.executable, "-c", alone],
    }


def checked(cmd):
    wall, _, rc, cpu = run_tree(cmd)
    if rc != 0:
        raise SystemExit("failed (rc %d): %s" % (rc, " ".join(cmd[:4])))
    return wall, cpu


def bench(path, repeat):
    runs = commands(path)
    for cmd in runs.values():          # (the symbol cache filled, the pages read)
        checked(cmd)
    got = {name: [] for name in runs}
    for _ in range(repeat):
        for name, cmd in runs.items():
            got[name].append(checked(cmd))
    base = got["perfdata report"]
    print("%s (%.1f MiB)" % (os.path.basename(path), os.path.getsize(path) / 1048576))
    print("  %-20s %8s %8s %8s %8s" % ("", "wall s", "cpu s", "x wall", "x cpu"))
    for name, times in got.items():
        rw = statistics.median(t[0] / b[0] for t, b in zip(times, base))
        rc = statistics.median(t[1] / b[1] for t, b in zip(times, base))
        print("  %-20s %8.3f %8.3f %8s %8s" % (
            name, statistics.median(t[0] for t in times),
            statistics.median(t[1] for t in times), shown_ratio(rw), shown_ratio(rc)))


IN_PROCESS = """
import os, statistics, sys, time
import perfdata, perfdata.cli
path, debug, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
def command():
    perfdata.cli.main(["report", path, "--debug-dir", debug, "-o", os.devnull])
def library():
    perfdata.profile(path, debug_dirs=[debug]).report()
got = {command: [], library: []}
for run in (command, library):
    run()
def cpu():
    import resource
    own, workers = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                   resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime
for _ in range(repeat):
    for run in got:
        t = cpu()
        run()
        got[run].append(cpu() - t)
ratio = statistics.median(b / max(a, 1e-6) for a, b in zip(got[command], got[library]))
print("  in one process: command %.3f s, profile().report() %.3f s CPU: %.2fx" % (
    statistics.median(got[command]), statistics.median(got[library]), ratio))
"""


def bench_in_process(path, repeat):
    import subprocess
    debug = BUNDLED_DEBUG if path == BUNDLED else os.path.join(REPO, "samples", "no-such-dir")
    subprocess.run([sys.executable, "-c", IN_PROCESS, path, debug, str(repeat)], check=True,
                   cwd=REPO)


def record(directory):
    """The issue's recordings of a CPython workload: -g and DWARF."""
    import shutil
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("perf is not installed: give recordings as arguments")
    script = os.path.join(directory, "work.py")
    with open(script, "w") as f:
        f.write(PY_WORK % 120)
    out = []
    for name, opts in (("python-fp.data", ["-g", "-F", "4000"]),
                       ("python-dwarf.data", ["--call-graph=dwarf,8192", "-F", "1000"])):
        path = os.path.join(directory, name)
        if not os.path.exists(path):
            rec(perf, path, opts, [sys.executable, script])
        out.append(path)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", help="directory for the recordings (reused if present)")
    args = ap.parse_args(argv)
    compile_bytecode()
    files = args.files
    if not files:
        directory = args.keep or tempfile.mkdtemp(prefix="bench-library.")
        os.makedirs(directory, exist_ok=True)
        files = record(directory) + [BUNDLED]
    for path in files:
        bench(os.path.abspath(path), args.repeat)
        bench_in_process(os.path.abspath(path), args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
