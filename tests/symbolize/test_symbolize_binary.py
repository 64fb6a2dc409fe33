"""Binary: build-id, segments, address translation, debuglink, bad input."""
import os
import re
import zlib

import pytest

from symbolize import Binary, SymbolizeError
from test_symbolize_util import compile_c, readelf_build_id, run, need

SRC = r"""
#include <stdio.h>
int g = 5;
int main(void) { printf("%d\n", g); return 0; }
"""


@pytest.fixture(scope="module")
def progs(tmp_path_factory):
    d = tmp_path_factory.mktemp("bin")
    return {
        "pie": compile_c(d, "pie", SRC, "-O1", "-g"),
        "exec": compile_c(d, "exec", SRC, "-O1", "-no-pie", "-g"),
        "dir": d,
    }


def readelf_loads(path):
    out = []
    for line in run("readelf", "-lW", path).splitlines():
        m = re.match(r"\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)", line)
        if m:
            off, vaddr, _, filesz, memsz = (int(x, 16) for x in m.groups())
            out.append((off, vaddr, filesz, memsz))
    return out


@pytest.mark.parametrize("kind,etype", [("pie", "ET_DYN"), ("exec", "ET_EXEC")])
def test_header_build_id_and_segments(progs, kind, etype):
    b = Binary(progs[kind])
    assert b.ok and b.error is None
    assert b.elf_type == etype
    assert b.machine == "EM_X86_64"
    assert b.build_id == readelf_build_id(progs[kind])
    loads = readelf_loads(progs[kind])
    assert [(s.offset, s.vaddr, s.filesz, s.memsz) for s in b.load_segments] == loads
    assert len(loads) >= 2


@pytest.mark.parametrize("kind", ["pie", "exec"])
def test_file_offset_and_avma_translation(progs, kind):
    """Every symbol's svma -> file offset -> svma, and through a mapping at
    a non-zero page offset as the loader makes it, against readelf."""
    path = progs[kind]
    b = Binary(path)
    text_seg = [s for s in b.load_segments if s.flags & 1][0]
    syms = [l.split() for l in run("nm", "--defined-only", path).splitlines()]
    funcs = [int(a, 16) for a, t, n in (s for s in syms if len(s) == 3) if t in "Tt"]
    assert funcs
    for svma in funcs:
        off = text_seg.offset + (svma - text_seg.vaddr)
        assert b.file_offset_to_svma(off) == svma
        assert b.svma_to_file_offset(svma) == off
        # The loader maps the text segment from its page-aligned file offset.
        pgoff = text_seg.offset & ~0xFFF
        map_start = 0x7F0000000000 if kind == "pie" else text_seg.vaddr & ~0xFFF
        avma = map_start + (off - pgoff)
        assert b.avma_to_svma(avma, map_start, pgoff) == svma
    assert b.avma_to_svma(0x1000, 0x2000, 0) is None
    assert b.file_offset_to_svma(10 ** 12) is None


def test_live_process_mapping(progs):
    """/proc/self/maps of a running python: its libc's mapping translates a
    known symbol's avma (from ctypes) to nm's svma."""
    import ctypes
    libc = ctypes.CDLL(None)
    avma = ctypes.cast(libc.getpid, ctypes.c_void_p).value
    for line in open("/proc/self/maps"):
        parts = line.split()
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        if lo <= avma < hi and len(parts) >= 6:
            path, pgoff = parts[5], int(parts[2], 16)
            break
    else:
        pytest.skip("getpid not in a file mapping")
    b = Binary(path)
    svma = b.avma_to_svma(avma, lo, pgoff)
    nm = {n.split("@")[0]: int(a, 16) for a, t, n in (l.split() for l in run("nm", "-D", "--defined-only", path).splitlines()
                                       if len(l.split()) == 3)}
    assert svma == nm["getpid"]


def test_debuglink_name_and_crc(progs, tmp_path):
    need("objcopy")
    src = progs["pie"]
    dbg = str(tmp_path / "pie.debug")
    stripped = str(tmp_path / "pie")
    run("objcopy", "--only-keep-debug", src, dbg)
    run("objcopy", "--strip-debug", f"--add-gnu-debuglink={dbg}", src, stripped)
    b = Binary(stripped)
    name, crc = b.debuglink
    assert name == "pie.debug"
    assert crc == zlib.crc32(open(dbg, "rb").read())
    assert Binary(dbg).build_id == b.build_id
    assert not Binary(dbg).has_code and b.has_code
    assert Binary(src).debuglink is None


def test_supplementary_links_and_hostile_sections(progs, tmp_path):
    """.gnu_debugaltlink (a path, NUL, the build-id) and DWARF 5's
    .debug_sup (version, is_supplementary, a path, a ULEB128 length, the
    checksum) as dwz writes them; cut or hostile contents give no link and
    never raise (the lengths are checked against the section)."""
    need("objcopy")
    bid = bytes(range(20))
    sup_ref = b"\x05\x00\x00" + b"../x.sup\0" + b"\x14" + bid
    sup_self = b"\x05\x00\x01" + b"\0" + b"\x14" + bid
    cases = {
        ".gnu_debugaltlink": (b"/usr/lib/debug/.dwz/x.debug\0" + bid,
                              ("/usr/lib/debug/.dwz/x.debug", bid.hex()), None),
        ".debug_sup": (sup_ref, ("../x.sup", bid.hex()), None),
        "self": (sup_self, None, bid.hex()),
        "cut": (sup_ref[:-5], None, None),
        "hostile-length": (b"\x05\x00\x00x\0" + b"\xff" * 12, None, None),
        "no-nul": (b"\x05\x00\x00" + b"x" * 40, None, None),
        "other-version": (b"\x09\x00" + sup_ref[2:], None, None),
        "altlink-no-id": (b"/x.debug\0", None, None),
    }
    for name, (content, link, identity) in cases.items():
        section = name if name.startswith(".") else (
            ".gnu_debugaltlink" if name.startswith("altlink") else ".debug_sup")
        blob = tmp_path / (name + ".bin")
        blob.write_bytes(content)
        out = str(tmp_path / name)
        run("objcopy", "--add-section", "%s=%s" % (section, blob), progs["pie"], out)
        b = Binary(out)
        got = b.supplementary_link
        assert (tuple(got) if got else None) == link, name
        assert b.supplementary_identity == (identity or b.build_id), name
    assert Binary(progs["pie"]).supplementary_link is None


def test_refuses_non_regular_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for p in (str(fifo), str(tmp_path), "/dev/null", "/dev/zero"):
        b = Binary(p)          # must not block on the FIFO nor read /dev/zero forever
        assert not b.ok and b.error_kind == "not-regular", p
        assert b.build_id is None and b.load_segments == [] and b.sections == []
    b = Binary(str(tmp_path / "absent"))
    assert b.error_kind == "missing" and b.build_id is None


def test_not_elf_and_size_limit(tmp_path, progs):
    p = tmp_path / "text"
    p.write_text("hello world, not an ELF file at all\n")
    b = Binary(str(p))
    assert b.error_kind == "not-elf" and b.build_id is None and b.debuglink is None
    b = Binary(progs["pie"], max_size=1000)
    assert b.error_kind == "too-large"
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert Binary(str(empty)).error_kind == "not-elf"


def test_truncated_and_corrupted_never_raise(progs, tmp_path):
    data = open(progs["pie"], "rb").read()
    cuts = [4, 16, 20, 52, 63, 64, 100, 500, 2000, len(data) // 2, len(data) - 100]
    for n in cuts:
        p = tmp_path / f"cut{n}"
        p.write_bytes(data[:n])
        b = Binary(str(p))
        # Whatever it answers, it answers without raising.
        b.build_id, b.load_segments, b.sections, b.debuglink, b.elf_type, b.machine
        b.file_offset_to_svma(0x1000)
        assert b.ok or b.error
    # Garbage in the section header fields: e_shoff, e_shnum, e_shstrndx.
    import random
    rnd = random.Random(7)
    for i in range(40):
        buf = bytearray(data)
        for _ in range(8):
            pos = rnd.choice([0x28, 0x2A, 0x30, 0x32, 0x34, 0x36, 0x38, 0x3C, 0x3E]) + rnd.randrange(0, 2)
            buf[pos] = rnd.randrange(256)
        p = tmp_path / f"bad{i}"
        p.write_bytes(bytes(buf))
        try:
            b = Binary(str(p))
            b.build_id, b.load_segments, b.sections, b.debuglink
        except SymbolizeError:
            pass


@pytest.mark.parametrize("kind", ["pie", "exec"])
def test_facts_kept_across_runs(progs, kind, tmp_path, monkeypatch):
    """A binary opened with a facts cache keeps its sections, segments,
    build-id and machine there; the next open of the same file (another
    hard link made to it meanwhile) reads them and parses no ELF header; a
    changed file is read again."""
    import shutil
    from symbolize import CacheDir, elffile
    path = tmp_path / kind
    shutil.copy(progs[kind], path)
    cache = CacheDir(tmp_path / "cache")
    first = Binary(str(path), facts=cache)
    first.keep_facts()
    want = (first.sections, first.load_segments, first.build_id, first.machine)
    assert want[2] == readelf_build_id(progs[kind]) and want[3] == "EM_X86_64"
    assert len(list((tmp_path / "cache" / "elf").rglob("*-facts.marshal"))) == 1
    os.link(path, tmp_path / "hard-link")       # (as perf's build-id cache does)

    class NoHeader:
        def __init__(self, buf):
            raise AssertionError("ELF header parsed")
    with monkeypatch.context() as m:
        m.setattr(elffile, "ElfHeader", NoHeader)
        again = Binary(str(path), facts=cache)
        again.keep_facts()
        assert (again.sections, again.load_segments, again.build_id, again.machine) == want
        assert again.has_code and again.get_section(".text") == first.get_section(".text")
    # Another file (the same size, another build-id) under the same path.
    other = bytearray(path.read_bytes())
    at = other.find(bytes.fromhex(want[2]))
    other[at] ^= 0xff
    path.write_bytes(bytes(other))
    os.utime(path, ns=(1, 1))       # (a rewrite within a clock tick keeps the time)
    changed = Binary(str(path), facts=cache)
    assert changed.build_id != want[2] and changed.build_id == readelf_build_id(str(path))


def test_facts_of_a_damaged_file_are_not_kept(progs, tmp_path):
    """A file whose headers gave a warning is not described in the cache:
    the next run reads it (and warns) again."""
    from symbolize import CacheDir
    data = bytearray(open(progs["pie"], "rb").read())
    shoff = int.from_bytes(data[0x28:0x30], "little")
    data[0x28:0x30] = (len(data) - 8).to_bytes(8, "little")     # table past the end
    path = tmp_path / "damaged"
    path.write_bytes(bytes(data))
    cache = CacheDir(tmp_path / "cache")
    b = Binary(str(path), facts=cache)
    b.keep_facts()
    assert b.warnings and shoff
    assert not list((tmp_path / "cache").rglob("*-facts.marshal"))
    again = Binary(str(path), facts=cache)
    assert again.sections == [] and again.warnings


def test_facts_leave_damaged_program_headers_to_be_said_where_read(progs, tmp_path):
    """A debug file's program headers are not read by a run (only its
    sections): keeping its facts says nothing of damaged ones, and keeps no
    facts; a run that reads them hears it then."""
    from symbolize import CacheDir
    data = bytearray(open(progs["pie"], "rb").read())
    data[0x36:0x38] = (8).to_bytes(2, "little")                # e_phentsize too short
    path = tmp_path / "damaged"
    path.write_bytes(bytes(data))
    cache = CacheDir(tmp_path / "cache")
    b = Binary(str(path), facts=cache)
    b.keep_facts()
    assert b.warnings == [] and b.sections and b.build_id
    assert not list((tmp_path / "cache").rglob("*-facts.marshal"))
    assert b.load_segments == [] and "too short" in b.warnings[0]


def _mapped_rss_kib(path):
    """Resident KiB of this process's mappings of `path` (/proc/self/smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            parts = line.split()
            if parts and "-" in parts[0] and not parts[0].endswith(":"):
                inside = parts[-1] == path
            elif inside and parts[0] == "Rss:":
                total += int(parts[1])
    return total


def _padded_binary(progs, path):
    """The test program with 4 MiB of known bytes after it, at `path`:
    (the program's bytes, the bytes after them)."""
    with open(progs["exec"], "rb") as f:
        head = f.read()
    tail = bytes(range(256)) * (16 << 10)
    with open(path, "wb") as f:
        f.write(head + tail)
    return head, tail


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc/self/smaps")
def test_a_large_read_gives_its_pages_of_the_mapping_back(progs):
    """What read() copied does not stay resident in the mapping too (a
    binary's symbol tables and DWARF sections are copied out): the copy is
    whole and equal, and the mapping holds far less than it."""
    import symbolize.elffile as elffile
    path = str(progs["dir"] / "padded")
    head, tail = _padded_binary(progs, path)
    b = Binary(path)
    assert b.ok
    before = _mapped_rss_kib(path)
    got = b.read(len(head), len(tail))
    assert got == tail and len(tail) >= elffile.RELEASE_AFTER_COPY
    assert _mapped_rss_kib(path) - before < 1024, (before, _mapped_rss_kib(path))
    # a small read stays as it was: read in place, its page kept
    assert b.read(len(head) + 5, 16) == tail[5:21]


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="needs /proc/self/smaps")
def test_code_bytes_are_read_from_the_file_not_the_mapping(progs, tmp_path):
    """read_code() gives read()'s bytes without touching the mapping (a
    fault there maps the 64 KiB around it, or a whole large folio): 256
    reads spread over 4 MiB add under 256 KiB to what is resident of it.
    Where the path names another file by then (a rebuild, a FIFO), the
    mapped one is read."""
    path = str(tmp_path / "padded")
    head, tail = _padded_binary(progs, path)
    b = Binary(path)
    assert b.ok
    offsets = [len(head) + k * (16 << 10) + 7 for k in range(256)]
    before = _mapped_rss_kib(path)
    for at in offsets:
        assert b.read_code(at, 15) == tail[at - len(head):at - len(head) + 15]
    assert _mapped_rss_kib(path) - before < 256, (before, _mapped_rss_kib(path))
    # replaced: another file under the path (a rebuild); the map still holds the old
    c = Binary(path)
    with open(path + ".new", "wb") as f:
        f.write(head + bytes(len(tail)))
    os.replace(path + ".new", path)
    assert c.read_code(offsets[3], 15) == tail[offsets[3] - len(head):offsets[3] - len(head) + 15]
    assert c.read_code(len(head) + len(tail) - 4, 15) is None      # past the end
    # a FIFO in its place: not waited on, the mapping read
    d = Binary(path)
    os.unlink(path)
    os.mkfifo(path)
    assert d.read_code(offsets[5], 15) == bytes(15)
