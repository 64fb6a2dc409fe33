"""`perfdata report` against `perf report --stdio -g none` (perf 6.1) on the
bundled recordings: the same rows, percentages within 0.1 points, sorted the
same way; default sort, `--children`, `--sort pid,sym`, `--sort dso,comm`.

perf runs as samples/README.md describes for the goldens (HOME an empty
directory, `--buildid-dir samples/buildids`).  Deliberate differences
(docs/differences.md) are normalised: our PLT entries (`strlen@plt`) are perf's
`_init`; coroutine and snapshot-cut stacks are compared without
--children (their callers differ on purpose).
"""
import argparse
import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import perfdata
from conftest import SAMPLE_SYMBOL_ARGS, run_cli, sample_vdso
from perfdata.resolve import build_sample_symbolizer
from perfdata.views.options import add_symbolize_options, resolve_options
from perfdata.views.report.histogram import Report
from perfdata.views.report.sort_keys import parse_sort

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
PERF = shutil.which("perf")
needs_perf = pytest.mark.skipif(PERF is None, reason="perf is not installed (the oracle)")

RECORDINGS = ["plt_loop.fp", "plt_loop_ibt.fp", "vdso_clock.fp", "exit_atexit.fp",
              "coroutine.fp", "cpp_inline.fp", "threads.fp", "stripped.fp",
              "deep_recursion.fp", "plt_loop.dwarf", "plt_loop_ibt.dwarf",
              "vdso_clock.dwarf", "exit_atexit.dwarf", "cpp_inline.dwarf", "threads.dwarf",
              "coroutine.dwarf", "stripped.dwarf", "deep_recursion.dwarf", "zstd",
              "zstd_dwarf", "two_events", "buildid_mmap", "threads_dir"]
# Callers differ on purpose (coroutine bottoms, DWARF snapshot-cut marker).
NO_CHILDREN_CHECK = {"coroutine.fp", "coroutine.dwarf", "deep_recursion.dwarf"}
VARIANTS = [("comm,dso,sym", False), ("comm,dso,sym", True), ("pid,sym", False),
            ("dso,comm", False), ("comm", False), ("sym,comm", False)]
# perf's "_init" is narrower than our "strlen@plt": column widths differ there.
PLT_WIDTH = {"plt_loop.fp", "plt_loop_ibt.fp", "plt_loop_ibt.dwarf", "two_events"}
_PLT = re.compile(r"\[\.\] \S+@plt\b")


def perf_plt_name(line):
    """perf 6.1 names a .plt stub `_init` (a size-0 symbol stretched over
    .plt); the deliberate difference, undone."""
    return _PLT.sub("[.] _init", line)
_ROW = re.compile(r"^\s+\d+\.\d\d%")


def _data(name):
    path = SAMPLES / (name + ".data")
    return path


@functools.lru_cache(maxsize=None)
def perf_report(name, sort, children, tmpdir):
    argv = [PERF, "--buildid-dir", str(SAMPLES / "buildids"), "report", "--stdio",
            "-g", "none", "--children" if children else "--no-children",
            "--sort", sort, "-i", str(_data(name))]
    env = dict(os.environ, HOME=tmpdir)
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=SAMPLES,
                         timeout=60)
    return out.stdout


@functools.lru_cache(maxsize=None)
def our_reports(name):
    """All variants from one symbolization pass."""
    p = argparse.ArgumentParser()
    add_symbolize_options(p)
    argv = ["--debug-dir", str(SAMPLES / "buildids")]
    if sample_vdso(_data(name)) is not None:
        # No build-id for its vdso: perf takes this machine's own vdso for
        # it, whatever kernel recorded the file; perfdata is given the same.
        from symbolize.debuginfo.vdso import running_vdso
        own = running_vdso()
        if own is not None:
            argv += ["--vdso", own[0]]
    args = p.parse_args(argv)
    with perfdata.open(str(_data(name))) as pf:
        sampler = build_sample_symbolizer(pf, resolve_options(args))
        samples = list(sampler)
        texts = {}
        for sort, children in VARIANTS:
            report = Report(parse_sort(sort), children, sampler=sampler)
            for s in samples:
                report.add(s)
            texts[(sort, children)] = report.describe(pf.attrs, sampler.lost_samples)
    return texts


def rows(text):
    """Sections of rows: [[(pcts..., cells...)], ...], one list per event."""
    sections = []
    for line in text.splitlines():
        if line.startswith("# Samples:"):
            sections.append([])
        elif _ROW.match(line) and sections:
            line = perf_plt_name(line)
            sections[-1].append(tuple(re.split(r"\s{2,}", line.strip())))
    return sections


def _pct(cell):
    return float(cell.rstrip("%"))


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return str(tmp_path_factory.mktemp("home"))


MAX_DEVIATION = []


@needs_perf
@pytest.mark.parametrize("name", RECORDINGS)
def test_rows_as_perf_report(name, home):
    ours = our_reports(name)
    for sort, children in VARIANTS:
        if children and name in NO_CHILDREN_CHECK:
            continue
        theirs = rows(perf_report(name, sort, children, home))
        mine = rows(ours[(sort, children)])
        assert theirs, "perf printed no rows for %s" % name
        assert len(mine) == len(theirs), (sort, children)
        npct = 2 if children else 1
        for a, b in zip(mine, theirs):
            # The same entries, with the same percentages within 0.1 points.
            da = {r[npct:]: r[:npct] for r in a}
            db = {r[npct:]: r[:npct] for r in b}
            assert set(da) == set(db), (sort, children, set(da) ^ set(db))
            for key in da:
                for x, y in zip(da[key], db[key]):
                    dev = abs(_pct(x) - _pct(y))
                    MAX_DEVIATION.append(dev)
                    assert dev <= 0.1, (key, x, y)
            # Sorted the same way: the same order of percentages, and of
            # entries wherever the percentages differ.
            assert [r[:npct] for r in a] == [r[:npct] for r in b]
            if not children:
                assert a == b, (sort, children)
        if not children:
            # Column widths and padding as perf's, line for line.
            norm = [ln for ln in perf_report(name, sort, children, home).splitlines()
                    if "Tip:" not in ln]
            mine_lines = [perf_plt_name(ln) for ln in ours[(sort, children)].splitlines()]
            if name not in PLT_WIDTH:
                assert mine_lines == norm, (sort, children)


@needs_perf
def test_header_lines_as_perf(home):
    theirs = perf_report("two_events", "comm,dso,sym", False, home).splitlines()
    mine = our_reports("two_events")[("comm,dso,sym", False)].splitlines()
    keep = [ln for ln in theirs if "Tip:" not in ln]
    # Every line but the rows exactly; the rows (a PLT stub's wider name
    # pads the column: see PLT_WIDTH) cell by cell.
    assert [ln for ln in mine if not _ROW.match(ln)] == [ln for ln in keep if not _ROW.match(ln)]
    assert rows("\n".join(mine)) == rows("\n".join(keep))


def test_cli_report_and_sort_error(tmp_path):
    rc, out, err = run_cli(["report", str(_data("threads.fp")), "--debug-dir",
                            str(SAMPLES / "buildids")])
    assert rc == 0, err
    assert "# Overhead  Command  Shared Object  Symbol" in out
    # threads.fp: hot_alpha and hot_beta only (samples/README.md), ~half each.
    pcts = {ln.split()[-1]: float(ln.split()[0].rstrip("%")) for ln in out.splitlines()
            if _ROW.match(ln)}
    assert set(pcts) == {"hot_alpha", "hot_beta"}
    assert abs(sum(pcts.values()) - 100.0) < 0.02
    rc, out, err = run_cli(["report", str(_data("threads.fp")), "--sort", "bogus"])
    assert rc == 2 and err.startswith("perfdata: error:")


# Files from other machines (the shared corpus): kernel-module entries are
# `[name]` with module-relative addresses, as perf prints them.
from conftest import corpus_dir, requires_corpus  # noqa: E402


@needs_perf
@requires_corpus
@pytest.mark.parametrize("name", ["quipper__perf.data.callgraph-3.8", "quipper__perf.data.raw-3.4"])
def test_corpus_kernel_modules_as_perf(name, home):
    path = corpus_dir() / "perfdata" / name
    if not path.exists():
        pytest.skip("%s not in the corpus" % name)
    argv = [PERF, "report", "--stdio", "-g", "none", "--no-children", "--no-branch-stack",
            "-i", str(path)]
    theirs = subprocess.run(argv, capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, HOME=home)).stdout
    rc, mine, err = run_cli(["report", str(path)])
    assert rc == 0, err
    assert "[k] 0x" in mine and re.search(r"\[\w+\]\s+\[k\] 0x0000000000", mine)
    assert [ln for ln in theirs.splitlines() if "Tip:" not in ln] == mine.splitlines()


@needs_perf
@pytest.mark.parametrize("name", ["quipper__perf.data.lost_samples-4.4",
                                  "quipper__perf.data.piped.lost_samples-4.4"])
def test_total_lost_samples_as_perf(name, home):
    """perf's "Total Lost Samples", counted from the LOST_SAMPLES records as
    the samples stream by (one pass, pipe mode included)."""
    from conftest import corpus_dir
    path = corpus_dir() / "perfdata" / name
    if not path.is_file():
        pytest.skip("corpus file %s absent" % path)
    out = subprocess.run([PERF, "report", "--stdio", "-i", str(path)], capture_output=True,
                         text=True, env=dict(os.environ, HOME=home), timeout=60).stdout
    theirs = re.findall(r"^# Total Lost Samples: (\d+)$", out, re.M)
    rc, ours, err = run_cli(["report", str(path)])
    assert rc == 0, err
    assert theirs and re.findall(r"^# Total Lost Samples: (\d+)$", ours, re.M) == theirs
    if "piped" not in name:
        return
    # a pipe-mode file through standard input, where a second pass is impossible
    with open(path, "rb") as f:
        res = subprocess.run([sys.executable, "-m", "perfdata", "report", "-"], stdin=f, capture_output=True, text=True,
                             cwd=REPO, timeout=60)
    assert re.findall(r"^# Total Lost Samples: (\d+)$", res.stdout, re.M) == theirs, res.stderr


SHOWN_CASES = [
    ("threads.fp", ["-n"]),
    ("threads.fp", ["-q"]),
    ("threads.fp", ["-n", "-q", "--sort", "dso,sym"]),
    ("threads.fp", ["--percent-limit", "5"]),
    ("two_events", ["--percent-limit", "0.2", "-n", "--sort", "dso", "--kallsyms", "/dev/null"]),
    ("threads.fp", ["--percent-limit", "0.5abc"]),     # perf's strtof: 0.5
    ("threads.fp", ["--children", "--no-children", "-n"]),
    ("threads.dwarf", ["-n", "--percent-limit", "2", "--sort", "sym"]),
    # perf's cpu key: the sample's cpu, "%*.*d" at the column's width
    ("threads.fp", ["--sort", "cpu"]),
    ("threads.fp", ["--force", "-n"]),           # perf's -f/--force: accepted
    # perf's filters by thread, comm, dso and symbol keep the samples they
    # leave out in the totals (the percentages are of all of them); a list
    # of one name is said in the header and its column left out
    ("threads.fp", ["--comm", "threads"]),
    ("threads.fp", ["--comm", "nosuch"]),
    ("threads.fp", ["--dsos", "threads"]),
    ("threads.fp", ["--symbols", "hot_alpha", "-n"]),
    ("threads.fp", ["--comm", "threads,x", "--dsos", "threads", "--symbols",
                    "hot_alpha,hot_beta"]),
    ("threads.fp", ["--comm", "threads", "--sort", "comm"]),
    ("threads.fp", ["--comm", "threads", "--dsos", "threads", "--symbols", "hot_alpha"]),
    ("threads.dwarf", ["--comm", "threads", "--sort", "dso,sym", "-n"]),
    ("threads.fp", ["--sort", "cpu,comm,sym"]),
    ("threads.dwarf", ["--sort", "sym,cpu", "-n"]),
    ("two_events", ["--sort", "dso,cpu", "--kallsyms", "/dev/null"]),
    # --group on a file without groups: every event in one table under the
    # first (a forced leader: no "anon group { }"); --no-group: a table per
    # event, the first one's header "of events" (perf's group_set forces
    # the leader all the same)
    ("two_events", ["--group", "--sort", "dso", "-n", "--kallsyms", "/dev/null"]),
    ("two_events", ["--no-group", "--sort", "dso", "--kallsyms", "/dev/null"]),
]


@needs_perf
@pytest.mark.parametrize("name,args", SHOWN_CASES,
                         ids=["%s %s" % (n, " ".join(a)) for n, a in SHOWN_CASES])
def test_shown_as_perf_report(name, args, home):
    """-n (the Samples column), -q (no comment lines), --percent-limit (the
    rows below it left out, the columns still sized by every entry) and
    --children/--no-children given both (the last wins): line for line as
    perf report --stdio -g none prints them."""
    argv = [PERF, "--buildid-dir", str(SAMPLES / "buildids"), "report", "--stdio", "-g", "none",
            "--no-children", "-i", str(_data(name))] + args
    env = dict(os.environ, HOME=home)
    theirs = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=SAMPLES,
                            timeout=60).stdout
    ours_args = ["report", str(_data(name)), "--stdio", "--no-children", "-j", "1",
                 "--debug-dir", str(SAMPLES / "buildids")] + args
    rc, mine, err = run_cli(ours_args)
    assert rc == 0, err
    keep = [ln for ln in theirs.splitlines() if "Tip:" not in ln]
    assert len([ln for ln in keep if _ROW.match(ln)]) >= (0 if "nosuch" in args else 1)
    assert mine.splitlines() == keep


from conftest import requires_perf, requires_perf_tool  # noqa: E402


@requires_perf
def test_children_rows_of_addresses_in_no_map_as_perf(tmp_path):
    """--children rows of callchain addresses in no map (a frame-pointer walk
    through code built without frame pointers reads garbage): perf keys them
    by address alone, whatever the level, shows the level of the first
    sample that made the row, and leaves each such entry the level of the
    entry before it in the caller-first walk (from the sample's own: "[k]
    0000000000000000" under a system call)."""
    dd = shutil.which("dd")
    if dd is None:
        pytest.skip("no dd")
    data = tmp_path / "dd.data"
    rec = subprocess.run([PERF, "record", "-q", "-g", "-o", str(data), dd, "if=/dev/zero",
                          "of=/dev/null", "bs=16", "count=4000000"], capture_output=True,
                         text=True, timeout=120)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record: %s" % rec.stderr.strip()[-200:])
    env = dict(os.environ, HOME=str(tmp_path))
    theirs = subprocess.run([PERF, "report", "-i", str(data), "--stdio", "--children", "-g",
                             "none"], capture_output=True, text=True, env=env, timeout=120).stdout
    rc, mine, err = run_cli(["report", "--children", str(data)])
    assert rc == 0, err
    unknown = re.compile(r"^\s+[0-9.]+%\s+[0-9.]+%\s+\S+\s+\[unknown\]\s")
    want = [line.rstrip() for line in theirs.splitlines() if unknown.match(line)]
    got = [line.rstrip() for line in mine.splitlines() if unknown.match(line)]
    # a user address in no map shown [k]: the rule this test is for
    if not any(re.search(r"\[k\] 0(000|x0000)[0-7]", line) for line in want):
        pytest.skip("no user address in no map under a kernel sample in this recording")
    assert got == want


def _children_rows(samples):
    from types import SimpleNamespace as NS

    from perfdata.views.report.histogram import Report
    ev = NS(index=0, name="cpu-clock", attr={"type": 1, "config": 0}, sample_type=0)
    thread = NS(comm="dd", tid=7, pid=7)
    report = Report(["comm", "dso", "sym"], children=True)
    for cpumode, frames in samples:
        report.add(NS(event=ev, period=100, cpumode=cpumode, frames=frames, thread=thread,
                      tid=7, pid=7, comm="dd", cpu=0, ip=frames[0].address, time=1))
    return [line.split()[:2] + line.split()[-2:] for line in report.describe([ev]).splitlines()
            if line.strip() and not line.startswith("#")]


def test_children_address_in_no_map_keyed_by_address_with_the_first_level():
    from perfdata.resolve.frames import StackFrame
    kernel = StackFrame(0xffffffff81000130, 0xffffffff81000130, "entry_SYSCALL_64", 0,
                        "[kernel.kallsyms]", kernel=True)
    user = StackFrame(0x1234, 0x1234, "write", 0, "libc.so.6")
    garbage = StackFrame(0x7f0000001000, 0x7f0000001000, None, None, "[unknown]",
                         note="no-map")
    in_kernel, in_user = (1, [kernel, user, garbage]), (2, [user, garbage])
    # a kernel sample first: its user stack's bottom entry inherits [k] (caller
    # first, from the sample's level), and the user sample's same address
    # joins that row
    assert ["100.00%", "0.00%", "[k]", "0x00007f0000001000"] in \
        _children_rows([in_kernel, in_user])
    # the user sample first: the row is [.]
    assert ["100.00%", "0.00%", "[.]", "0x00007f0000001000"] in \
        _children_rows([in_user, in_kernel])


@pytest.fixture(scope="module")
def per_thread_data(tmp_path_factory):
    """A `perf record --per-thread` file: its samples have no PERF_SAMPLE_CPU
    (as `-p PID` / `-t TID` attached to a running process) and no callchain."""
    dd = shutil.which("dd")
    if dd is None:
        pytest.skip("no dd")
    data = tmp_path_factory.mktemp("per-thread") / "pt.data"
    rec = subprocess.run([PERF, "record", "-q", "--per-thread", "-o", str(data), dd,
                          "if=/dev/zero", "of=/dev/null", "bs=16", "count=200000"],
                         capture_output=True, text=True, timeout=120)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record: %s" % rec.stderr.strip()[-200:])
    return data


@requires_perf
@pytest.mark.parametrize("args", [["--sort", "cpu"], ["--sort", "cpu,comm", "-n"],
                                  ["--children"], ["--children", "--sort", "dso"]])
def test_per_thread_file_as_perf_report(per_thread_data, args, home):
    """perf keeps the cpu column at its header's width whatever it holds
    (HISTC_CPU is 3; a sample without a cpu prints "-001"), and drops
    --children silently when no event has callchains."""
    env = dict(os.environ, HOME=home)
    theirs = subprocess.run([PERF, "report", "--stdio", "-g", "none", "--no-children", "-i",
                             str(per_thread_data)] + args, capture_output=True, text=True,
                            env=env, timeout=60).stdout
    rc, mine, err = run_cli(["report", str(per_thread_data), "-j", "1"] + args)
    assert rc == 0, err
    keep = [ln for ln in theirs.splitlines() if "Tip:" not in ln]
    assert any(_ROW.match(ln) for ln in keep)
    assert mine.splitlines() == keep


@requires_perf_tool
@pytest.mark.parametrize("args", [["--sort", "sym"], ["--children"], ["-n", "--sort", "dso,sym"]])
def test_addresses_in_no_map_sorted_as_perf(tmp_path, args, home):
    """Rows of addresses in no map with equal periods: perf's
    _sort__addr_cmp() orders them by (int64_t)(right_ip - left_ip), so words
    with bit 63 set (garbage a frame-pointer walk read) come first.  (Where
    two words differ by 2**63 or more perf's comparison is no order at all,
    and its rows follow its tree's shape: no such pair here.)"""
    from perfdata.format.constants import CallchainContext, RecordType as RT, SampleType as ST
    from synth import Attr, Builder, attr_value
    st = ST.IP | ST.TID | ST.TIME | ST.CALLCHAIN | ST.PERIOD | ST.CPU
    attr = Attr(attr_value(128, type=1, config=0, sample_type=st, sample_period=1000,
                           flags={"sample_id_all": 1, "comm": 1, "task": 1}))
    b = Builder()
    recs = [b.kernel_record(RT.COMM, {"pid": 5, "tid": 5, "comm": "garbage\0"}, attr,
                            pid=5, tid=5, time=1, cpu=0)]
    words = [0x8948555374400000, 0x7FFF00000000, 0xC77C, 0x7FFAFFB5A280,
             0xFFFF8000DEAD0000, 0x8B48533374400000, 0x1000]
    for i, ip in enumerate(words):
        caller = words[(i + 3) % len(words)]
        recs.append(b.sample(attr, {"ip": ip, "pid": 5, "tid": 5, "time": 10 + i,
                                    "cpu": 0, "cpu_res": 0, "period": 1000,
                                    "callchain": {"nr": 3, "ips": [CallchainContext.USER,
                                                                    ip, caller]}},
                             misc=2))     # PERF_RECORD_MISC_USER
    path = tmp_path / "nomap.data"
    path.write_bytes(b.file([attr], recs))
    env = dict(os.environ, HOME=home)
    theirs = subprocess.run([PERF, "report", "--stdio", "-g", "none", "--no-children", "-i",
                             str(path)] + args, capture_output=True, text=True, env=env,
                            timeout=60)
    keep = [ln for ln in theirs.stdout.splitlines() if "Tip:" not in ln]
    assert sum(1 for ln in keep if _ROW.match(ln)) >= len(words), theirs.stderr
    rc, mine, err = run_cli(["report", str(path), "-j", "1"] + args)
    assert rc == 0, err
    assert mine.splitlines() == keep


_INLINED_TWICE_C = r"""
static inline __attribute__((always_inline)) unsigned long mix(unsigned long v, unsigned long i)
{
    for (int k = 0; k < 64; k++)
        v = (v ^ i) * 0x9E3779B97F4A7C15UL + k;
    return v;
}
__attribute__((noinline)) unsigned long alpha(unsigned long n)
{
    unsigned long v = 1;
    for (unsigned long i = 0; i < n; i++) v = mix(v, i);
    return v;
}
__attribute__((noinline)) unsigned long beta(unsigned long n)
{
    unsigned long v = 2;
    for (unsigned long i = 0; i < 2 * n; i++) v = mix(v, i) + 1;
    return v;
}
volatile unsigned long sink;
int main(void) { sink = alpha(1500000) + beta(1500000); return 0; }
"""


@requires_perf
def test_function_inlined_in_two_functions_is_two_children_rows(tmp_path, home):
    """--children on a DWARF recording: perf's entry for an inlined function
    is its name and the range of the function holding it (new_inline_sym()),
    so `mix (inlined)` in alpha and in beta are two rows, as perf prints them."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc")
    src, prog, data = tmp_path / "twice.c", tmp_path / "twice", tmp_path / "twice.data"
    src.write_text(_INLINED_TWICE_C)
    subprocess.run([gcc, "-O2", "-g", "-o", str(prog), str(src)], check=True, timeout=60)
    rec = subprocess.run([PERF, "record", "-q", "--call-graph=dwarf", "-F", "2000", "-o",
                          str(data), str(prog)], capture_output=True, text=True, timeout=120)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record: %s" % rec.stderr.strip()[-200:])
    env = dict(os.environ, HOME=home)
    theirs = subprocess.run([PERF, "report", "--stdio", "-g", "none", "--children", "--sort",
                             "sym", "-i", str(data)], capture_output=True, text=True, env=env,
                            timeout=120).stdout
    rc, mine, err = run_cli(["report", str(data), "-j", "1", "--children", "--sort", "sym"])
    assert rc == 0, err

    def program_rows(text):
        # (the program's own functions: the rest, ld.so's start-up and the
        # kernel, may differ on purpose; docs/differences.md)
        return [ln.split() for ln in text.splitlines() if _ROW.match(ln)
                and re.search(r"\] (alpha|beta|mix \(inlined\))$", ln)]
    want = program_rows(theirs)
    if sum(1 for cells in want if cells[-2:] == ["mix", "(inlined)"]) < 2:
        pytest.skip("perf names no `mix (inlined)` in both functions here")
    names = [cells[-1] for cells in want if cells[-1] != "(inlined)"]
    if len(names) != len(set(names)):
        # perf's comparator of inlined entries is no order: a row split in two
        # (docs/differences.md)
        pytest.skip("perf split a function's row: %s" % names)
    assert program_rows(mine) == want


_GROUP_LOAD = "x = [bytearray(4096) for i in range(20000)]; sum(range(2000000))"


@pytest.fixture(scope="module")
def group_data(tmp_path_factory):
    """`perf record -g -e '{task-clock,page-faults}'`: a group of two
    software events (GROUP_DESC), each sampling on its own."""
    data = tmp_path_factory.mktemp("group") / "group.data"
    rec = subprocess.run([PERF, "record", "-q", "-g", "-e", "{task-clock,page-faults}", "-o",
                          str(data), sys.executable, "-c", _GROUP_LOAD],
                         capture_output=True, text=True, timeout=120)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record: %s" % rec.stderr.strip()[-200:])
    return data


@requires_perf
@pytest.mark.parametrize("args", [
    ["--sort", "comm,dso"], ["--sort", "dso", "-n"], ["--sort", "pid"],
    ["--sort", "dso", "--percent-limit", "1"], ["--sort", "dso", "-q"],
    ["--children", "--sort", "comm"], ["--children", "--sort", "comm", "-n"],
    ["--sort", "dso", "--no-group"], ["--sort", "dso", "--group", "-n"]])
def test_event_group_as_perf_report(group_data, args, home):
    """perf's --group view (its default for a file with groups): one table
    per group, "of events 'anon group { a, b }'", the samples and periods of
    all its events added in the header, a percent (and Samples) column per
    event, the rows of every event's entries sorted by the leader's period,
    then the members'."""
    env = dict(os.environ, HOME=home)
    theirs = subprocess.run([PERF, "report", "--stdio", "-g", "none", "--no-children", "-i",
                             str(group_data)] + args, capture_output=True, text=True,
                            env=env, timeout=60).stdout
    if "anon group { task-clock, page-faults }" not in theirs and \
            not {"-q", "--no-group"} & set(args):
        pytest.skip("perf shows no group view here")
    rc, mine, err = run_cli(["report", str(group_data), "-j", "1"] + args)
    assert rc == 0, err
    keep = [ln for ln in theirs.splitlines() if "Tip:" not in ln]
    assert any(_ROW.match(ln) for ln in keep)
    assert mine.splitlines() == keep


# ------------------------------------------------ -T: counts per thread
_STAT_SAMPLE = SAMPLES / "threads_stat.data"
_STAT_GOLDEN = SAMPLES / "expected" / "threads_stat.report-T.txt"


def _without_tip(text):
    """perf report's closing '# (Tip: ...)' line is drawn at random: left out."""
    return "".join(l for l in text.splitlines(True) if not l.startswith("# (Tip:"))


def test_threads_values_as_perf(tmp_path):
    """samples/threads_stat.data (perf record -s, two events, two worker
    threads): -T prints perf's PID/TID table of the READ records after the
    tables, as samples/expected/threads_stat.report-T.txt (perf 6.1's
    output, its tip line left out) says; with perf here, perf says so too."""
    rc, out, err = run_cli(["report", str(_STAT_SAMPLE), "-T"] + SAMPLE_SYMBOL_ARGS)
    assert rc == 0, err
    golden = _STAT_GOLDEN.read_text()
    assert out == golden
    assert golden.endswith("#   PID    TID  cpu-clock:u  task-clock:u\n"
                           "  23111  23113    103255044     231067740\n"
                           "  23111  23114     78297811     259092069\n")
    if PERF is None:
        return
    res = subprocess.run([PERF, "--buildid-dir", str(SAMPLES / "buildids"), "report", "-i",
                          _STAT_SAMPLE.name, "--stdio", "-T"], cwd=SAMPLES, capture_output=True,
                         text=True, env=dict(os.environ, HOME=str(tmp_path)))
    assert _without_tip(res.stdout) == golden


def test_threads_values_without_read_records():
    """A file with no READ records: perf's table of no counter, the header
    alone (3 wide PID and TID), also with -q."""
    rc, out, err = run_cli(["report", str(SAMPLES / "threads.fp.data"), "-T", "-q"])
    assert rc == 0, err
    assert out.endswith("\n\n# PID  TID\n")
