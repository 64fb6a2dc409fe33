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
import os
import shutil
import subprocess

import pytest

from conftest import PERF, requires_perf, run_cli
from script_compare import compare, parse_samples

SOURCE = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
volatile long sink;
__attribute__((noinline)) long leaf(long n) {
    long s = 0;
    for (long i = 0; i < n; i++) { s += i * i % 7; sink = s; }
    return s;
}
__attribute__((noinline)) long mid(long n) { long r = leaf(n); sink = r; return r + 1; }
static double now(void) {
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


def _can_unshare_mount():
    if shutil.which("unshare") is None:
        return False
    res = subprocess.run(["unshare", "--pid", "--mount", "--fork", "sh", "-c",
                          "mount -t tmpfs none /mnt"], capture_output=True, timeout=30)
    return res.returncode == 0


@pytest.fixture(scope="module")
def live_container(tmp_path_factory):
    """{mode: (perf.data, the binary's path inside, perf script text)},
    recorded and read by perf while the containers run; they are let go
    after the module's tests."""
    if shutil.which("gcc") is None or not _can_unshare_mount():
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
    stats = compare(ours, perf_text)
    assert stats["samples_ours"] == stats["samples_perf"] > 20
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
