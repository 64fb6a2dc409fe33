"""DWARF unwinding through a binary linked by lld (its default, and rustc's on
x86-64 Linux since 1.90).

GNU ld puts every PT_LOAD at a page-aligned file offset; lld only keeps
p_offset and p_vaddr congruent modulo the page.  The loader maps a segment
from the page below its p_offset, so the text mapping of a small lld-linked
program starts at file offset 0, where the read-only segment (headers,
.eh_frame) lies: the mapping's bias must come from the text segment, not from
whatever segment holds its first byte.  Found on a Rust release build whose
every DWARF stack stopped at its leaf (perf unwound them to main).
"""
import glob
import os
import shutil
import subprocess

import pytest

from conftest import PERF, SPIN_LEAF_C, requires_perf, run_cli
from script_compare import compare, parse_samples
from symbolize.elffile import PF_X, Binary, LoadSegment

SAMPLES_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples", "bin")

# The load segments of `gcc -O2 -g -fuse-ld=lld` on the program below (LLD
# 22.1.2, rustup's): R at offset 0, R E at 0x650 (vaddr 0x1650), RW, RW.
LLD_SEGMENTS = [LoadSegment(0x0, 0x650, 0x0, 0x650, 4, 0x1000),
                LoadSegment(0x1650, 0x1e0, 0x650, 0x1e0, 4 | PF_X, 0x1000),
                LoadSegment(0x2830, 0x7d0, 0x830, 0x1d8, 6, 0x1000),
                LoadSegment(0x3a08, 0x39, 0xa08, 0x38, 6, 0x1000)]
# GNU ld's layout of the same kind of program: every segment page-aligned.
BFD_SEGMENTS = [LoadSegment(0x0, 0x628, 0x0, 0x628, 4, 0x1000),
                LoadSegment(0x1000, 0x1c5, 0x1000, 0x1c5, 4 | PF_X, 0x1000),
                LoadSegment(0x2000, 0x11c, 0x2000, 0x11c, 4, 0x1000),
                LoadSegment(0x3de8, 0x258, 0x2de8, 0x250, 6, 0x1000)]

LOOP_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
""" + SPIN_LEAF_C + r"""int main(int argc, char **argv) {
    long t = 0;
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    for (int k = 0; k < 200 * scale; k++) t += mid(200000);
    printf("%ld\n", t);
    return 0;
}
"""


def _binary_with(segments):
    b = Binary(os.path.join(SAMPLES_BIN, "threads"))
    b._segments = list(segments)
    return b


def test_text_mapping_of_an_lld_binary_has_the_text_segments_bias():
    # ld.so maps the R E segment at load base + 0x1000 from file offset 0
    # (0x650 rounded down to its page), length 0x1000.
    base = 0x55E068133000
    b = _binary_with(LLD_SEGMENTS)
    start = base + 0x1000
    bias = b.mapping_bias(start, 0, 0x1000)
    assert bias == base
    # what the text's addresses come to through that bias: their own svma
    avma_of_main = start + (0x6b0 - 0)          # file offset 0x6b0 -> svma 0x16b0
    assert avma_of_main - bias == b.file_offset_to_svma(0x6b0) == 0x16b0
    # the first segment's bias at the mapping's first byte was 0x1000 off
    assert start - b.file_offset_to_svma(0) == base + 0x1000


def test_page_aligned_layout_unchanged():
    # GNU ld: the text segment's own page; the bias is the load base, as
    # the segment holding the mapping's first byte said before
    base = 0x5603_2A00_0000
    b = _binary_with(BFD_SEGMENTS)
    start = base + 0x1000
    assert b.mapping_bias(start, 0x1000, 0x1000) == base == start - b.file_offset_to_svma(0x1000)


def test_a_mapping_without_code_is_taken_at_its_first_byte():
    b = _binary_with(BFD_SEGMENTS)
    base = 0x7F00_0000_0000
    for pgoff in (0x0, 0x2000):             # the headers' and .rodata's pages
        start = base + pgoff
        assert b.mapping_bias(start, pgoff, 0x1000) == start - b.file_offset_to_svma(pgoff)
    # no segment there at all
    assert b.mapping_bias(base, 0x9000, 0x1000) is None


def _lld_dir():
    """A directory holding ld.lld for gcc's -B (PATH, or rustup's gcc-ld)."""
    found = shutil.which("ld.lld")
    if found:
        return os.path.dirname(found)
    rustc = shutil.which("rustc")
    roots = []
    if rustc:
        out = subprocess.run([rustc, "--print", "sysroot"], capture_output=True, text=True)
        if out.returncode == 0:
            roots.append(out.stdout.strip())
    roots += glob.glob(os.path.expanduser("~/.rustup/toolchains/*"))
    for root in roots:
        for path in glob.glob(os.path.join(root, "lib", "rustlib", "*", "bin", "gcc-ld", "ld.lld")):
            if os.access(path, os.X_OK):
                return os.path.dirname(path)
    return None


@pytest.fixture(scope="module")
def lld_recording(tmp_path_factory):
    gcc = shutil.which("gcc")
    lld = _lld_dir()
    if gcc is None or lld is None:
        pytest.skip("no gcc, or no ld.lld (PATH or rustup's gcc-ld) to link with")
    tmp = tmp_path_factory.mktemp("lld")
    src = tmp / "loop.c"
    src.write_text(LOOP_SOURCE)
    exe = tmp / "loop"
    built = subprocess.run([gcc, "-O2", "-g", "-B" + lld, "-fuse-ld=lld", str(src), "-o", str(exe)],
                           capture_output=True, text=True)
    if built.returncode != 0:
        pytest.skip("gcc -fuse-ld=lld failed: %s" % built.stderr.strip()[-200:])
    text = [s for s in Binary(str(exe)).load_segments if s.flags & PF_X]
    if not text or text[0].offset % 0x1000 == 0:
        pytest.skip("this lld put the text segment at a page-aligned offset")
    data = tmp / "loop.data"
    rec = subprocess.run([PERF, "record", "-q", "--call-graph=dwarf", "-e", "cpu-clock:u",
                          "-o", str(data), str(exe), "3"], capture_output=True, text=True,
                         cwd=tmp, timeout=120)
    if rec.returncode != 0 or not data.exists():
        pytest.skip("perf could not record: %s" % rec.stderr.strip()[-200:])
    env = dict(os.environ, HOME=str(tmp))
    perf = subprocess.run([PERF, "script", "-i", str(data)], capture_output=True, text=True,
                          cwd=tmp, env=env, timeout=120)
    assert perf.returncode == 0, perf.stderr
    return data, perf.stdout


@requires_perf
def test_dwarf_stacks_of_an_lld_binary_as_perf(lld_recording):
    data, perf_text = lld_recording
    rc, ours, err = run_cli(["script", str(data)])
    assert rc == 0, err
    stats = compare(ours, perf_text)
    assert stats["samples_perf"] == stats["samples_ours"] > 50
    assert stats["other"] == [], stats["other"][:5]
    # the stacks reach main through the program's own frames (they stopped
    # at the leaf before)
    through = [frames for _, frames in parse_samples(ours)
               if frames and frames[0][1].startswith("leaf+")]
    assert through and all(any(f[1].startswith("main+") for f in frames) for frames in through)
