"""The native DWARF index (symbolize/symbols/native.py, Sentry's `symbolic`) against
the pyelftools walk of lines.py and against perf.

Address by address on real binaries (libc through libc6-dbg's debug file, a
CPython libpython with full DWARF, a C++ program at -O2 as PIE and non-PIE),
the inline chain's names from the symcache must equal lines.py's, and the
native index must answer (not hand back to pyelftools) nearly everywhere.
On a --call-graph=dwarf recording made here, `perfdata script` with the
native index prints the inline frames perf prints (every inlined function of
the program has a linkage name: for one without, GNU addr2line, so perf,
prints the outermost function's name, see test_symbolize_lines.py).
"""
import glob
import os
import random
import subprocess

import pytest

from symbolize import Binary, CacheDir, LineInfo
from test_symbolize_util import compile_c, libc_and_debug, need, run

symbolic = pytest.importorskip("symbolic")

from symbolize.symbols import native  # noqa: E402
from conftest import requires_libc_debug_here  # noqa: E402

CPP = r"""#include <vector>
#include <cstdio>
inline int sq(int x) { return x * x + (x & 7); }
template <class T> inline T acc(const std::vector<T>& v) { T s = 0; for (auto& e : v) s += sq(e); return s; }
namespace ns { struct K { __attribute__((noinline)) long run(int n); }; }
long ns::K::run(int n) {
    std::vector<int> v; for (int i = 0; i < n; i++) v.push_back(i * 3);
    long t = 0; for (int r = 0; r < 300; r++) t += acc(v) + r; return t; }
inline __attribute__((always_inline)) int twice(int x) { return sq(x) + sq(x + 1); }
__attribute__((noinline)) long outer_fn(int x) { long t = 0; for (int i = 0; i < 3000000; i++) t += twice(x + i); return t; }
int main(int argc, char** argv) {
    ns::K k; long t = 0;
    for (int i = 0; i < 30; i++) t += k.run(argc * 20000 + i) + outer_fn(i);
    std::printf("%ld\n", t); return 0; }
"""


def text_range(path):
    b = Binary(path)
    sec = b.get_section(".text")
    assert sec is not None
    return sec.addr, sec.addr + sec.size


def compare(path, debug=None, count=3000, seed=12, lines=False):
    """(addresses, answered natively, [(addr, native, pyelftools)] that differ):
    the inline chain's names (native.names against function_names), or with
    lines each frame as (function, file's base name, line), innermost first
    (native.locations against frames())."""
    lo, hi = text_range(path)
    f = Binary(debug or path)
    slow = LineInfo(f, native=False)
    fast = native.NativeIndex(f)
    rnd = random.Random(seed)
    addrs = sorted(rnd.randrange(lo, hi) for _ in range(count))
    answered, diffs = 0, []
    for a in addrs:
        if lines:
            got = fast.locations(a)
            if got is not None:
                got = [(fn, os.path.basename(file or ""), line) for fn, file, line in got]
        else:
            got = fast.names(a)
        if got is None:
            continue
        answered += 1
        want = ([(fr.function, os.path.basename(fr.file or ""), fr.line) for fr in slow.frames(a)]
                if lines else slow.function_names(a))
        if got != want:
            diffs.append((hex(a), got, want))
    assert not f.warnings, f.warnings
    return len(addrs), answered, diffs


def check(path, debug=None, count=3000, min_share=0.95):
    total, answered, diffs = compare(path, debug, count)
    assert diffs == [], diffs[:10]
    # The index must do the work: an index that hands every address back
    # to pyelftools would pass the comparison above.
    assert answered >= min_share * total, (answered, total)


def test_libc_with_its_debug_file():
    libc, dbg = libc_and_debug()
    # libc's assembler units (the string functions' variants and their
    # aliases) are left to pyelftools: ~15% of its .text.
    check(libc, dbg, min_share=0.8)


def _libpython():
    # pyenv's builds, or Debian's debug build (libpython3.X-dbg: libpython3.Xd).
    for lib in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1*/lib/libpython3.*.so.1.0"))
                      + glob.glob("/usr/lib/*-linux-gnu/libpython3.*d.so.1.0")):
        if ".debug_info" in run("readelf", "-S", lib, check=False):
            return lib
    return None


def test_libpython_full_dwarf():
    lib = _libpython()
    if lib is None:
        pytest.skip("no libpython with .debug_info (pyenv's CPython builds have one; Debian: "
                    "libpython3.X-dbg)")
    check(lib, count=4000)


@pytest.mark.parametrize("flags", [("-O2", "-g"), ("-O2", "-g", "-no-pie"),
                                   ("-O2", "-gdwarf-4"), ("-O2", "-g", "-flto")])
def test_cpp_program(tmp_path, flags):
    prog = compile_c(tmp_path, "inl", CPP, *flags, lang="cpp")
    lo, hi = text_range(prog)
    check(prog, count=min(3000, hi - lo), min_share=0.98)
    # and the inlined calls are there to compare
    fast = native.NativeIndex(Binary(prog))
    assert any(len(fast.names(a) or ()) > 1 for a in range(lo, hi))


def test_cache_file_reused_and_damage_rebuilt(tmp_path):
    prog = compile_c(tmp_path, "inl", CPP, "-O2", "-g", lang="cpp")
    lo, hi = text_range(prog)
    cache = CacheDir(tmp_path / "cache")
    key = ("ab" * 20, "b")
    prefix = native.cache_prefix(cache, *key)
    assert prefix == str(tmp_path / "cache" / "symcache" / "ab" / ("ab" * 19 + "-b"))
    os.makedirs(os.path.dirname(prefix))
    with open(prefix + "-perfdata-symcache1-0123456789abcdef.symc", "wb") as f:
        f.write(b"an index of an older tag")
    first = native.NativeIndex(Binary(prog), cache, key)
    answers = [first.names(a) for a in range(lo, hi, 3)]
    kept = first.cache_file
    assert kept.startswith(prefix) and first.built and os.path.getsize(kept) > 0
    assert os.listdir(os.path.dirname(prefix)) == [os.path.basename(kept)]   # stale one gone
    again = native.NativeIndex(Binary(prog), cache, key)
    assert [again.names(a) for a in range(lo, hi, 3)] == answers
    assert not again.built                      # read from the file
    with open(kept, "r+b") as f:                # damaged: built again, same answers
        f.seek(0)
        f.write(b"garbage!" * 8)
    third = native.NativeIndex(Binary(prog), cache, key)
    assert [third.names(a) for a in range(lo, hi, 3)] == answers
    assert third.built
    with open(kept, "wb"):                      # truncated to nothing
        pass
    fourth = native.NativeIndex(Binary(prog), cache, key)
    assert [fourth.names(a) for a in range(lo, hi, 3)] == answers


def test_lineinfo_uses_native_only_for_names(tmp_path):
    """function_names comes from the index; frames() with file and line stays
    with pyelftools (symbolic normalizes './a/../b.h')."""
    prog = compile_c(tmp_path, "inl", CPP, "-O2", "-g", lang="cpp")
    li = LineInfo(Binary(prog))
    lo, hi = text_range(prog)
    a = next(a for a in range(lo, hi) if len(li.function_names(a)) > 1)
    assert li._native_index() is not None
    assert tuple(f.function for f in li.frames(a)) == li.function_names(a)
    assert all(f.file for f in li.frames(a))


@pytest.mark.parametrize("which", ["libc", "libpython", "cpp"])
def test_source_lines_as_pyelftools(tmp_path, which):
    """The source line of every frame of the chain (the call sites of the
    outer ones), as lines.py's pyelftools walk finds them (which agrees with
    addr2line -i), by base name: what `script -F srcline` prints.  pyelftools
    decodes a whole unit per address of a new unit (0.3 s for one of
    libpython's): few addresses there."""
    if which == "libc":
        libc, dbg = libc_and_debug()
        total, answered, diffs = compare(libc, dbg, count=400, seed=13, lines=True)
        share = 0.8     # (its assembler units are left to pyelftools)
    elif which == "libpython":
        lib = _libpython()
        if lib is None:
            pytest.skip("no libpython with .debug_info (pyenv's CPython builds have one; Debian: "
                        "libpython3.X-dbg)")
        total, answered, diffs = compare(lib, count=100, seed=13, lines=True)
        share = 0.9     # (addresses DWARF gives a line but no function: pyelftools')
    else:
        prog = compile_c(tmp_path, "inl", CPP, "-O2", "-g", lang="cpp")
        lo, hi = text_range(prog)
        total, answered, diffs = compare(prog, count=min(3000, hi - lo), seed=13, lines=True)
        share = 0.75    # (the start-up code of crt*.o has no function: pyelftools')
    assert diffs == [], diffs[:10]
    assert answered >= share * total, (answered, total)


def test_lineinfo_native_lines(tmp_path):
    """With native_lines, frames() and srcline() come from the index (no
    unit is walked by pyelftools) and say what it says, by base name."""
    prog = compile_c(tmp_path, "inl", CPP, "-O2", "-g", lang="cpp")
    fast, slow = LineInfo(Binary(prog), native_lines=True), LineInfo(Binary(prog))
    lo, hi = text_range(prog)
    addrs = [a for a in range(lo, hi, 5) if len(slow.function_names(a)) > 1][:50]
    assert addrs
    for a in addrs:
        assert [(f.function, os.path.basename(f.file), f.line) for f in fast.frames(a)] == \
            [(f.function, os.path.basename(f.file), f.line) for f in slow.frames(a)]
        assert os.path.basename(fast.srcline(a)) == os.path.basename(slow.srcline(a))
    # no unit decoded by pyelftools (its sections may be read: a unit's own
    # symcache is built from them, unit_symcache.py)
    assert fast._cus == {}


@requires_libc_debug_here
@pytest.mark.parametrize("index", ["units", "whole"])
def test_dwarf_recording_against_perf(tmp_path, monkeypatch, index):
    """perf script's inline frames on a DWARF recording equal perfdata's,
    whose names came from the native index: on a first run the symcaches of
    the units asked about (unit_symcache.py; no symcache file kept), or the
    whole file's symcache where one is kept."""
    from conftest import _CAN_RECORD, PERF, run_cli
    from script_compare import compare as compare_text
    if PERF is None or not _CAN_RECORD:
        pytest.skip("perf cannot record here")
    need("g++")
    prog = compile_c(tmp_path, "inl", CPP, "-O2", "-g", lang="cpp")
    data = str(tmp_path / "perf.data")
    subprocess.run([PERF, "record", "-q", "--call-graph=dwarf", "-F", "2000", "-o", data, prog],
                   check=True, capture_output=True)
    cache = tmp_path / "cache"
    kept = str(cache / "symcache" / "*" / "*.symc")
    if index == "whole":
        b = Binary(prog)
        native.NativeIndex(b, CacheDir(cache), (b.build_id, "b")).prepare()
        (whole,) = glob.glob(kept)
        os.utime(whole, (1, os.stat(whole).st_mtime))  # last used long ago
    monkeypatch.setenv("PERFDATA_CACHE_DIR", str(cache))
    theirs = subprocess.run([PERF, "script", "-i", data], capture_output=True, text=True).stdout
    rc, ours, err = run_cli(["script", data])
    assert rc == 0, err
    assert bool(glob.glob(kept)) == (index == "whole")
    if index == "whole":
        assert os.stat(whole).st_atime > 1            # read by the run (marked used)
    # perf printed inlined frames of the program, and they are compared
    assert "acc<int>" in theirs or "twice" in theirs
    stats = compare_text(ours, theirs, include_kernel=False)
    assert stats["other"] == [], stats["other"][:5]
    assert stats["equal"] > 100


def test_unwritable_cache_dir_still_answers(tmp_path):
    """A cache directory that cannot be made (a file is in the way, which
    stops root too): the index is built (its copy of the file made in
    $TMPDIR), answers, and warns nothing."""
    prog = compile_c(tmp_path, "inl", CPP, "-O2", "-g", lang="cpp")
    (tmp_path / "a-file").write_text("not a directory")
    b = Binary(prog)
    idx = native.NativeIndex(b, str(tmp_path / "a-file" / "sub"), ("ab" * 20, "b"))
    lo, hi = text_range(prog)
    slow = LineInfo(Binary(prog), native=False)
    assert [idx.names(a) for a in range(lo, hi, 7)] == \
        [slow.function_names(a) for a in range(lo, hi, 7)]
    assert idx.built and not b.warnings


def test_frame_pointer_recording_does_not_load_symbolic(tmp_path):
    """symbolic is imported only when an inline chain is looked up: a -g
    recording (no DWARF unwinding) does not load its 74 MiB library."""
    import sys
    from conftest import REPO
    code = ("import sys; from perfdata import cli; sys.argv = ['perfdata', 'script', %r]; "
            "cli.main(); "
            "sys.stdout.flush(); print('symbolic' in sys.modules, file=sys.stderr)"
            % str(REPO / "samples" / "cpp_inline.fp.data"))
    env = dict(os.environ, PERFDATA_CACHE_DIR=str(tmp_path / "c"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=str(REPO), env=env)
    assert p.returncode == 0, p.stderr
    assert p.stderr.strip().splitlines()[-1] == "False"


def test_malformed_dwarf_falls_back_quietly(tmp_path):
    """DWARF symbolic cannot index (here .debug_info overwritten): the index
    answers None, so lines.py answers (and warns, if it finds the fault)."""
    prog = compile_c(tmp_path, "inl", CPP, "-O2", "-g", lang="cpp")
    sec = Binary(prog).get_section(".debug_info")
    with open(prog, "r+b") as f:
        f.seek(sec.offset)
        f.write(b"\xff" * min(sec.size, 4096))
    b = Binary(prog)
    idx = native.NativeIndex(b)
    lo, hi = text_range(prog)
    assert all(idx.names(a) is None for a in range(lo, hi, 5))
    assert idx.error and not b.warnings
