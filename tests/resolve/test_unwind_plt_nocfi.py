"""DWARF stacks from a leaf in a PLT stub that has no CFI (x86_64).

ld.bfd describes `.plt` in `.eh_frame`; lld does not, for `.plt` nor for
the `.iplt` of a static(-pie) executable (an ifunc's stub: strlen).  Found on
a Rust `+crt-static` release build, a sample in `.iplt` called from libgcc's
uw_frame_state_for during a panic's unwind: perf 6.1 (libdw) printed the
whole stack, perfdata took a frame-pointer step, read the frame of an outer
function and printed `[stack]` and `[heap]` garbage after the leaf.  A stub
pushes nothing until its `push $n`: the return address is at sp (ld's CFI
for `.plt`: CFA sp+8, sp+16 after the push; PLT0 sp+16, then sp+24).

Oracle: perf script of the same recording, and the program's own chain
(stub <- caller <- main).  Before the fix: every stub sample of the dynamic
build (14 of 1,121 samples) and of the static-pie one (47 of 1,148) lost
its callers.
"""
import glob
import os
import shutil
import subprocess

import pytest

from conftest import PERF, requires_perf, run_cli
from script_compare import parse_samples

SOURCE = r"""
#include <stdlib.h>
#include <string.h>
volatile long sink;
__attribute__((noinline)) long caller(long i) {
    return labs(i - 5) + (long)strlen((const char *)&sink);
}
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    for (long i = 0; i < n; i++) sink += caller(i);
    return 0;
}
"""


def _lld_dir():
    """A directory holding ld.lld for gcc's -B (PATH, or rustup's gcc-ld)."""
    found = shutil.which("ld.lld")
    if found:
        return os.path.dirname(found)
    roots = glob.glob(os.path.expanduser("~/.rustup/toolchains/*"))
    for root in roots:
        for path in glob.glob(os.path.join(root, "lib", "rustlib", "*", "bin", "gcc-ld", "ld.lld")):
            if os.access(path, os.X_OK):
                return os.path.dirname(path)
    return None


def _plt_range(exe, name):
    out = subprocess.run(["readelf", "-SW", exe], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 5 and parts[1] == name:
            # perf prints a binary's addresses relative to its map: the file offset
            return int(parts[4], 16), int(parts[4], 16) + int(parts[5], 16)
    return None


@pytest.fixture(scope="module", params=["dynamic", "static-pie"])
def plt_recording(request, tmp_path_factory):
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("the PLT layout reasoned about is x86_64's")
    gcc, lld = shutil.which("gcc"), _lld_dir()
    if gcc is None or lld is None or shutil.which("readelf") is None:
        pytest.skip("no gcc, readelf, or ld.lld (PATH or rustup's gcc-ld) to link with")
    tmp = tmp_path_factory.mktemp("plt_nocfi")
    (tmp / "plt.c").write_text(SOURCE)
    exe = str(tmp / "plt")
    extra = ["-static-pie"] if request.param == "static-pie" else []
    built = subprocess.run([gcc, "-O2", "-g", "-fno-builtin", *extra, "-B" + lld, "-fuse-ld=lld",
                            str(tmp / "plt.c"), "-o", exe], capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip("gcc -fuse-ld=lld failed: %s" % built.stderr.strip()[-200:])
    section = ".iplt" if request.param == "static-pie" else ".plt"
    where = _plt_range(exe, section)
    if where is None:
        pytest.skip("lld made no %s section" % section)
    data = tmp / "plt.data"
    rec = subprocess.run([PERF, "record", "-q", "--call-graph=dwarf", "-e", "cpu-clock:u",
                          "-F", "4000", "-o", str(data), exe, "30000000"],
                         capture_output=True, text=True, cwd=tmp, timeout=120)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record: %s" % rec.stderr.strip()[-200:])
    return data, exe, where


@requires_perf
def test_stack_from_a_plt_stub_without_cfi_as_perf(plt_recording):
    data, exe, (lo, hi) = plt_recording
    rc, ours, err = run_cli(["script", "--no-inline", str(data)])
    assert rc == 0, err
    theirs = subprocess.run([PERF, "script", "--no-inline", "-i", str(data)],
                            capture_output=True, text=True).stdout
    mine, perfs = parse_samples(ours), parse_samples(theirs)
    assert len(mine) == len(perfs)
    in_stub = [(f1, f2) for (_, f1), (_, f2) in zip(mine, perfs)
               if f1 and f1[0][2] == exe and lo <= f1[0][0] < hi]
    if len(in_stub) < 3:
        pytest.skip("only %d samples in the stubs" % len(in_stub))
    for f1, f2 in in_stub:
        # the program's chain: stub <- caller <- main
        assert [s.split("+")[0] for _, s, _ in f1[1:3]] == ["caller", "main"], f1
        # perf's frames past the stub (which it may leave [unknown] or
        # name _init+0x..., docs/differences.md's PLT row), address for address
        assert [a for a, _, _ in f1] == [a for a, _, _ in f2]
        assert f1[1:] == f2[1:]
