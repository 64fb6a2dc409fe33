#!/usr/bin/env python3
"""`perfdata script` against `perf script` on recordings of real programs.

    python3 benchmarks/bench_real.py [--repeat 3] [--keep DIR] [--only NAME,...]
                                     [--python PYTHON] [--jobs N] [--perfparser PATH]

Records, with perf, into a tmp dir (or --keep DIR, reused when the files are
there), whatever of these the machine has:
  make     make -j2 compiling 12 generated C files with gcc -O2; perf record -g -F 20000
           (many short processes: cc1, as, collect2 per file)
  cc1plus  g++ -O2 -c on a generated template-heavy C++ file; perf record -g
  gcc      gcc -O2 -g -c on one generated C file of 120 functions; perf record -g
           (one short compiler run: most of a first run is the kernel's and
           the compiler's symbol tables)
  python   a CPython whose libpython carries full DWARF (pyenv's 3.12, else
           --python) running a json/regex workload; perf record --call-graph=dwarf
  sqlite   sqlite3 running an insert/join/group-by script; perf record --call-graph=dwarf
  forks    a shell (dash) starting 20,000 short processes (/bin/true), as a configure
           script or a CI job does; perf record -g -F 5000: seven side records
           (FORK, COMM, MMAP2 x4, EXIT) a process, and about one sample each
and, only when named in --only, python-big: the python workload ten times
longer (~300 MiB; memory must not grow with the file), and make-dwarf: the
make build above recorded with --call-graph=dwarf -F 2000 (what a user
records when -g gives garbage through cc1, built without frame pointers;
perf script then asks addr2line for the inline frames of every cc1 address,
and cc1 has no DWARF: about 85 s here, where --no-inline takes 0.5 s),
and make-dwarf-big: that build 8 times under one recording (~300 MiB of
short processes: the memory bar's file of many processes), and python-runs:
the python workload run 8 times under one recording (~600 MB, eight CPython
processes: issue 33's "600 MB DWARF recording").
then prints for each: perf script's wall and CPU time, perfdata script's
"first" run (every run with an empty $PERFDATA_CACHE_DIR: what a user's first
`perfdata script` after recording costs) and "warm" run (the cache filled by
an earlier run), their ratios to perf, and the peak RSS of each.  A round
runs perf, a first run and a warm run in turn, --repeat rounds a file; times
are the medians of the rounds, ratios the median of each round's own ratio
(the machine's speed drifts over minutes: with perf's runs all before
perfdata's, two runs ten minutes apart gave cc1plus warm 1.5x and 1.9x).
Output of both goes to /dev/null.  Peak RSS comes from GNU time (or wait4);
CPU time from `perf stat -e task-clock`, which counts every process of the
tree: perf script forks addr2line for inline frames on DWARF recordings, and
rusage misses that CPU (perf does not wait for those children: on the python
recording GNU time says 0.3 s where task-clock says 1.1 s).  Without perf stat
the CPU column falls back to rusage.
"""
import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from bench_reader import PERFDATA, compile_bytecode, run_measured  # noqa: E402

C_FUNC = """
static int f%(i)d_%(j)d(int *a, int n) {
    int s = 0;
    for (int k = 0; k < n; k++) { s += a[k] * %(j)d; if (s > 1000) s -= a[(k * 7) %% n]; }
    switch (n %% 5) { case 0: s++; break; case 1: s *= 3; break; case 2: s ^= 5; break;
                     default: s -= 2; }
    return s;
}
"""

CXX = r"""#include <map>
#include <vector>
#include <string>
#include <unordered_map>
#include <algorithm>
#include <functional>
#include <sstream>
#include <memory>
#include <tuple>
#include <set>
#include <regex>
template <int N> struct Unroll {
    template <class F> static void run(F&& f) { f(N); Unroll<N - 1>::run(f); }
};
template <> struct Unroll<0> { template <class F> static void run(F&&) {} };
template <class K, class V, int N>
std::map<K, std::vector<V>> build(const std::vector<std::tuple<K, V, std::string>>& in) {
    std::map<K, std::vector<V>> out;
    for (auto& [k, v, s] : in) { out[k].push_back(v); std::ostringstream os; os << s << N; }
    std::unordered_map<std::string, std::set<K>> idx;
    for (auto& [k, v, s] : in) idx[s].insert(k);
    Unroll<N>::run([&](int i) { std::sort(out[K{}].begin(), out[K{}].end()); (void)i; });
    std::regex re("[a-z]+" + std::to_string(N));
    return out;
}
%s
int main() { return 0; }
"""

PY_WORK = r"""
import json, re
doc = {"items": [{"id": i, "name": "item%%d" %% i, "tags": ["a", "b", str(i)],
                  "price": i * 1.5, "nested": {"x": [i, i + 1], "y": None}}
                 for i in range(2000)]}
pat = re.compile(r"(\w+)@(\w+)\.com|item(\d+)")
n = 0
for round in range(%d):
    text = json.dumps(doc)
    back = json.loads(text)
    n += len(pat.findall(text))
    n += sum(1 for m in re.finditer(r'"price": (\d+\.\d+)', text))
print(n)
"""

SQL = """
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);
CREATE TABLE u(a INTEGER, d TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
INSERT INTO t SELECT i, printf('row%%d', i %% 977), i * 0.5 FROM n;
INSERT INTO u SELECT a, upper(b) FROM t WHERE a %% 3 = 0;
CREATE INDEX ub ON u(d);
SELECT b, count(*), sum(c) FROM t JOIN u USING (a) GROUP BY b ORDER BY 3 DESC LIMIT 5;
SELECT count(*) FROM t WHERE b LIKE '%%7%%' AND c > 100;
SELECT d, max(a) FROM u GROUP BY d HAVING count(*) > 2 ORDER BY d LIMIT 3;
"""


def sh(cmd, **kw):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def rec(perf, out, opts, cmd, **kw):
    sh([perf, "record", "-q", "-o", out] + opts + ["--"] + cmd, **kw)
    return out


def installed_perfdata(venv):
    """[the perfdata console script] of a venv holding this checkout as
    the README's `pip install .` installs it (the compiled core, symbolic's
    DWARF index and isal where wheels exist; the venv made the first time,
    the checkout installed again each time, its dependencies kept)."""
    python = os.path.join(venv, "bin", "python")
    # (pip compiles the modules as it installs them, as a user's shell has
    # it do: not where PYTHONDONTWRITEBYTECODE is set, which would leave
    # every run compiling the modules changed since in memory)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not os.path.exists(python):
        sh([sys.executable, "-m", "venv", venv], env=env)
        sh([python, "-m", "pip", "install", "-q", REPO], env=env)
    else:
        sh([python, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", REPO],
           env=env)
    return [os.path.join(venv, "bin", "perfdata")]


def record_make(perf, d):
    src = os.path.join(d, "make-src")
    os.makedirs(src, exist_ok=True)
    names = []
    for i in range(12):
        body = "".join(C_FUNC % {"i": i, "j": j} for j in range(30))
        calls = " + ".join("f%d_%d(a, n)" % (i, j) for j in range(30))
        with open(os.path.join(src, "m%d.c" % i), "w") as f:
            f.write(body + "int m%d(int *a, int n) { return %s; }\n" % (i, calls))
        names.append("m%d.o" % i)
    with open(os.path.join(src, "Makefile"), "w") as f:
        f.write("all: %s\n%%.o: %%.c\n\tgcc -O2 -g -c $< -o $@\nclean:\n\trm -f *.o\n"
                % " ".join(names))
    sh(["make", "clean"], cwd=src)
    return rec(perf, os.path.join(d, "make.data"), ["-g", "-F", "20000"],
               ["make", "-j2"], cwd=src)


def record_make_dwarf(perf, d, builds=1):
    """make-dwarf: the make build with --call-graph=dwarf; make-dwarf-big:
    the same build 8 times under one recording (~300 MiB of many short
    processes, PIE compilers each at its own addresses)."""
    src = os.path.join(d, "make-src")
    if not os.path.exists(os.path.join(src, "Makefile")):
        record_make(perf, d)
    sh(["make", "clean"], cwd=src)
    if builds == 1:
        name, cmd = "make-dwarf.data", ["make", "-j2"]
    else:
        name, cmd = "make-dwarf-big.data", [
            "sh", "-c", "for i in $(seq %d); do make clean >/dev/null; make -j2; done" % builds]
    return rec(perf, os.path.join(d, name), ["--call-graph=dwarf", "-F", "2000"], cmd, cwd=src)


def record_gcc(perf, d):
    src = os.path.join(d, "one.c")
    with open(src, "w") as f:
        for i in range(4):
            f.write("".join(C_FUNC % {"i": i, "j": j} for j in range(30)))
            f.write("int m%d(int *a, int n) { return %s; }\n" % (
                i, " + ".join("f%d_%d(a, n)" % (i, j) for j in range(30))))
    return rec(perf, os.path.join(d, "gcc.data"), ["-g"],
               ["gcc", "-O2", "-g", "-c", src, "-o", os.path.join(d, "one.o")])


def record_cc1plus(perf, d):
    inst = "\n".join("template std::map<int, std::vector<double>> build<int, double, %d>("
                     "const std::vector<std::tuple<int, double, std::string>>&);" % n
                     for n in range(1, 9))
    src = os.path.join(d, "tmpl.cpp")
    with open(src, "w") as f:
        f.write(CXX % inst)
    return rec(perf, os.path.join(d, "cc1plus.data"), ["-g"],
               ["g++", "-O2", "-std=c++17", "-c", src, "-o", os.path.join(d, "tmpl.o")])


def dwarf_python(explicit=None):
    """A python whose libpython has .debug_info (pyenv's builds do)."""
    cands = [explicit] if explicit else sorted(
        glob.glob(os.path.expanduser("~/.pyenv/versions/3.12*/bin/python3.12")), reverse=True)
    for py in cands:
        if not py or not os.path.exists(py):
            continue
        libs = glob.glob(os.path.join(os.path.dirname(os.path.dirname(py)), "lib", "libpython3*.so.1.0"))
        if libs and b".debug_info" in subprocess.run(["readelf", "-S", libs[0]],
                                                      capture_output=True).stdout:
            return py
    return None


def record_python(perf, d, py):
    return rec(perf, os.path.join(d, "python.data"), ["--call-graph=dwarf"],
               [py, "-c", PY_WORK % 60])


def record_python_big(perf, d, py):
    return rec(perf, os.path.join(d, "python-big.data"), ["--call-graph=dwarf"],
               [py, "-c", PY_WORK % 600])


def record_python_runs(perf, d, py, runs=8):
    """python-runs: `runs` CPython processes one after another, each the
    python workload, under one --call-graph=dwarf recording."""
    script = os.path.join(d, "work.py")
    with open(script, "w") as f:
        f.write(PY_WORK % 125)
    return rec(perf, os.path.join(d, "python-runs.data"), ["--call-graph=dwarf"],
               ["sh", "-c", 'for i in $(seq %d); do "$0" "$1"; done' % runs, py, script])


def record_sqlite(perf, d):
    script = os.path.join(d, "q.sql")
    with open(script, "w") as f:
        f.write(SQL % 500000)
    with open(script) as f:
        return rec(perf, os.path.join(d, "sqlite.data"), ["--call-graph=dwarf"],
                   ["sqlite3", ":memory:"], stdin=f)


def record_forks(perf, d):
    loop = "i=0; while [ $i -lt 20000 ]; do /bin/true; i=$((i+1)); done"
    return rec(perf, os.path.join(d, "forks.data"), ["-g", "-F", "5000"],
               ["/bin/sh", "-c", loop])


def run_tree(cmd, cwd=REPO):
    """run_measured, with the CPU time of the whole process tree (task-clock
    of perf stat, inherited by every child) when perf stat works here.
    (cwd: where `python -m perfdata` finds its perfdata first, before
    PYTHONPATH's.)"""
    perf = shutil.which("perf")
    with tempfile.NamedTemporaryFile("r", suffix=".stat") as stat:
        wall, rss, rc, cpu = run_measured(
            [perf, "stat", "-x,", "-e", "task-clock", "-o", stat.name, "--"] + cmd
            if perf else cmd, cwd=cwd)
        for line in stat.read().splitlines():
            f = line.split(",")
            if len(f) > 2 and f[2].startswith("task-clock"):
                try:
                    cpu = float(f[0]) / 1000
                except ValueError:
                    pass
    return wall, rss, rc, cpu


def measure(cmd, repeat):
    """Medians of (wall, cpu) and the max peak RSS (KiB) over `repeat` runs."""
    runs = [_run_checked(cmd) for _ in range(repeat)]
    return (statistics.median(r[0] for r in runs), statistics.median(r[3] for r in runs),
            max(r[1] for r in runs))


def _run_checked(cmd, fresh_cache=False):
    """run_tree(cmd), with an empty $PERFDATA_CACHE_DIR if fresh_cache; a
    failed run ends the benchmark."""
    if fresh_cache:
        with tempfile.TemporaryDirectory(prefix="bench-real-cache.") as cache:
            os.environ["PERFDATA_CACHE_DIR"] = cache
            run = run_tree(cmd)
    else:
        run = run_tree(cmd)
    if run[2] != 0:
        raise SystemExit("failed (rc %d): %s" % (run[2], " ".join(cmd)))
    return run


def measure_rounds(perf_cmd, cmd, repeat, warm_cache):
    """`repeat` rounds of perf, a first run of cmd (empty cache) and a warm
    one (warm_cache, filled first): for each of the three the medians of
    wall and CPU and the max peak RSS (KiB), then the medians of each
    round's ratios to perf (first wall, first CPU, warm wall, warm CPU)."""
    os.environ["PERFDATA_CACHE_DIR"] = warm_cache
    _run_checked(cmd)                                 # fills the cache
    rounds = []
    for _ in range(repeat):
        perf_run = _run_checked(perf_cmd)
        first = _run_checked(cmd, fresh_cache=True)
        os.environ["PERFDATA_CACHE_DIR"] = warm_cache
        rounds.append((perf_run, first, _run_checked(cmd)))
    figures = [(statistics.median(r[k][0] for r in rounds),
                statistics.median(r[k][3] for r in rounds), max(r[k][1] for r in rounds))
               for k in range(3)]
    ratios = [statistics.median(r[k][i] / max(r[0][i], 1e-3) for r in rounds)
              for k in (1, 2) for i in (0, 3)]
    return figures, ratios


def ratio(ours, theirs):
    """ours / theirs as the tables print it (two figures below 0.1x: make-dwarf's
    perf takes 40 times perfdata's time)."""
    return shown_ratio(ours / max(theirs, 1e-3))


def shown_ratio(r):
    return "%.1fx" % r if r >= 0.1 else "%.3fx" % r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="directory for the recordings (reused if present)")
    ap.add_argument("--only", help="comma-separated: make,cc1plus,gcc,python,sqlite,forks,"
                    "python-big,python-runs,make-dwarf,make-dwarf-big")
    ap.add_argument("--python", help="a python with a full-DWARF libpython")
    ap.add_argument("--record-only", action="store_true")
    ap.add_argument("--jobs", type=int,
                    help="perfdata script -j N (default: perfdata's own, the machine's cores)")
    ap.add_argument("--perfparser", metavar="PATH",
                    help="also time hotspot's perfparser (a build of KDAB/perfparser) "
                    "converting each file (--input FILE --output /dev/null), in a second table")
    ap.add_argument("--installed", action="store_true",
                    help="run perfdata as the README's `pip install .` leaves it in a new venv "
                    "(DIR/venv, "
                    "this checkout installed into it at each run): its console script, "
                    "without this interpreter's site-packages hooks or an editable install's "
                    "import finder")
    args = ap.parse_args(argv)
    compile_bytecode()
    perf = shutil.which("perf")
    if perf is None:
        raise SystemExit("perf is not installed")
    d = args.keep or tempfile.mkdtemp(prefix="bench_real.")
    os.makedirs(d, exist_ok=True)
    perfdata = installed_perfdata(os.path.join(d, "venv")) if args.installed else PERFDATA
    want = args.only.split(",") if args.only else ["make", "cc1plus", "gcc", "python",
                                                   "sqlite", "forks"]
    files = []
    for name in want:
        path = os.path.join(d, name + ".data")
        if not os.path.exists(path):
            if name in ("make", "make-dwarf", "make-dwarf-big") and shutil.which("make") and \
                    shutil.which("gcc"):
                if name == "make":
                    record_make(perf, d)
                else:
                    record_make_dwarf(perf, d, 8 if name == "make-dwarf-big" else 1)
            elif name == "cc1plus" and shutil.which("g++"):
                record_cc1plus(perf, d)
            elif name == "gcc" and shutil.which("gcc"):
                record_gcc(perf, d)
            elif name in ("python", "python-big", "python-runs"):
                py = dwarf_python(args.python)
                if py is None:
                    print("%s: no CPython with a full-DWARF libpython; skipped" % name)
                    continue
                {"python": record_python, "python-big": record_python_big,
                 "python-runs": record_python_runs}[name](perf, d, py)
            elif name == "sqlite" and shutil.which("sqlite3"):
                record_sqlite(perf, d)
            elif name == "forks" and os.path.exists("/bin/sh") and os.path.exists("/bin/true"):
                record_forks(perf, d)
            else:
                print("%s: not recordable here; skipped" % name)
                continue
        files.append((name, path))
    if args.record_only:
        print(d)
        return
    keep_env = os.environ.get("PERFDATA_CACHE_DIR")
    warm_cache = tempfile.mkdtemp(prefix="bench-real-warm.")
    print("| recording | MiB | perf wall / CPU | perfdata first wall / CPU | warm wall / CPU "
          "| first/perf wall, CPU | warm/perf wall, CPU | peak RSS perf / first / warm "
          "| load average |")
    print("|---|---|---|---|---|---|---|---|---|")
    try:
        for name, path in files:
            cmd = perfdata + ["script", path] + (["-j", str(args.jobs)] if args.jobs else [])
            figures, ratios = measure_rounds([perf, "script", "-i", path], cmd, args.repeat,
                                             warm_cache)
            (pw, pc, pr), (fw, fc, fr), (ww, wc, wr) = figures
            print("| %s | %.1f | %.2f / %.2f s | %.2f / %.2f s | %.2f / %.2f s | %s, %s "
                  "| %s, %s | %d / %d / %d MiB | %.1f |" % (
                      (name, os.path.getsize(path) / 2 ** 20, pw, pc, fw, fc, ww, wc)
                      + tuple(map(shown_ratio, ratios)) + (pr // 1024, fr // 1024, wr // 1024,
                                                           os.getloadavg()[0])),
                  flush=True)
        if args.perfparser:
            # The peer that unwinds and symbolizes in C++ with elfutils
            # (hotspot's back end): no cache, so every run is a first one.
            print()
            print("| recording | perfparser wall / CPU | /perf wall, CPU | peak RSS |")
            print("|---|---|---|---|")
            for name, path in files:
                pw, pc, _ = measure([perf, "script", "-i", path], args.repeat)
                qw, qc, qr = measure([args.perfparser, "--input", path, "--output", os.devnull],
                                     args.repeat)
                print("| %s | %.2f / %.2f s | %s, %s | %d MiB |" % (
                    name, qw, qc, ratio(qw, pw), ratio(qc, pc), qr // 1024), flush=True)
    finally:
        shutil.rmtree(warm_cache, ignore_errors=True)
        if keep_env is None:
            os.environ.pop("PERFDATA_CACHE_DIR", None)
        else:
            os.environ["PERFDATA_CACHE_DIR"] = keep_env
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
