"""A program in a container (its own pid and mount namespaces) whose binary
is at a path only its mount namespace has, recorded from outside it and
read while it still runs.

perf record reads a binary's build-id through the namespace of its process
at the recording's end, and perf script looks the binary up there
(/proc/PID/root) while the process lives.  perfdata looks there too, where
the path here (and --symfs, --path-map, the build-id caches) has no file,
and takes that file only with the recorded build-id.  The recordings use
--no-buildid-cache and a private HOME, so no copy of the binary is found
by build-id: the container's file is the only one.
"""
import contextlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import PERF, SPIN_LEAF_C, can_unshare_mount, requires_perf, run_cli
from script_compare import compare, loader_start_up_apart, parse_samples

SOURCE = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
""" + SPIN_LEAF_C + r"""static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
/* argv: seconds to spin, a FIFO to wait on.  Prints its pid as the
   recording sees it (/proc is the outer one's here), then lives until the
   FIFO's writer closes it. */
int main(int argc, char **argv) {
    char self[32] = {0};
    if (readlink("/proc/self", self, sizeof self - 1) < 0) return 1;
    double end = now() + atof(argv[1]);
    while (now() < end) mid(20000);
    printf("%s\n", self);
    fflush(stdout);
    int fd = open(argv[2], O_RDONLY);
    char c;
    while (fd >= 0 && read(fd, &c, 1) > 0) {}
    return 0;
}
"""
CFLAGS = ["-O2", "-g", "-fno-omit-frame-pointer", "-mno-omit-leaf-frame-pointer"]
MODES = {"fp": ["-g", "-F", "1000"], "dwarf": ["--call-graph=dwarf", "-F", "250"]}



@pytest.fixture(scope="module")
def live_container(tmp_path_factory):
    """{mode: (perf.data, the binary's path inside, perf script text)},
    recorded and read by perf while the containers run; they are let go
    after the module's tests."""
    if shutil.which("gcc") is None or not can_unshare_mount():
        pytest.skip("needs gcc, and unshare --pid --mount with a tmpfs mount (root)")
    tmp = tmp_path_factory.mktemp("container")
    src = tmp / "spin.c"
    src.write_text(SOURCE)
    exe = tmp / "spin"
    subprocess.run(["gcc"] + CFLAGS + ["-o", str(exe), str(src)], check=True,
                   capture_output=True, timeout=60)
    env = dict(os.environ, HOME=str(tmp / "home"))
    (tmp / "home").mkdir()
    procs, out, release = {}, {}, []
    try:
        for mode, opts in MODES.items():
            ct = tmp / ("ct-" + mode)      # empty here: the container mounts a tmpfs on it
            ct.mkdir()
            ready, go = tmp / ("ready-" + mode), tmp / ("go-" + mode)
            os.mkfifo(ready)
            os.mkfifo(go)
            release.append((go, tmp / ("pid-" + mode)))
            inner = "mount -t tmpfs none %s && cp %s %s/spin && exec %s/spin 0.4 %s" % (
                ct, exe, ct, ct, go)
            # The recording ends when the outer shell does, once the program
            # has spun: the program lives on, blocked on its FIFO.
            outer = "unshare --pid --mount --fork sh -c '%s' > %s & head -n 1 %s > %s" % (
                inner, ready, ready, tmp / ("pid-" + mode))
            data = tmp / ("%s.data" % mode)
            # (stderr to a file: the program, living on, holds it open)
            with open(tmp / ("record-%s.err" % mode), "wb") as err:
                procs[mode] = (data, ct, subprocess.Popen(
                    [PERF, "record", "-q", "--no-buildid-cache", "-e", "cpu-clock:u", "-o",
                     str(data)] + opts + ["--", "sh", "-c", outer], env=env,
                    stdout=subprocess.DEVNULL, stderr=err))
        for mode, (data, ct, proc) in procs.items():
            proc.wait(timeout=120)
            if proc.returncode != 0 or not data.exists():
                pytest.skip("perf could not record: %s" % (
                    tmp / ("record-%s.err" % mode)).read_text(errors="replace")[-200:])
            inside = str(ct / "spin")
            assert not os.path.exists(inside)
            # (DWARF: perf 6.1's inline lookup runs addr2line on the path
            # here, which has no file; --no-inline names the same frames)
            opts = ["--no-inline"] if mode == "dwarf" else []
            text = subprocess.run([PERF, "script", "-i", str(data)] + opts, env=env,
                                  capture_output=True, text=True, timeout=120).stdout
            out[mode] = (data, inside, text)
        yield out
    finally:
        for go, pidfile in release:
            try:
                fd = os.open(go, os.O_WRONLY | os.O_NONBLOCK)
                os.close(fd)
            except OSError:        # no reader: the program is gone (or never started)
                pass
        for _, pidfile in release:
            try:
                pid = int(pidfile.read_text().strip())
            except (OSError, ValueError):
                continue
            for _ in range(50):
                if not os.path.exists("/proc/%d" % pid):
                    break
                subprocess.run(["sleep", "0.1"])
            else:
                os.kill(pid, 9)


@requires_perf
@pytest.mark.parametrize("mode", list(MODES))
def test_frames_in_a_running_container_as_perf(live_container, mode):
    data, inside, perf_text = live_container[mode]
    args = ["script", str(data)] + (["--no-inline"] if mode == "dwarf" else [])
    rc, ours, err = run_cli(args)
    assert rc == 0, err
    if mode == "dwarf":
        ours, perf_text = _loader_start_up_apart(ours, perf_text)
    stats = compare(ours, perf_text)
    assert stats["samples_ours"] == stats["samples_perf"] > 0
    assert stats["other"] == [], stats["other"][:5]
    # the program's own frames are named, by the file in the container, and
    # its stacks are the true ones: leaf <- mid <- main (DWARF: to _start)
    stacks = [[sym.split("+")[0] for _, sym, dso in frames if dso == inside]
              for _, frames in parse_samples(ours)]
    in_leaf = [s for s in stacks if s[:1] == ["leaf"]]
    assert in_leaf
    want = ["leaf", "mid", "main", "_start"] if mode == "dwarf" else ["leaf", "main"]
    assert all(s == want for s in in_leaf), in_leaf[:3]
    rc, listing, _ = run_cli(["buildids", str(data)])
    assert "/proc/" in listing and "/root" + inside in listing


def _loader_start_up_apart(ours, perf_text):
    """Both texts without the samples taken in the dynamic loader's start-up
    (script_compare.in_loader_start_up: a `sh` the container's set-up
    starts), after checking that on each of them perf's frames are ours with
    some left out: perf 6.1 leaves out caller frames there, ours follow each
    frame's CFI (one CI run: perf `__pthread_tunables_init` <-
    `_dl_sysdep_start` <- `_start`, where the CFI, as the pure and the
    compiled unwinders read it, gives `__libc_early_init` and `dl_main`
    before `_dl_sysdep_start` and `_dl_start` after it: the loader's calls in
    that order; another, perf `intel_check_word.constprop.0` <- an
    `[unknown]` 0x1dffffffff, ours on to ld.so's `_start`)."""
    if len(parse_samples(ours)) != len(parse_samples(perf_text)):
        return ours, perf_text          # (compare() reports the counts)
    ours, perf_text, apart = loader_start_up_apart(ours, perf_text)
    for a, b in apart:
        rest = iter(a.splitlines()[2:])
        # (perf's [unknown] frames: what its libdw took past the stack's end)
        assert all(line in rest for line in b.splitlines()[2:] if "[unknown]" not in line), \
            (a, b)
    return ours, perf_text


HOLD_SOURCE = r"""
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
typedef long (*work_fn)(long);
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
/* argv: a library, its work function, seconds to run it, a FIFO to wait on */
int main(int argc, char **argv) {
    char self[32] = {0};
    if (argc < 5 || readlink("/proc/self", self, sizeof self - 1) < 0) return 1;
    void *h = dlopen(argv[1], RTLD_NOW);
    work_fn f = h ? (work_fn)dlsym(h, argv[2]) : NULL;
    if (!f) return 1;
    double end = now() + atof(argv[3]);
    while (now() < end) f(20000);
    printf("%s\n", self);
    fflush(stdout);
    int fd = open(argv[4], O_RDONLY);
    char c;
    while (fd >= 0 && read(fd, &c, 1) > 0) {}
    return 0;
}
"""
LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "progs", "lifecycle_lib.c")


@pytest.fixture(scope="module")
def one_path_two_files(tmp_path_factory):
    """A process here and one in a container, each running a library loaded
    from the same path, a different file in each (tests/progs/lifecycle_lib.c
    built as a and b), both alive when perf record ends, so that perf reads
    both build-ids.  Yields (perf.data, the buildid dir, the library's path,
    {pid: the leaf it runs}, release) where release() lets the processes
    go."""
    if shutil.which("gcc") is None or not can_unshare_mount():
        pytest.skip("needs gcc, and unshare --pid --mount with a tmpfs mount (root)")
    tmp = tmp_path_factory.mktemp("onepath")
    src = tmp / "hold.c"
    src.write_text(HOLD_SOURCE)
    exe = str(tmp / "hold")
    subprocess.run(["gcc"] + CFLAGS + ["-o", exe, str(src), "-ldl"], check=True,
                   capture_output=True, timeout=60)
    shared = tmp / "shared"
    shared.mkdir()
    for lib in ("a", "b"):
        subprocess.run(["gcc"] + CFLAGS + ["-shared", "-fPIC", "-DLIB=" + lib, "-o",
                                           str(tmp / ("lib%s.so" % lib)), LIB],
                       check=True, capture_output=True, timeout=60)
    path = str(shared / "libwork.so")
    shutil.copy(tmp / "liba.so", path)
    go, ready = tmp / "go", tmp / "ready"
    os.mkfifo(go)
    os.mkfifo(ready)
    here = "%s %s a_work 0.4 %s" % (exe, path, go)
    inside = ("mount -t tmpfs none %s && cp %s %s && exec %s %s b_work 0.4 %s"
              % (shared, tmp / "libb.so", path, exe, path, go))
    outer = ("%s > %s & unshare --pid --mount --fork sh -c '%s' > %s & "
             "head -n 2 %s > %s" % (here, ready, inside, ready, ready, tmp / "pids"))
    data = tmp / "onepath.data"
    buildid_dir = tmp / "buildid-cache"
    env = dict(os.environ, HOME=str(tmp))

    def release():
        try:
            os.close(os.open(go, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:       # no reader: the programs are gone
            pass

    try:
        with open(tmp / "record.err", "wb") as err:
            rec = subprocess.run([PERF, "--buildid-dir", str(buildid_dir), "record", "-q",
                                  "-e", "cpu-clock:u", "-F", "1000", "-g", "-o", str(data),
                                  "--", "sh", "-c", outer], env=env, stdout=subprocess.DEVNULL,
                                 stderr=err, timeout=120)
        if rec.returncode != 0 or not data.exists():
            pytest.skip("perf could not record: %s" % (tmp / "record.err").read_text()[-200:])
        pids = [int(p) for p in (tmp / "pids").read_text().split()]
        # (which line came first is not known: ask each process what it maps)
        leaves = {}
        for pid in pids:
            with open("/proc/%d/maps" % pid) as f:
                maps = f.read()
            leaves[pid] = "a_leaf" if path in maps and os.stat(
                "/proc/%d/root%s" % (pid, path)).st_ino == os.stat(path).st_ino else "b_leaf"
        assert sorted(leaves.values()) == ["a_leaf", "b_leaf"]
        yield data, buildid_dir, path, leaves, release
    finally:
        release()


def _leaves_in(text, path):
    """{pid: {the library (a or b) its samples in the library at path name:
    a_leaf, a_work or b_leaf, b_work}}"""
    out = {}
    for header, frames in parse_samples(text):
        if frames and frames[0][2] == path:
            pid = int(header.split()[1].split("/")[0])
            out.setdefault(pid, set()).add(frames[0][1].split("_")[0])
    return out


@requires_perf
def test_one_path_two_files_each_process_its_own(one_path_two_files):
    """The recording lists the path twice, with each file's build-id (perf
    record read each through its process's mount namespace): each process's
    frames are named from its own file, while the processes run and after,
    by the build-ids perf's cache keeps.  perf 6.1 names both from one."""
    data, buildid_dir, path, leaves, release = one_path_two_files
    import perfdata
    with perfdata.open(str(data)) as pf:
        assert len(pf.recorded_build_id_lists()[path]) == 2
    want = {pid: {leaf[0]} for pid, leaf in leaves.items()}
    rc, text, err = run_cli(["script", str(data), "-F", "+pid", "--buildid-dir", str(buildid_dir)])
    assert rc == 0, err
    assert _leaves_in(text, path) == want
    release()
    for pid in leaves:
        for _ in range(50):
            if not os.path.exists("/proc/%d" % pid):
                break
            subprocess.run(["sleep", "0.1"])
    rc, text, err = run_cli(["script", str(data), "-F", "+pid", "--buildid-dir", str(buildid_dir)])
    assert rc == 0, err
    assert _leaves_in(text, path) == want


def test_which_build_id_of_a_path_listed_twice(tmp_path):
    """The rule without perf: a map gets the build-id of the file with its
    device and inode; a map of another file the build-id the file here
    does not have, but only where the file here is one the recording mapped
    (its device and inode a map's of the path) and as many files were mapped
    there as build-ids listed: elsewhere the file here may be a copy of
    either, and the first listed stands."""
    from perfdata.resolve.dsos import RecordedBinaries
    from perfdata.resolve.frames import FrameResolver
    from perfdata.session.machine import Machine
    from perfdata.session.maps import Map
    from symbolize import Binary, DebugInfoLocator, Symbolizer
    path = str(tmp_path / "libwork.so")
    shutil.copy(os.path.join(os.path.dirname(LIB), "..", "..", "samples", "bin", "threads"), path)
    b = Binary(path)
    here = b.build_id
    b.close()
    other = "ab" * 20
    st = os.stat(path)
    dev = (os.major(st.st_dev), os.minor(st.st_dev))
    mine, theirs, third = dev + (st.st_ino,), dev + (st.st_ino + 1,), dev + (st.st_ino + 2,)
    for listed in ([here, other], [other, here]):
        for mapped, deduced in (({mine, theirs}, other), ({theirs, third}, listed[0]),
                                ({mine, theirs, third}, listed[0])):
            machine = Machine()
            machine.file_ids[path] = mapped
            resolver = FrameResolver(machine, Symbolizer(DebugInfoLocator()),
                                     RecordedBinaries({path: listed[0]}, {path: listed}), [])
            own = Map(0x1000, 0x1000, 0, path, maj=mine[0], min=mine[1], ino=mine[2])
            assert resolver.dso_of(own) == (path, here)
            their = Map(0x1000, 0x1000, 0, path, maj=theirs[0], min=theirs[1], ino=theirs[2])
            assert resolver.dso_of(their) == (path, deduced), (listed, mapped)


JIT = Path(__file__).resolve().parents[1] / "progs" / "jit.c"


@contextlib.contextmanager
def _recorded_in_a_container(tmp_path, setup, command, record_opts):
    """perf record of `command` run in new pid and mount namespaces, with a
    /tmp and a /mnt of its own (what it writes or runs there is nowhere
    here) and tmp_path in its reach as /mnt/keep (setup: shell commands run
    there first).  Yields the recording while the program, given
    /mnt/keep/go, waits on that FIFO; then lets it go."""
    ready, go = tmp_path / "ready", tmp_path / "go"
    os.mkfifo(ready)
    os.mkfifo(go)
    inner = ("mount -t tmpfs none /mnt && mkdir /mnt/keep && mount --bind %s /mnt/keep && "
             "%s mount -t tmpfs none /tmp && exec %s /mnt/keep/go" % (tmp_path, setup, command))
    outer = "unshare --pid --mount --fork sh -c '%s' > %s & head -n 1 %s > /dev/null" % (
        inner, ready, ready)
    data = tmp_path / "contained.data"
    with open(tmp_path / "record.err", "wb") as err:
        rec = subprocess.Popen([PERF, "record", "-q"] + record_opts + ["-o", str(data), "--",
                                "sh", "-c", outer], stdout=subprocess.DEVNULL, stderr=err,
                               env=dict(os.environ, HOME=str(tmp_path)))
    try:
        rec.wait(timeout=120)
        if rec.returncode != 0 or not data.exists():
            pytest.skip("perf could not record: %s"
                        % (tmp_path / "record.err").read_text(errors="replace")[-200:])
        yield data
    finally:
        # Let it go: a writer's non-blocking open fails (ENXIO) until the
        # program has the FIFO open to read, which a loaded machine may delay.
        for _ in range(100):
            try:
                os.close(os.open(go, os.O_WRONLY | os.O_NONBLOCK))
                break
            except OSError:
                time.sleep(0.1)


def _named_once_gone(data, marker):
    """perfdata script's text once the contained program has gone (and
    with it the files its namespace held); rc."""
    for _ in range(100):
        rc, gone, err = run_cli(["script", str(data)])
        if marker not in gone:
            break
        subprocess.run(["sleep", "0.1"])
    return rc, gone


@requires_perf
def test_perf_map_of_a_running_container(tmp_path):
    """A JIT in a container writes its perf map in the container's /tmp
    (/tmp/perf-NSPID.map, its pid in its own pid namespace); perf 6.1 reads
    it there while the process runs (through /proc/PID/root), and so does
    perfdata: every sample named as perf names it, the dso printed
    /tmp/perf-PID.map with the pid recorded.  Once the process is gone
    neither can read it ([unknown]), and perfdata reads no other process's
    map in its place."""
    if shutil.which("gcc") is None or not can_unshare_mount():
        pytest.skip("needs gcc, and unshare --pid --mount with a tmpfs mount (root)")
    exe = tmp_path / "jit"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(JIT)], check=True, capture_output=True,
                   timeout=60)
    with _recorded_in_a_container(tmp_path, "cp %s /mnt/jit &&" % exe, "/mnt/jit 0.3",
                                  ["-e", "cpu-clock:u"]) as data:
        theirs = subprocess.run([PERF, "script", "-i", str(data)], capture_output=True,
                                text=True, timeout=120).stdout
        rc, ours, err = run_cli(["script", str(data)])
        assert rc == 0, err
    jitted = [line for line in theirs.splitlines() if "jitted_hot_loop+0x" in line]
    assert len(jitted) > 20
    assert [line for line in ours.splitlines() if "jitted_hot_loop+0x" in line] == jitted
    assert all(line.endswith(".map)") and "/tmp/perf-" in line for line in jitted)
    stats = compare(ours, theirs)
    assert stats["samples_ours"] == stats["samples_perf"] and stats["other"] == []
    rc, gone = _named_once_gone(data, "jitted_hot_loop")
    assert rc == 0 and "jitted_hot_loop" not in gone


def test_perf_map_in_namespace_is_the_recorded_program():
    """The map is looked for under /proc/PID only while that pid is still
    the recorded program (a pid used again by another names nothing)."""
    from perfdata.resolve.jit_sources import perfmap_in_namespace
    with open("/proc/self/comm") as f:
        comm = f.read().strip()
    pid = os.getpid()
    place = perfmap_in_namespace(pid, comm)
    assert place is not None and place.startswith("/proc/%d/root/tmp/perf-" % pid)
    assert perfmap_in_namespace(pid, comm + "-not") is None
    assert perfmap_in_namespace(0, comm) is None


_PY_CONTAINED = """
import sys, time
# (the frames perf names from the dump are those of the imports: some more)
import asyncio, decimal, email.parser, http.client, json, logging, unittest, xml.dom.minidom
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
t0 = time.time()
while time.time() - t0 < 0.5:
    fib(14)
print("spun", flush=True)
open(sys.argv[1]).read()
"""


@requires_perf
def test_jitdump_of_a_running_container(tmp_path):
    """python3.13 -X perf_jit in a container writes its jitdump in the
    container's /tmp, named by its pid there (jit-1.dump); perf 6.1 takes
    it while the process lives (perf inject --jit reads it through the
    process's namespace), and so does perfdata, on the recording perf inject
    never saw, through /proc/PID/root: each sample's JIT frames are those
    perf script of the injected file prints (perf's stack may end earlier:
    the exec row of docs/differences.md), read from /proc/PID/root/tmp/jit-1.dump.
    Once the process is gone none is named.  (The trampolines are the
    calls into Python from C: importlib's frames, the module's; a Python
    function calling another does not leave the interpreter's loop.  Here
    both name the imports' frames only, which the program makes many of:
    with a few, ~10 samples were compared, and the count's bound failed.)"""
    from test_script_jit import PYTHON313, _samples
    if PYTHON313 is None or not can_unshare_mount():
        pytest.skip("needs python3.13, and unshare --pid --mount with a tmpfs mount (root)")
    (tmp_path / "work.py").write_text(_PY_CONTAINED)
    injected = tmp_path / "py.jit.data"
    env = dict(os.environ, HOME=str(tmp_path))
    with _recorded_in_a_container(tmp_path, "", "%s -X perf_jit /mnt/keep/work.py" % PYTHON313,
                                  ["-k", "1", "--call-graph=dwarf"]) as data:
        inj = subprocess.run([PERF, "inject", "--jit", "-i", str(data), "-o", str(injected)],
                             capture_output=True, text=True, env=env, timeout=120)
        theirs = subprocess.run([PERF, "script", "-i", str(injected)], capture_output=True,
                                text=True, env=env, timeout=120).stdout if \
            inj.returncode == 0 else ""
        rc, ours, err = run_cli(["script", str(data)])
        assert rc == 0, err
    if "jitted-" not in theirs:
        pytest.skip("perf inject --jit made no jitted .so: %s" % inj.stderr.strip()[-200:])
    dumps = {line.rsplit("(", 1)[1].rstrip(")") for line in ours.splitlines()
             if line.endswith(".dump)")}
    assert len(dumps) == 1 and re.fullmatch(r"/proc/\d+/root/tmp/jit-1\.dump",
                                            next(iter(dumps))), dumps
    compared = 0
    for n, (mine, perfs) in enumerate(zip(_samples(ours), _samples(theirs))):
        want = [line for line in perfs if line.startswith("\tJIT ")]
        if want:
            compared += 1
            got = [line for line in mine if line.startswith("\tJIT ")][:len(want)]
            assert got == want, "sample %d:\n%s\nperf:\n%s" % (n, "\n".join(mine),
                                                               "\n".join(perfs))
    assert compared > 100, (compared, len(_samples(ours)), len(_samples(theirs)))
    rc, gone = _named_once_gone(data, ".dump)")
    assert rc == 0 and ".dump)" not in gone, "the contained program has not gone: %d" % rc
