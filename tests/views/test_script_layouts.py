"""Executable layouts: how the linker lays the program out, how it is
started, against perf 6.1 now and the program's real stack.

One small program (leaf <- mid <- main) linked as non-PIE, static,
static-pie, with 2 MiB segment alignment (with and without a separate code
segment), with its text segment at a fixed
address (non-PIE and PIE: a text mapping whose offset in the file is not its
address), and run through the dynamic loader (`ld.so ./prog`: the program
mapped by ld.so, not the kernel); a vsyscall caller (x86-64's fixed page,
emulated by the kernel).  lld's layout: tests/resolve/test_lld_layout.py.
"""
import os
import platform
import re
import shutil
import subprocess

import pytest

from conftest import PERF, SPIN_LEAF_C, requires_perf, run_cli
from script_compare import compare, loader_start_up_apart, parse_samples

SOURCE = r"""
#include <stdlib.h>
#include <sys/time.h>
""" + SPIN_LEAF_C + r"""typedef int (*gtod_fn)(struct timeval *, void *);
__attribute__((noinline)) void vsyscalls(int n) {
    struct timeval tv;
    gtod_fn f = (gtod_fn)0xffffffffff600000UL;     /* the vsyscall page's gettimeofday */
    for (int i = 0; i < n; i++) { f(&tv, NULL); sink += tv.tv_usec; }
}
int main(int argc, char **argv) {
    long t = 0;
    if (argc > 2) vsyscalls(atoi(argv[2]));
    for (int k = 0; k < 30 * atoi(argv[1]); k++) t += mid(200000);
    return t == 42;
}
"""
CFLAGS = ["-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"]
LAYOUTS = {
    "nopie": ["-no-pie"],
    "static": ["-static"],
    "static_pie": ["-static-pie"],
    "align2m": ["-Wl,-z,max-page-size=0x200000", "-Wl,-z,separate-code"],
    "align2m_nosep": ["-Wl,-z,max-page-size=0x200000", "-Wl,-z,noseparate-code"],
    "text_at": ["-no-pie", "-Wl,-Ttext-segment=0x10000000"],
    "pie_text_at": ["-Wl,-Ttext-segment=0x10000000"],
}
MODES = {"fp": ["-g", "-F", "1000"], "dwarf": ["--call-graph=dwarf", "-F", "500"]}
LOADER = "/lib64/ld-linux-x86-64.so.2"
# (layout, how it is run); "ld.so": through the dynamic loader
RUNS = [(name, "direct") for name in LAYOUTS] + [("pie", "ld.so"), ("pie", "vsyscall")]
# the comm of each run's samples (layout names fit in 15 characters: TASK_COMM_LEN)
COMM = {(name, "direct"): name for name in LAYOUTS}
COMM.update({("pie", "ld.so"): "ld-linux-x86-64", ("pie", "vsyscall"): "pie"})


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    """{(run, mode): (perf.data, perf script text, buildid dir)} and
    {layout: binary}: one recording a mode of every layout run in turn
    (perf record is mostly idle start-up), one of the vsyscall caller (with
    kernel samples)."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    tmp = tmp_path_factory.mktemp("layouts")
    src = tmp / "loop.c"
    src.write_text(SOURCE)
    builds = dict(LAYOUTS, pie=[])
    procs = {name: subprocess.Popen(["gcc"] + CFLAGS + flags + ["-o", str(tmp / name), str(src)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for name, flags in builds.items()}
    bins = {name: str(tmp / name) for name, proc in procs.items() if proc.wait(120) == 0}
    if "pie" not in bins:
        pytest.skip("gcc could not build the program")
    runs = ["%s 1" % bins[name] for name in LAYOUTS if name in bins]
    if os.path.exists(LOADER):
        runs.append("%s %s 1" % (LOADER, bins["pie"]))
    workloads = {"layouts": (["-e", "cpu-clock:u"], ["sh", "-c", "; ".join(runs)])}
    if platform.machine() == "x86_64" and _has_vsyscall():
        workloads["vsyscall"] = (["-e", "cpu-clock"], [bins["pie"], "1", "100000"])
    env = dict(os.environ, HOME=str(tmp))
    buildid_dir = str(tmp / "buildid-cache")
    recs = {}
    for what, (event, cmd) in workloads.items():
        for mode, opts in MODES.items():
            data = tmp / ("%s.%s.data" % (what, mode))
            recs[(what, mode)] = (data, subprocess.Popen(
                [PERF, "--buildid-dir", buildid_dir, "record", "-q", "-o", str(data)] + event +
                opts + ["--"] + cmd, env=env, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
    scripts = {}
    for key, (data, proc) in recs.items():
        if proc.wait(120) != 0 or not data.exists():
            continue
        scripts[key] = (data, subprocess.Popen(
            [PERF, "--buildid-dir", buildid_dir, "script", "-i", str(data)], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
    out = {}
    for key, (data, proc) in scripts.items():
        text, _ = proc.communicate(timeout=120)
        out[key] = (data, text, buildid_dir)
    return out, bins


def _has_vsyscall():
    try:
        with open("/proc/self/maps") as f:
            return "[vsyscall]" in f.read()
    except OSError:
        return False


def _of_comm(text, comm):
    """The samples of one comm, as perf-script text."""
    blocks = [b for b in text.split("\n\n") if b.strip()]
    return "\n\n".join(b for b in blocks if b.lstrip().split(" ", 1)[0] == comm) + "\n"


CASES = [(layout, run, mode) for layout, run in RUNS for mode in MODES]


@requires_perf
@pytest.mark.parametrize("layout,run,mode", CASES, ids=["%s.%s.%s" % c for c in CASES])
def test_layout_as_perf_and_true_stacks(layouts, layout, run, mode):
    recordings, bins = layouts
    what = "vsyscall" if run == "vsyscall" else "layouts"
    if (what, mode) not in recordings or layout not in bins or \
            (run == "ld.so" and not os.path.exists(LOADER)):
        pytest.skip("could not build or record %s (%s) here" % (layout, run))
    data, perf_text, buildid_dir = recordings[(what, mode)]
    binary = bins[layout]
    rc, ours, err = run_cli(["script", str(data), "--buildid-dir", buildid_dir])
    assert rc == 0, err
    comm = COMM[(layout, run)]
    ours, perf_text = _of_comm(ours, comm), _of_comm(perf_text, comm)
    stats = compare(ours, perf_text)
    assert stats["samples_ours"] == stats["samples_perf"] > 0
    assert stats["header_diff"] == 0
    if mode == "dwarf":
        # ld.so's start-up, before the program's code runs: perf's libdw
        # unwind there ends early or goes wrong (docs/differences.md), perfdata's
        # is the whole stack; those samples are left out of the comparison.
        ours_kept, perf_kept, _ = loader_start_up_apart(ours, perf_text)
        stats = compare(ours_kept, perf_kept)
    # every frame perf names is perfdata's (perf's DWARF stacks of a static
    # non-PIE executable stop at the leaf: docs/differences.md; perfdata's go on)
    assert stats["other"] == [], stats["other"][:5]
    own = [[re.sub(r"\+0x[0-9a-f]+$", "", sym) for _, sym, dso in frames if dso == binary]
           for _, frames in parse_samples(ours)]
    in_leaf = [s for s in own if s[:1] == ["leaf"]]
    assert in_leaf
    # -g: leaf keeps no frame (its caller is skipped); a static binary's own
    # libc frames are the binary's too: __libc_start_call_main, and then
    # whatever its frame pointer points to (libc is built without them)
    want = ["leaf", "main"] if mode == "fp" else ["leaf", "mid", "main"]
    assert all(s[:len(want)] == want for s in in_leaf), in_leaf[:3]
    if mode == "dwarf":
        assert all(s[-1] == "_start" for s in in_leaf), in_leaf[:3]
    if run == "vsyscall":
        # samples in the kernel's emulation of the call, the page's address
        # on their stacks (named as perf names it: compared above)
        assert any(addr == 0xffffffffff600000 for _, frames in parse_samples(ours)
                   for addr, _, _ in frames)


@requires_perf
def test_symfs_without_the_binary_takes_it_from_the_buildid_cache(layouts, tmp_path):
    """--symfs ROOT where ROOT lacks the binaries: perf 6.1 looks there only,
    and names none of their frames, though its build-id cache holds them;
    perfdata takes them from the cache, by the recorded build-id: the frames
    perf names without --symfs."""
    recordings, bins = layouts
    if ("layouts", "fp") not in recordings:
        pytest.skip("could not record here")
    data, perf_text, buildid_dir = recordings[("layouts", "fp")]
    empty = tmp_path / "root"
    empty.mkdir()
    env = dict(os.environ, HOME=str(tmp_path))
    theirs = subprocess.run([PERF, "--buildid-dir", buildid_dir, "script", "-i", str(data),
                             "--symfs", str(empty)], env=env, capture_output=True, text=True,
                            timeout=120).stdout
    binary = bins["nopie"]
    in_binary = [f for _, frames in parse_samples(_of_comm(theirs, "nopie"))
                 for f in frames if f[2] == binary]
    assert in_binary and all(sym == "[unknown]" for _, sym, _ in in_binary)
    rc, ours, err = run_cli(["script", str(data), "--symfs", str(empty),
                             "--buildid-dir", buildid_dir])
    assert rc == 0, err
    want = [f for _, frames in parse_samples(_of_comm(perf_text, "nopie"))
            for f in frames if f[2] == binary]
    got = [f for _, frames in parse_samples(_of_comm(ours, "nopie"))
           for f in frames if f[2] == binary]
    assert got == want and any(sym.startswith("leaf+") for _, sym, _ in got)
