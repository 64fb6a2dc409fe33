"""The one cache directory (symbolize/cachedir.py's CacheDir) every cache
uses: a damaged or truncated file of each kind (symbol table, inline names,
native symcache, parsed kallsyms, ELF facts, vdso image) is built again and the output
is the same; the size bound removes the least recently used of the cache's
own files and nothing else; a disabled cache reads and writes nothing."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, SAMPLE_BUILDIDS, SAMPLES
from symbolize import CacheDir, DebugInfoLocator, Symbolizer, SymbolizerOptions
from symbolize.cachedir import DEFAULT

SYMBOL_ARGS = ["--buildid-dir", str(SAMPLE_BUILDIDS), "--debug-dir", str(SAMPLE_BUILDIDS)]


def script(data, *args, env=None):
    run = subprocess.run([sys.executable, "-c", "import sys, cli; sys.exit(cli.main())",
                          "script", str(SAMPLES / data)] + SYMBOL_ARGS + list(args),
                         capture_output=True, text=True, cwd=REPO, timeout=300,
                         env=dict(os.environ, **(env or {})))
    assert run.returncode == 0, run.stderr
    return run.stdout


def files(root):
    return sorted(p for p in root.rglob("*") if p.is_file())


def kind_of(path):
    name = path.name
    return "kallsyms" if name.startswith("kallsyms-") else \
        "vdso" if name.startswith("vdso-") else path.parent.parent.name


def damage(path, how):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2] if how == "truncated" else
                     b"\x00garbage\xff" * 64 if how == "garbage" else b"")


@pytest.mark.parametrize("how", ["garbage", "truncated", "empty"])
def test_damaged_files_of_every_kind_are_built_again(tmp_path, how):
    """A DWARF recording with inlined frames (symbol tables, inline names,
    the native index where symbolic is installed) and one with kernel frames
    (kallsyms, from the bundled build-id cache): each file of the cache is
    damaged, the next run prints the same and writes intact files back."""
    cache = tmp_path / "cache"
    first = {d: script(d, "--symbol-cache", str(cache))
             for d in ("cpp_inline.dwarf.data", "two_events.data")}
    kept = {p: p.read_bytes() for p in files(cache)}
    kinds = {kind_of(p) for p in kept}
    # (no "symcache": a run this small asks the native index through the
    # units' own symcaches, kept in memory; a damaged symcache file is
    # test_native_index.py's test_cache_file_reused_and_damage_rebuilt)
    assert {"symtab", "inline", "kallsyms", "elf"} <= kinds, kinds
    for path in kept:
        damage(path, how)
    again = {d: script(d, "--symbol-cache", str(cache)) for d in first}
    assert again == first
    for path, data in kept.items():
        if kind_of(path) != "symcache":     # (symcache bytes need not repeat)
            assert path.read_bytes() == data, "%s was not written again" % path
        else:
            assert path.stat().st_size == len(data)


@pytest.mark.parametrize("how", ["garbage", "truncated", "empty"])
def test_damaged_vdso_image_is_written_again(tmp_path, how):
    from symbolize.debuginfo import vdso
    from symbolize.debuginfo.vdso import running_vdso
    cache = CacheDir(tmp_path / "cache")
    got = running_vdso(cache)
    if got is None:
        pytest.skip("this process has no vdso")
    path, build_id = got
    assert os.path.dirname(path) == cache.root and build_id in path
    image = open(path, "rb").read()
    damage(Path(path), how)
    vdso._running_vdso.cache_clear()            # (memoized per process)
    assert running_vdso(cache) == got
    assert open(path, "rb").read() == image


def make(path, size, used):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    os.utime(path, (used, used))
    return path


def test_bound_removes_the_least_recently_used_of_every_kind(tmp_path):
    root = tmp_path / "cache"
    bid = "ab" * 20
    old = time.time() - 10 * 86400
    entries = [make(root / "symtab" / "ab" / (bid[2:] + "-sc.table"), 1000, old + 1),
               make(root / "kallsyms-f00.bin", 1000, old + 2),
               make(root / "inline" / "ab" / (bid[2:] + "-b.json"), 1000, old + 3),
               make(root / ("vdso-%s.so" % bid), 1000, old + 4),
               make(root / "symcache" / "ab" / (bid[2:] + "-b-tag.symc"), 1000, old + 5)]
    # Not the cache's: a file of the user's in the same directory, a
    # temporary file of a write under way.
    mine = make(root / "notes.txt", 5000, old)
    busy = make(root / "symtab" / "ab" / ".tmp-123", 5000, time.time())
    cache = CacheDir(root, limit=2500)
    assert cache.size() == 5000            # (neither of those counts)
    # Reading a file counts as a use: the oldest entry survives.
    assert cache.read(str(entries[0])) == b"x" * 1000
    cache.prune()
    assert [p.exists() for p in entries] == [True, False, False, False, True]
    assert mine.exists() and busy.exists()
    # A stale temporary file (an interrupted run's) goes too.
    os.utime(busy, (old, old))
    cache.prune()
    assert not busy.exists() and mine.exists()


def test_bound_applied_on_write(tmp_path):
    root = tmp_path / "cache"
    bid = "cd" * 20
    old = time.time() - 86400
    for i in range(4):
        make(root / "symtab" / "cd" / ("%s-%d.table" % (bid[2:], i)), 1000, old + i)
    cache = CacheDir(root, limit=2500)
    assert cache.write(cache.path_for("inline", bid, "-b.json"), b"y" * 1000)
    assert cache.size() <= 2500
    assert (root / "inline" / "cd" / (bid[2:] + "-b.json")).exists()
    assert sorted(p.name for p in (root / "symtab" / "cd").iterdir()) == [bid[2:] + "-3.table"]


def test_disabled_cache_reads_and_writes_nothing(tmp_path):
    """--no-symbol-cache: no cache file anywhere, whether $PERFDATA_CACHE_DIR
    or $XDG_CACHE_HOME would name one, on recordings that use every kind."""
    env = {"PERFDATA_CACHE_DIR": str(tmp_path / "env"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    for data in ("cpp_inline.dwarf.data", "two_events.data"):
        off = script(data, "--no-symbol-cache", env=env)
        assert not (tmp_path / "env").exists() and not (tmp_path / "xdg").exists()
        assert off == script(data, "--symbol-cache", str(tmp_path / "on"))
    assert files(tmp_path / "on")
    # ...and a filled cache is not read: damaged files change nothing.
    env = {"PERFDATA_CACHE_DIR": str(tmp_path / "on")}
    for path in files(tmp_path / "on"):
        damage(path, "garbage")
    stamps = {p: p.read_bytes() for p in files(tmp_path / "on")}
    assert script("two_events.data", "--no-symbol-cache", env=env) == off
    assert {p: p.read_bytes() for p in files(tmp_path / "on")} == stamps
    cache = CacheDir(None)
    assert not cache.enabled and cache.path_for("symtab", "ab" * 20) is None
    assert not cache.write(str(tmp_path / "x"), b"1") and not (tmp_path / "x").exists()


def test_path_string_and_cache_dir_are_the_same(tmp_path, monkeypatch):
    """symbolize alone: a path string, a CacheDir or DEFAULT ($PERFDATA_CACHE_DIR)."""
    monkeypatch.setenv("PERFDATA_CACHE_DIR", str(tmp_path / "env"))
    prog = str(SAMPLES / "bin" / "threads")
    for where, root in ((str(tmp_path / "s"), tmp_path / "s"),
                        (CacheDir(tmp_path / "c"), tmp_path / "c"),
                        (DEFAULT, tmp_path / "env")):
        # (no build-id cache: perf's ~/.debug may hold a copy)
        sym = Symbolizer(DebugInfoLocator(buildid_dir=str(tmp_path / "none")),
                         SymbolizerOptions(inline=False, cache_dir=where))
        assert sym.cache.root == str(root)
        assert sym.symbol_table(prog) is not None
        bid = sym.binary_for(prog).binary.build_id
        facts = list((root / "elf").rglob("*-facts.marshal"))      # (the binary's)
        assert len(facts) == 1
        assert files(root) == sorted(facts + [root / "symtab" / bid[:2] / (bid[2:] + "-sc.table")])
    monkeypatch.setenv("PERFDATA_CACHE_DIR", "")
    assert not CacheDir.of(DEFAULT).enabled and \
        not Symbolizer(options=SymbolizerOptions(cache_dir=None)).cache.enabled


# ------------------------------------------------------------ symbol table files
def _threads_table():
    from symbolize.elffile import Binary
    from symbolize.symbols.symtab import build_symbol_table
    table = build_symbol_table(Binary(str(SAMPLES / "bin" / "threads")))
    assert len(table) > 10 and len(table.sources) > 1   # (symtab and plt)
    return table


def _table_file(count, names_size, source_names, body, crc=None):
    """A symbol table file of the current tag with the header given (the
    right CRC of body unless told), its line padded as save_table pads it."""
    import zlib
    from symbolize.symbols.symtab import cache_format
    crc = zlib.crc32(body) if crc is None else crc
    line = "%s %d %d %d %s" % (cache_format(), count, names_size, crc, ",".join(source_names))
    return (line + " " * (-(len(line) + 1) % 8) + "\n").encode() + body


def test_symbol_table_file_round_trip(tmp_path):
    """What save_table writes, load_table reads back: every symbol, every
    lookup, the sources; byte for byte the same when saved again."""
    from symbolize.symbols.symtab import load_table, save_table
    table = _threads_table()
    path = str(tmp_path / "t.table")
    assert save_table(table, path)
    again = load_table(path)
    assert list(again) == list(table) and again.sources == table.sources
    syms = list(table)
    names = {s.name for s in syms}
    for s in syms:
        for addr in (s.start, s.end - 1, s.end):
            assert again.lookup(addr) == table.lookup(addr)
        # (by name: the first by address; a piece of a name is none)
        assert again.get_symbol_by_name(s.name) == next(t for t in syms if t.name == s.name)
        for piece in (s.name[1:], s.name[:-1]):
            if piece not in names:
                assert again.get_symbol_by_name(piece) is None, piece
    assert again.to_bytes() == open(path, "rb").read()


def test_symbol_table_file_names_not_ascii(tmp_path):
    """Names of more than one byte a character (the file's name ends count
    bytes, a table built in memory counts characters): every symbol, lookup
    and search by name the same after the round trip, the file the same
    bytes when the loaded table is saved again."""
    from symbolize.symbols.symtab import Symbol, SymbolTable, load_table, save_table
    names = ["caf\u00e9", "f", "\u00df::na\u00efve", "\u65e5\u672c", "g\u00e9", "h"]
    table = SymbolTable([Symbol(n, 0x1000 + 0x10 * i, 8, "symtab") for i, n in enumerate(names)])
    path = str(tmp_path / "t.table")
    assert save_table(table, path)
    again = load_table(path)
    assert list(again) == list(table)
    for i, name in enumerate(names):
        assert again.lookup(0x1000 + 0x10 * i + 7) == table.lookup(0x1000 + 0x10 * i + 7)
        assert again.get_symbol_by_name(name) == table.get_symbol_by_name(name) is not None
    assert again.get_symbol_by_name("\u00e9") is None      # (a piece of two names)
    assert again.to_bytes() == open(path, "rb").read()


def test_symbol_table_file_loads_mapped(tmp_path):
    """A loaded table is the file mapped: its columns views of it and its
    names decoded as lookups ask for them, so loading a table of 30,000
    symbols (cc1's size) allocates a small part of the file (a copy of
    each column and of the names allocated more than the file), and a
    lookup gives the symbol the table built in memory gives."""
    import tracemalloc
    from symbolize.symbols.symtab import Symbol, SymbolTable, load_table, save_table
    table = SymbolTable([Symbol("_ZN5outer%05d4stepEv" % i, 0x400000 + 0x40 * i, 0x30, "symtab")
                         for i in range(30000)])
    path = tmp_path / "t.table"
    assert save_table(table, str(path))
    size = path.stat().st_size
    tracemalloc.start()
    try:
        again = load_table(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert again is not None and len(again) == 30000
    assert peak < size // 10, (peak, size)
    for i in (0, 1, 12345, 29999):
        addr = 0x400000 + 0x40 * i + 0x2f
        assert again.lookup(addr) == table.lookup(addr) is not None
    assert again.lookup(0x400000 + 0x40 * 29999 + 0x30) is None
    # (a line one space longer than its writer pads it: the columns would
    # not be aligned)
    data = path.read_bytes()
    eol = data.index(b"\n")
    path.write_bytes(data[:eol] + b" " + data[eol:])
    assert load_table(str(path)) is None


def test_symbol_table_file_damaged_or_foreign_is_absent(tmp_path):
    """A table file cut anywhere, with any one byte changed, of the JSON
    format before it, or of another tag is no table (load_table: None)."""
    import json
    from symbolize.symbols.symtab import Symbol, SymbolTable, cache_format, load_table
    good = _threads_table().to_bytes()
    path = tmp_path / "t.table"

    def load(data):
        path.write_bytes(data)
        return load_table(str(path))

    assert load(good) is not None
    eol = good.index(b"\n")
    cuts = list(range(0, eol + 2)) + list(range(eol + 2, len(good), 37)) + [len(good) - 1]
    for cut in cuts:
        assert load(good[:cut]) is None, cut
    assert load(good + b"\0") is None
    for at in list(range(0, eol + 1)) + list(range(eol + 1, len(good), 11)):
        for flip in (0x01, 0x80):
            damaged = bytearray(good)
            damaged[at] ^= flip
            table = load(bytes(damaged))
            # (a flip in a header digit may name another valid number only
            # if the CRC still agrees, which it does not)
            assert table is None, (at, flip)
    old = {"format": cache_format(), "symbols": [[s.name, s.start, s.size, s.source]
                                                 for s in SymbolTable([Symbol("f", 16, 4, "symtab")])]}
    assert load(json.dumps(old).encode()) is None
    tag = cache_format()
    # (another last digit than the tag's own, whatever the code's digest is)
    other = good.replace(tag.encode(), (tag[:-1] + ("1" if tag.endswith("0") else "0")).encode(), 1)
    assert other != good and load(other) is None


def test_symbol_table_file_hostile_content(tmp_path):
    """Files with a right CRC whose header lies: counts that do not add up to
    the file's size (however large they claim), negative counts, a source
    index past the sources, a source not perfdata's, names not as long as
    their ends say.  None, and loading never takes much more memory than the
    file's size.  Names that are not UTF-8 load (a table's names are decoded
    as lookups ask for them, not at the load), each byte that is not UTF-8
    read as U+FFFD."""
    import struct
    import tracemalloc
    from symbolize.symbols.symtab import load_table

    def cols(*values):
        return struct.pack("=%dQ" % len(values), *values)

    # one symbol "f" at 16, size 4, of source 0, STB_GLOBAL
    one = cols(16) + cols(4) + cols(1) + b"\0" + b"\1" + b"f"
    cases = [
        _table_file(1, 1, ["symtab"], one),                        # (the good one)
        _table_file(10 ** 12, 1, ["symtab"], one),
        _table_file(1, 10 ** 15, ["symtab"], one),
        _table_file(2 ** 61, -(26 * 2 ** 61) + len(one), ["symtab"], one),
        _table_file(-1, len(one) + 26, ["symtab"], one),
        _table_file(1, 1, ["symtab"], one[:24] + b"\1" + one[25:]),  # source index 1 of 1
        _table_file(1, 1, [], one),
        _table_file(1, 1, ["evil"], one),
        _table_file(1, 1, ["symtab", "dynsym"], one),               # (not sorted)
        _table_file(1, 1, ["symtab"], one[:26] + b"\xff"),          # not UTF-8 (loads)
        _table_file(1, 1, ["symtab"], cols(16) + cols(4) + cols(2) + b"\0\1" + b"f"),
        _table_file(1, 1, ["symtab"], one, crc=0),
        b"\n" * 300, b"x" * 300,
    ]
    path = tmp_path / "t.table"
    for i, data in enumerate(cases):
        path.write_bytes(data)
        tracemalloc.start()
        try:
            table = load_table(str(path))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 * len(data) + 65536, (i, peak)
        if i == 0:
            assert table is not None and [tuple(s) for s in table] == [("f", 16, 4, "symtab")]
        elif i == 9:
            assert table is not None and [tuple(s) for s in table] == [("\ufffd", 16, 4, "symtab")]
        else:
            assert table is None, i


def test_tables_no_file_can_hold_are_not_saved(tmp_path):
    """A table made by hand may hold what a cache file cannot (an address
    beyond 64 bits, a source not perfdata's): save_table declines, leaving
    no file, and the table still answers lookups."""
    from symbolize.symbols.symtab import Symbol, SymbolTable, save_table
    for syms in ([Symbol("big", 2 ** 64, 4, "symtab")], [Symbol("mine", 16, 4, "my-source")],
                 [Symbol("bad\udcff", 16, 4, "symtab")]):
        table = SymbolTable(syms)
        assert table.lookup(syms[0].start + 1) == syms[0]
        assert not save_table(table, str(tmp_path / "t.table"))
        assert not (tmp_path / "t.table").exists()


def test_written_through_a_mapping_or_not_at_all(tmp_path):
    """write_mapped: what fill lays out, cut to the length it gives, is the
    file; fill giving None, a length past the room, or raising a buffer it
    keeps leaves nothing behind (no temporary either)."""
    cache = CacheDir(str(tmp_path / "c"))
    path = cache.file("kallsyms-test.bin")

    def fill(out):
        out[:5] = b"hello"
        return 5
    assert cache.write_mapped(path, 4096, fill)
    assert Path(path).read_bytes() == b"hello"
    for bad in (lambda out: None, lambda out: 4097, lambda out: 0):
        other = cache.file("kallsyms-other.bin")
        assert not cache.write_mapped(other, 4096, bad)
        assert not os.path.exists(other)
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["kallsyms-test.bin"]
    assert not CacheDir(None).write_mapped(path, 4096, fill)


def test_kallsyms_cached_where_the_disk_takes_no_file(tmp_path, monkeypatch):
    """A disk that refuses the room (posix_fallocate: ENOSPC) leaves the
    mapped write undone: the table is parsed in memory all the same."""
    import errno

    from symbolize.symbols import kallsyms

    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, "No space left on device")
    text = tmp_path / "kallsyms"
    text.write_bytes(b"ffffffff81000000 T _stext\nffffffff81000100 t b\n")
    monkeypatch.setattr(os, "posix_fallocate", full)
    table = kallsyms.KernelSymbols.from_file(str(text), CacheDir(str(tmp_path / "c")))
    assert [s.name for s in table] == ["_stext", "b"]
    assert not [p for p in (tmp_path / "c").rglob("*") if p.name.startswith(".tmp-")]
