"""Address spaces that change under a recording: dlopen, dlclose and dlopen
of another library at the same address; exec of another program (the same
pid, a new comm and new maps); fork without exec, the child's maps then its
own; threads created and exiting; a pid used again by another program.

tests/progs/lifecycle.c is built, recorded (-g and --call-graph=dwarf) and
read by perf now; perfdata's frames are compared with perf's and with the
program's real stacks (which function runs in which process, when).
"""
import os
import re
import shutil
import subprocess

import pytest

from conftest import PERF, TESTS_DIR, requires_perf, run_cli
from script_compare import compare, loader_start_up_apart, parse_samples

PROG = TESTS_DIR / "progs" / "lifecycle.c"
LIB = TESTS_DIR / "progs" / "lifecycle_lib.c"
CFLAGS = ["-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"]
MODES = {"fp": ["-g", "-F", "1000"], "dwarf": ["--call-graph=dwarf", "-F", "1000"]}
FIELDS = ["-F", "+pid"]
# A pid used again: the second program gets the first one's pid
# (ns_last_pid, root only; where it is not writable the case skips).
REUSE = """{first} & p=$!; wait $p
echo $((p - 1)) > /proc/sys/kernel/ns_last_pid 2>/dev/null
{second} & q=$!; wait $q
echo $p $q > {out}
"""


def _cases(tmp):
    a, b, first, second = (str(tmp / n) for n in ("liba.so", "libb.so", "first", "second"))
    return {
        "dl": [first, "dl", a, "a_work", b, "b_work", a, "a_work"],
        # DIR/libwork.so a copy of liba.so, then a copy of libb.so renamed
        # over it (DIR: the recording's own, below)
        "replaced": [first, "dl", "DIR/libwork.so", "a_work",
                     "mv", "DIR/libwork-b.so:DIR/libwork.so", "DIR/libwork.so", "b_work"],
        "exec": [first, "exec", second],
        "fork": [first, "fork", a, b],
        "threads": [first, "threads"],
        "reuse": ["bash", "-c", REUSE.format(first=first, second=second,
                                             out=tmp / "reuse-pids")],
    }


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """{(case, mode): (perf.data, perf script text, the program's stderr)}"""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    tmp = tmp_path_factory.mktemp("lifecycles")
    builds = [(["-DPHASE=first"], PROG, "first", ["-ldl", "-pthread"]),
              (["-DPHASE=second", "-no-pie"], PROG, "second", ["-ldl", "-pthread"]),
              (["-DLIB=a", "-shared", "-fPIC"], LIB, "liba.so", []),
              (["-DLIB=b", "-shared", "-fPIC"], LIB, "libb.so", [])]
    for flags, src, out, libs in builds:
        subprocess.run(["gcc"] + CFLAGS + flags + ["-o", str(tmp / out), str(src)] + libs,
                       check=True, capture_output=True, timeout=60)
    env = dict(os.environ, HOME=str(tmp))
    copies = {}
    buildid_dir = tmp / "buildid-cache"
    procs = {}
    for case, cmd in _cases(tmp).items():
        for mode, opts in MODES.items():
            if case == "replaced":
                d = tmp / mode
                d.mkdir()
                shutil.copy(tmp / "liba.so", d / "libwork.so")
                shutil.copy(tmp / "libb.so", d / "libwork-b.so")
                copies[mode] = str(d / "libwork.so")
                cmd = [c.replace("DIR", str(d)) for c in _cases(tmp)[case]]
            data = tmp / ("%s.%s.data" % (case, mode))
            err = open(tmp / ("%s.%s.err" % (case, mode)), "w+")
            procs[(case, mode)] = (data, err, subprocess.Popen(
                [PERF, "--buildid-dir", str(buildid_dir), "record", "-q", "-e", "cpu-clock:u",
                 "-o", str(data)] + opts + ["--"] + cmd, env=env, cwd=tmp,
                stdout=subprocess.DEVNULL, stderr=err))
            if case == "reuse":
                procs[(case, mode)][2].wait(120)   # one at a time: the pid file is shared
                os.replace(tmp / "reuse-pids", tmp / ("reuse-pids.%s" % mode))
    out = {}
    for key, (data, err, proc) in procs.items():
        proc.wait(120)
        err.seek(0)
        stderr = err.read()
        err.close()
        if proc.returncode != 0 or not data.exists():
            continue
        text = subprocess.run([PERF, "--buildid-dir", str(buildid_dir), "script", "-i",
                               str(data)] + FIELDS, env=env, capture_output=True, text=True,
                              timeout=120).stdout
        out[key] = (data, text, stderr, buildid_dir, tmp)
    out["copies"] = copies
    return out


def _get(recorded, case, mode):
    if (case, mode) not in recorded:
        pytest.skip("perf could not record %s here" % case)
    return recorded[(case, mode)]


def _ours(data, buildid_dir):
    rc, text, err = run_cli(["script", str(data), "--buildid-dir", str(buildid_dir)] + FIELDS)
    assert rc == 0, err
    return text


def _bare(sym):
    return re.sub(r"\+0x[0-9a-f]+$", "", sym)


def _samples(text):
    """[(comm, pid, tid, [symbol, ...])] in time order."""
    out = []
    for header, frames in parse_samples(text):
        m = re.match(r"\s*(\S+)\s+(\d+)/(\d+)\s", header)
        out.append((m.group(1), int(m.group(2)), int(m.group(3)),
                    [_bare(sym) for _, sym, _ in frames]))
    return out


def _own(frames, names=("_leaf", "_work", "main", "_start", "thread_main")):
    """The program's (and libraries') own frames of a stack, by name."""
    return [f for f in frames if f.endswith(names[:2]) or f in names[2:]]


CASES = [(c, m) for c in ("dl", "replaced", "exec", "fork", "threads", "reuse") for m in MODES]


@requires_perf
@pytest.mark.parametrize("case,mode", CASES, ids=["%s.%s" % c for c in CASES])
def test_frames_as_perf(recorded, case, mode):
    """Every sample and header as perf's, every frame perf names as perfdata
    names it, but for the deliberate kinds (docs/differences.md)."""
    data, perf_text, _, buildid_dir, _ = _get(recorded, case, mode)
    ours = _ours(data, buildid_dir)
    stats = compare(ours, perf_text)
    assert stats["samples_ours"] == stats["samples_perf"] > 0
    assert stats["header_diff"] == 0
    if mode == "dwarf":
        # (DWARF samples in ld.so's start-up of the new image, where perf's
        # libdw leaves out frames: docs/differences.md's row of DWARF stacks
        # perf ends early or gets wrong; perfdata's are checked against the
        # truth below)
        ours, perf_text, _ = loader_start_up_apart(ours, perf_text)
        stats = compare(ours, perf_text)
    assert stats["other"] == [], stats["other"][:5]


def _true_stack(leaf, mode, thread=False):
    """The stack of a sample in PHASE_leaf (or a library's leaf), own frames
    only: -g skips the leaf's caller (the leaf keeps no frame) and ends in
    libc, built without frame pointers."""
    prefix = leaf[:-len("_leaf")]
    if mode == "fp":
        return [leaf, "thread_main"] if thread else [leaf, "main"]
    if prefix in ("a", "b"):
        return [leaf, prefix + "_work"]      # then run_lib, main, _start
    return [leaf, prefix + "_work"] + (["thread_main"] if thread else ["main", "_start"])


@requires_perf
@pytest.mark.parametrize("mode", list(MODES))
def test_second_library_at_the_first_ones_address(recorded, mode):
    data, _, stderr, buildid_dir, _ = _get(recorded, "dl", mode)
    bases = re.findall(r"base (0x[0-9a-f]+)", stderr)
    if len(bases) != 3 or len(set(bases)) != 1:
        pytest.skip("the libraries were not loaded at one address: %s" % bases)
    leaves = [f[0] for _, _, _, f in _samples(_ours(data, buildid_dir))
              if f and f[0] in ("a_leaf", "b_leaf")]
    runs = [x for i, x in enumerate(leaves) if i == 0 or leaves[i - 1] != x]
    assert runs == ["a_leaf", "b_leaf", "a_leaf"]
    for _, _, _, frames in _samples(_ours(data, buildid_dir)):
        if frames and frames[0] in ("a_leaf", "b_leaf"):
            own = _own(frames)
            assert own[:len(_true_stack(frames[0], mode))] == _true_stack(frames[0], mode)


@requires_perf
@pytest.mark.parametrize("mode", list(MODES))
def test_exec_names_each_image_by_its_own_maps(recorded, mode):
    data, _, _, buildid_dir, _ = _get(recorded, "exec", mode)
    samples = _samples(_ours(data, buildid_dir))
    by_comm = {}
    for comm, pid, _, frames in samples:
        if frames and frames[0].endswith("_leaf"):
            by_comm.setdefault(comm, set()).add(frames[0])
            assert _own(frames) == _true_stack(frames[0], mode), frames
    assert by_comm == {"first": {"first_leaf"}, "second": {"second_leaf"}}
    assert len({pid for _, pid, _, _ in samples}) == 1


@requires_perf
@pytest.mark.parametrize("mode", list(MODES))
def test_fork_child_maps_diverge(recorded, mode):
    data, _, _, buildid_dir, _ = _get(recorded, "fork", mode)
    where = {}
    for _, pid, _, frames in _samples(_ours(data, buildid_dir)):
        if frames and frames[0].endswith("_leaf"):
            where.setdefault(frames[0], set()).add(pid)
            want = _true_stack(frames[0], mode)
            assert _own(frames)[:len(want)] == want, frames
    assert set(where) == {"first_leaf", "a_leaf", "b_leaf"}
    parent = where["first_leaf"]
    assert len(parent) == 1 and where["b_leaf"] == parent
    assert len(where["a_leaf"]) == 1 and where["a_leaf"] != parent


@requires_perf
@pytest.mark.parametrize("mode", list(MODES))
def test_threads_that_come_and_go(recorded, mode):
    data, _, _, buildid_dir, _ = _get(recorded, "threads", mode)
    tids = set()
    for _, pid, tid, frames in _samples(_ours(data, buildid_dir)):
        if frames and frames[0] == "first_leaf":
            assert _own(frames) == _true_stack("first_leaf", mode, thread=tid != pid), frames
            if tid != pid:
                tids.add(tid)
    assert len(tids) >= 4       # 12 threads ran, 4 at a time


@requires_perf
@pytest.mark.parametrize("mode", list(MODES))
def test_pid_used_again_by_another_program(recorded, mode):
    data, _, _, buildid_dir, tmp = _get(recorded, "reuse", mode)
    pids = (tmp / ("reuse-pids.%s" % mode)).read_text().split()
    if pids[0] != pids[1]:
        pytest.skip("the second program did not get the first one's pid")
    pid = int(pids[0])
    leaves = {}
    for comm, p, _, frames in _samples(_ours(data, buildid_dir)):
        if p == pid and frames and frames[0].endswith("_leaf"):
            leaves.setdefault(comm, set()).add(frames[0])
            assert _own(frames) == _true_stack(frames[0], mode), frames
    assert leaves == {"first": {"first_leaf"}, "second": {"second_leaf"}}


@requires_perf
@pytest.mark.parametrize("mode", list(MODES))
def test_library_replaced_on_disk_is_said(recorded, mode):
    """libwork.so dlopened, closed, replaced on disk (another file renamed
    over it) and dlopened again: perf record lists one build-id for the
    path, the second file's, read when it ended, and perf names the first
    file's samples from the second's symbols (b_leaf where a_leaf ran).
    perfdata names them as perf does (nothing tells the first file's
    build-id) and says so, with the fix."""
    data, perf_text, _, buildid_dir, _ = _get(recorded, "replaced", mode)
    path = recorded["copies"][mode]
    rc, text, err = run_cli(["script", str(data), "--buildid-dir", str(buildid_dir)] + FIELDS)
    assert rc == 0
    leaves = [f[0] for _, _, _, f in _samples(text) if f and f[0] in ("a_leaf", "b_leaf")]
    assert leaves and set(leaves) <= {"b_leaf"}          # as perf (test_frames_as_perf)
    said = [w for w in err.splitlines() if path in w and "2 different files" in w]
    assert len(said) == 1 and "--buildid-mmap" in said[0], err
