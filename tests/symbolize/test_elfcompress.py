"""Compressed sections inflated as far as they are read (elfcompress.Inflater,
DwarfSections' parts and pyelftools streams): the bytes are the one-shot
inflation's wherever they are read from, the section's tail is not made
before it is asked for, and bad bytes give a warning, never an exception.
Checked on libc6-dbg's debug file (zlib, as Debian ships it) and on a program
compressed here with zlib and zstd."""
import random
import shutil
import struct
import subprocess

import pytest

from symbolize import Binary
from symbolize.elfcompress import Inflater, decompress_section
from symbolize.symbols.dwarf_sections import DwarfSections
from test_symbolize_util import compile_c, libc_and_debug

PROG = r"""#include <stdio.h>
static int sq(int x) { return x * x; }
int main(int argc, char **argv) { printf("%d\n", sq(argc)); return 0; }
"""


@pytest.fixture(scope="module", params=["zlib", "zstd"])
def packed(request, tmp_path_factory):
    if shutil.which("objcopy") is None:
        pytest.skip("objcopy is not installed")
    d = tmp_path_factory.mktemp("packed")
    prog = compile_c(d, "prog", PROG, "-O2", "-g")
    out = str(d / request.param)
    p = subprocess.run(["objcopy", "--compress-debug-sections=%s" % request.param, prog, out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("objcopy cannot compress with %s: %s" % (request.param, p.stderr[:100]))
    return out


def _compressed(binary):
    return [s for s in binary.sections if s.flags & 0x800 and s.name.startswith(".debug")]


def test_parts_are_the_whole_inflation(packed):
    b = Binary(packed)
    secs = _compressed(b)
    assert secs
    rng = random.Random(7)
    for sec in secs:
        whole = decompress_section(b, sec)
        ds = DwarfSections(Binary(packed))
        assert ds.size(sec.name) == len(whole)
        for _ in range(20):
            at = rng.randrange(len(whole))
            n = rng.randrange(1, 200)
            want = whole[at:at + n] if at + n <= len(whole) else None
            assert ds.part(sec.name, at, n) == want
        assert bytes(ds.whole(sec.name)) == whole
        assert ds.part(sec.name, len(whole) - 1, 2) is None
    assert not b.warnings


@pytest.mark.parametrize("by_part", [True, False], ids=["by-part", "lazy-whole"])
def test_pyelftools_reads_the_same_through_the_streams(packed, by_part):
    """A pyelftools stream seeks and reads as io.BytesIO over the bytes."""
    b = Binary(packed)
    ds = DwarfSections(b)
    for sec in _compressed(b):
        whole = decompress_section(b, sec)
        stream = ds.stream(sec.name, by_part)
        assert stream.size == len(whole)
        assert stream.read(5) == whole[:5] and stream.tell() == 5
        stream.seek(3, 1)
        assert stream.read(4) == whole[8:12]
        stream.seek(-3, 2)
        assert stream.read() == whole[-3:] and stream.read(10) == b""
        stream.seek(0)
        assert stream.read(-1) == whole


def test_libc_debug_info_is_inflated_only_as_far_as_read():
    """libc6-dbg's .debug_info (zlib, megabytes): a unit at its start makes
    a few chunks' worth, not the section; the size is the header's."""
    _, dbg = libc_and_debug()
    b = Binary(dbg)
    sec = b.get_section(".debug_info")
    if sec is None or not sec.flags & 0x800:
        pytest.skip("libc's debug file has no compressed .debug_info here")
    inflater = Inflater(b, sec)
    assert inflater.size > 1 << 20 and not inflater.out
    head = bytes(inflater.upto(64)[:64])
    assert 64 <= len(inflater.out) < inflater.size // 4
    whole = decompress_section(b, sec)
    assert len(whole) == inflater.size and head == whole[:64]
    assert bytes(inflater.upto(inflater.size)) == whole and inflater.done


def test_bad_bytes_a_warning_and_what_came_before(packed, tmp_path):
    b = Binary(packed)
    sec = b.get_section(".debug_info")
    whole = decompress_section(b, sec)
    data = bytearray(open(packed, "rb").read())
    # the compressed bytes spoilt past their start; then a ch_size too large
    for name, spoil in (("spoilt", lambda buf: buf.__setitem__(
                            slice(sec.offset + 40, sec.offset + sec.size),
                            b"\xff" * (sec.size - 40))),
                        ("claims-more", lambda buf: struct.pack_into(
                            "<Q", buf, sec.offset + 8, len(whole) + 100))):
        buf = bytearray(data)
        spoil(buf)
        path = tmp_path / name
        path.write_bytes(bytes(buf))
        bad = Binary(str(path))
        inflater = Inflater(bad, bad.get_section(".debug_info"))
        got = bytes(inflater.upto(inflater.size))
        assert inflater.done and bad.warnings, name
        assert whole.startswith(got), name
        if name == "claims-more":
            assert got == whole
            ds = DwarfSections(Binary(str(path)))
            assert ds.part(".debug_info", len(whole), 1) is None


def test_a_step_makes_no_more_than_the_header_says(packed, tmp_path):
    """ch_size claiming less than the bytes inflate to (a bomb's shape): each
    step is bounded by what the section can still hold, so the bytes made
    are the header's size, the start of the true ones."""
    b = Binary(packed)
    sec = b.get_section(".debug_info")
    whole = decompress_section(b, sec)
    buf = bytearray(open(packed, "rb").read())
    struct.pack_into("<Q", buf, sec.offset + 8, 100)        # ch_size
    path = tmp_path / "claims-less"
    path.write_bytes(bytes(buf))
    bad = Binary(str(path))
    inflater = Inflater(bad, bad.get_section(".debug_info"))
    assert inflater.size == 100
    got = inflater.upto(10)
    assert len(got) <= 100 and bytes(got) == whole[:len(got)]
    assert bytes(inflater.upto(100)) == whole[:100] and inflater.done


def test_a_bomb_step_allocates_what_the_header_says(packed, tmp_path):
    """A stream of zeros far larger than its section's header says (zlib:
    180 KB in 197 bytes; zstd: 1 MB in 49) where the header says 100: the
    step that makes the 100 allocates less than the stream inflates to (the
    decompressor's own state, and zstd one piece of Inflater.CHUNK at most;
    unbounded steps: 260 KB and 2 MB measured)."""
    import tracemalloc
    import zlib
    import zstandard
    b = Binary(packed)
    sec = b.get_section(".debug_info")
    zeros = 180_000 if packed.endswith("zlib") else 1_000_000
    bomb = zlib.compress(b"\0" * zeros, 9) if packed.endswith("zlib") else \
        zstandard.compress(b"\0" * zeros, 19)
    assert sec.size - 24 >= len(bomb)
    buf = bytearray(open(packed, "rb").read())
    struct.pack_into("<Q", buf, sec.offset + 8, 100)
    buf[sec.offset + 24:sec.offset + 24 + len(bomb)] = bomb
    path = tmp_path / "bomb"
    path.write_bytes(bytes(buf))
    bad = Binary(str(path))
    inflater = Inflater(bad, bad.get_section(".debug_info"))
    tracemalloc.start()
    try:
        got = bytes(inflater.upto(100))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == b"\0" * 100
    assert peak < zeros, peak
