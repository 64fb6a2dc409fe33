"""Symbols sharing an address: which name perf 6.1 keeps.

perf's symbols__fixup_duplicate keeps one symbol per address by
choose_best_symbol (size, weak, global, fewer leading underscores, the
longer name), and dso__load_sym demangles a name before it makes the
symbol: the rules see the demangled names of the naming mode (perf's form;
with -v the signatures; --no-demangle the names as read).  Found on a Rust
release build: std's `<u64 as core::fmt::Display>::fmt` and `<usize as
core::fmt::Display>::fmt` are one function (v0 names of the same length);
perf prints the usize one, the longer demangled name, where perfdata,
comparing the mangled names, printed the u64 one (4 of 2,442 samples of a
`-g` recording, every such frame).

Oracle: perf script of the same recordings, in each naming mode.
"""
import shutil
import subprocess

import pytest

from conftest import PERF, requires_perf, run_cli
from script_compare import parse_samples

# spin and alias_of_spin (mangled _Z13alias_of_spinl) are one function: by
# the mangled names spin wins (no leading underscore), by the demangled ones
# alias_of_spin (the longer; with -v alias_of_spin(long)).
CXX = r"""
#include <cstdlib>
extern "C" __attribute__((noinline)) long spin(long n) {
    volatile long s = 0;
    for (long i = 0; i < n; i++) s += i * i;
    return s;
}
long alias_of_spin(long) __attribute__((alias("spin")));
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000, t = 0;
    for (long k = 0; k < n; k++) t += alias_of_spin(100000);
    return t == 42;
}
"""

RUST = r"""
use std::fmt::Write;
#[inline(never)]
fn fmt_both(i: u64, s: &mut String) {
    s.clear();
    write!(s, "{} {}", i, i as usize).unwrap();
}
fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let mut s = String::new();
    let mut t = 0usize;
    for i in 0..n { fmt_both(i * 7919, &mut s); t += s.len(); }
    std::hint::black_box(t);
}
"""

MODES = {"default": ([], []), "no-demangle": (["--no-demangle"], ["--no-demangle"]),
         "signatures": (["--signatures"], ["-v"])}


def _record(tmp, exe, arg):
    data = tmp / (exe.name + ".data")
    rec = subprocess.run([PERF, "record", "-q", "-e", "cpu-clock:u", "-F", "4000", "-g",
                          "-o", str(data), "--", str(exe), arg],
                         capture_output=True, text=True, cwd=tmp)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf record failed: %s" % rec.stderr.strip()[-200:])
    return data


@pytest.fixture(scope="module")
def cxx_recording(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    tmp = tmp_path_factory.mktemp("alias_cxx")
    (tmp / "alias.cpp").write_text(CXX)
    exe = tmp / "alias"
    subprocess.run(["g++", "-O2", "-g", "-fno-omit-frame-pointer", "-o", str(exe),
                    str(tmp / "alias.cpp")], check=True, capture_output=True)
    return _record(tmp, exe, "4000")


@pytest.fixture(scope="module")
def rust_recording(tmp_path_factory):
    rustc = shutil.which("rustc") or shutil.which("rustc", path="/root/.cargo/bin")
    if rustc is None:
        pytest.skip("rustc is not installed")
    tmp = tmp_path_factory.mktemp("alias_rust")
    (tmp / "fmt.rs").write_text(RUST)
    exe = tmp / "fmt"
    build = subprocess.run([rustc, "-O", "-g", "-C", "force-frame-pointers=yes", "-o", str(exe),
                            str(tmp / "fmt.rs")], capture_output=True, text=True)
    if build.returncode != 0:
        pytest.skip("rustc failed: %s" % build.stderr[-200:])
    return _record(tmp, exe, "3000000")


def _compare(data, mode, names):
    ours_args, perf_args = MODES[mode]
    rc, ours, err = run_cli(["script", *ours_args, str(data)])
    assert rc == 0, err
    theirs = subprocess.run([PERF, "script", *perf_args, "-i", str(data)],
                            capture_output=True, text=True).stdout
    mine, perfs = parse_samples(ours), parse_samples(theirs)
    assert len(mine) == len(perfs)
    hits = differ = 0
    for (_, f1), (_, f2) in zip(mine, perfs):
        for a, b in zip(f1, f2):
            if any(n in a[1] or n in b[1] for n in names):
                hits += 1
                differ += a != b
    return hits, differ


@requires_perf
@pytest.mark.parametrize("mode", sorted(MODES))
def test_cxx_alias_named_as_perf_names_it(cxx_recording, mode):
    hits, differ = _compare(cxx_recording, mode, ("spin",))
    assert hits >= 100, "too few frames in spin"
    assert differ == 0, "%d of %d frames in spin named otherwise than perf" % (differ, hits)


@requires_perf
@pytest.mark.parametrize("mode", sorted(MODES))
def test_rust_alias_named_as_perf_names_it(rust_recording, mode):
    names = ("Display>::fmt", "Display$GT$3fmt", "Display3fmt")
    hits, differ = _compare(rust_recording, mode, names)
    if hits < 20:
        pytest.skip("only %d frames in std's integer Display::fmt" % hits)
    assert differ == 0, "%d of %d frames named otherwise than perf" % (differ, hits)
