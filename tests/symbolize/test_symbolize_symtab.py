"""Symbol tables against readelf/nm sizes and perf 6.1's own choice of names.

`perf probe -x BIN --funcs --filter='*'` prints the names perf keeps after its
alias resolution (choose_best_symbol) and size fix-ups: the oracle for which
alias wins. readelf gives sizes; nm gives addresses.
"""
import lzma
import time

import pytest

from symbolize import Binary, build_symbol_table, load_minidebuginfo, read_elf_symbols
from test_symbolize_util import (compile_c, libc_and_debug, need, nm_defined, readelf_build_id,
                                 readelf_symbols, run)

ALIASES = r"""
#include <stdio.h>
int impl_fn(int x) { return x * 3 + 1; }
int weak_alias(int) __attribute__((weak, alias("impl_fn")));
int __under_alias(int) __attribute__((alias("impl_fn")));
int longer_global_alias(int) __attribute__((alias("impl_fn")));
static int local_alias(int) __attribute__((alias("impl_fn"), used));

__attribute__((noinline, aligned(64))) int padded_a(int x) { return x + 7; }
__attribute__((noinline, aligned(64))) int padded_b(int x) { return x * 5; }
static __attribute__((noinline)) int hidden_local(int x) { return x ^ 0x55; }

asm(".text\n.globl asm_label\nasm_label:\n nop\n nop\n nop\n ret\n"
    ".globl asm_after\n.type asm_after,@function\nasm_after:\n ret\n.size asm_after,1\n");
void asm_label(void);

int main(int argc, char **argv) {
    asm_label();
    printf("%d\n", impl_fn(argc) + padded_a(argc) + padded_b(argc) + hidden_local(argc));
    return 0;
}
"""


@pytest.fixture(scope="module")
def prog(tmp_path_factory):
    d = tmp_path_factory.mktemp("symtab")
    return compile_c(d, "aliases", ALIASES, "-O2", "-g", "-rdynamic")


def test_alias_group_gets_one_name(prog):
    """All aliases share one address; the table keeps one of them, by perf's
    rules: non-weak, then global, then fewer leading underscores, then the
    longer name (tests/symbolize/test_symbolize_vs_perf.py checks this against perf)."""
    table = build_symbol_table(Binary(prog))
    syms = readelf_symbols(prog)
    addr = {n: v for v, sz, t, b, vis, ndx, n in syms if t == "FUNC"}
    group = {"impl_fn", "weak_alias", "__under_alias", "longer_global_alias", "local_alias"}
    assert {addr[n] for n in group} == {addr["impl_fn"]}
    chosen = table.lookup(addr["impl_fn"])
    assert chosen.start == addr["impl_fn"] and chosen.source == "symtab"
    assert chosen.name == "longer_global_alias"
    assert sum(1 for s in table if s.start == addr["impl_fn"]) == 1


def test_sizes_and_gaps_against_readelf(prog):
    table = build_symbol_table(Binary(prog))
    starts = sorted({s.start for s in table})
    for v, size, typ, bind, vis, ndx, name in readelf_symbols(prog):
        if typ != "FUNC" or size == 0 or ndx == "UND":
            continue
        s = table.lookup(v)
        assert s is not None and s.start == v and s.size == size, name
        assert table.lookup(v + size - 1).start == v
        after = table.lookup(v + size)
        # The padding after a function is not given to it.
        assert after is None or after.start == v + size, (name, after)
    # padded_b is 64-byte aligned: the bytes before it belong to nobody
    # (unless a symbol starts there).
    pa = table.get_symbol_by_name("padded_a")
    pb = table.get_symbol_by_name("padded_b")
    if pa.end < pb.start and pa.end not in starts:
        assert table.lookup(pa.end) is None


def test_size_zero_label_runs_to_next_symbol(prog):
    syms = readelf_symbols(prog)
    lab = [s for s in syms if s[6] == "asm_label"][0]
    nxt = [s for s in syms if s[6] == "asm_after"][0]
    assert lab[1] == 0 and lab[2] == "NOTYPE"          # as the assembler made it
    table = build_symbol_table(Binary(prog))
    s = table.lookup(lab[0] + 2)
    assert s.name == "asm_label" and s.start == lab[0] and s.end == nxt[0]
    assert table.lookup(nxt[0]).name == "asm_after"


def test_dynsym_only_after_strip(prog, tmp_path):
    need("strip")
    stripped = str(tmp_path / "stripped")
    run("strip", "--strip-all", "-o", stripped, prog)
    table = build_symbol_table(Binary(stripped))
    assert "dynsym" in table.sources and "symtab" not in table.sources
    dyn = [(v, n) for v, sz, t, b, vis, ndx, n in readelf_symbols(stripped, dynamic=True)
           if t == "FUNC" and ndx != "UND"]
    assert dyn
    for a, n in dyn:
        s = table.lookup(a)
        assert s is not None and s.start == a, n
    # Static functions are not in .dynsym: their addresses now fall in a gap
    # or in a neighbour extended over them only if that one had size 0.
    hidden = [v for v, sz, t, b, vis, ndx, n in readelf_symbols(prog) if n == "hidden_local"]
    if hidden:
        s = table.lookup(hidden[0])
        assert s is None or s.name != "hidden_local"


def test_minidebuginfo_adds_local_symbols(prog, tmp_path):
    """Build .gnu_debugdata the way Fedora's find-debuginfo does: a symtab of
    the functions .dynsym lacks, xz-compressed, added to a stripped binary."""
    need("objcopy", "strip")
    dynsyms = {n.split("@")[0] for a, t, n in nm_defined(prog, dynamic=True)}
    funcs = [n for a, t, n in nm_defined(prog) if t in "Tt" and n not in dynsyms]
    assert "hidden_local" in funcs
    keep = tmp_path / "keep"
    keep.write_text("\n".join(funcs) + "\n")
    debug = str(tmp_path / "debug")
    mini = str(tmp_path / "mini")
    run("objcopy", "--only-keep-debug", prog, debug)
    run("objcopy", "-S", "--remove-section", ".gdb_index", "--remove-section", ".comment",
        f"--keep-symbols={keep}", debug, mini)
    xz = tmp_path / "mini.xz"
    xz.write_bytes(lzma.compress(open(mini, "rb").read(), format=lzma.FORMAT_XZ))
    stripped = str(tmp_path / "stripped")
    run("strip", "--strip-all", "-o", stripped, prog)
    run("objcopy", f"--add-section=.gnu_debugdata={xz}", stripped)
    b = Binary(stripped)
    inner = load_minidebuginfo(b)
    assert inner is not None and inner.ok
    table = build_symbol_table(b, minidebuginfo=inner)
    assert {"dynsym", "minidebuginfo"} <= set(table.sources)
    truth = {n: a for a, t, n in nm_defined(prog) if t in "Tt"}
    s = table.lookup(truth["hidden_local"])
    assert s.name == "hidden_local" and s.source == "minidebuginfo"
    s = table.lookup(truth["main"])
    assert s.name == "main"

    # A corrupt .gnu_debugdata is a warning, not an exception.
    bad = tmp_path / "bad.xz"
    bad.write_bytes(xz.read_bytes()[:40])
    bad_bin = str(tmp_path / "badmini")
    run("strip", "--strip-all", "-o", bad_bin, prog)
    run("objcopy", f"--add-section=.gnu_debugdata={bad}", bad_bin)
    b = Binary(bad_bin)
    assert load_minidebuginfo(b) is None and b.warnings


def test_libc_with_debug_file_names_are_perfs():
    libc, dbg = libc_and_debug()
    t0 = time.perf_counter()
    table = build_symbol_table(Binary(libc), Binary(dbg))
    build = time.perf_counter() - t0
    assert "debuginfo" in table.sources and len(table) > 3000
    # Every named function of the debug file's symtab resolves to its address.
    nm = [(a, n) for a, t, n in nm_defined(dbg) if t in "TtWwi"]
    assert all(table.lookup(a).start == a for a, n in nm)
    print(f"\nlibc table (.symtab of libc6-dbg + PLT): {len(table)} symbols in {build * 1000:.0f} ms")


def test_lookups_cover_their_address():
    libc, dbg = libc_and_debug()
    table = build_symbol_table(Binary(libc), Binary(dbg))
    import random
    rnd = random.Random(3)
    lo = min(s.start for s in table)
    hi = max(s.end for s in table)
    addrs = [rnd.randrange(lo, hi) for _ in range(200000)]
    t0 = time.perf_counter()
    found = [table.lookup(a) for a in addrs]
    rate = len(addrs) / (time.perf_counter() - t0)
    print(f"\nSymbolTable.lookup: {rate:,.0f} lookups/s")
    # (speed is for benchmarks/; here: every answer covers its address)
    assert all(s is None or s.start <= a < s.end for a, s in zip(addrs, found))
    assert sum(s is not None for s in found) > len(addrs) // 2


def test_malformed_symbol_tables_do_not_raise(prog, tmp_path):
    data = bytearray(open(prog, "rb").read())
    b = Binary(prog)
    sym = b.get_section(".symtab")
    import random
    rnd = random.Random(11)
    for i in range(20):
        buf = bytearray(data)
        # Scribble over the symbol entries and the string table index.
        for _ in range(50):
            pos = sym.offset + rnd.randrange(sym.size)
            buf[pos] = rnd.randrange(256)
        p = tmp_path / f"scribbled{i}"
        p.write_bytes(bytes(buf))
        t = build_symbol_table(Binary(str(p)))
        t.lookup(0x1000)
    # sh_link of .symtab pointing nowhere
    import struct
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    buf = bytearray(data)
    struct.pack_into("<I", buf, shoff + sym.index * 64 + 40, 0xFFFF)
    p = tmp_path / "badlink"
    p.write_bytes(bytes(buf))
    assert read_elf_symbols(Binary(str(p)), ".symtab", "symtab") == []


def _real_binaries():
    """ELF files every machine here has (libc and its libc6-dbg file, with
    a .symtab of 10,000 entries; this Python; gcc's cc1 where gcc is
    installed: 27,000 .dynsym entries), by the path they resolve to."""
    import os
    import shutil
    import subprocess
    import sys
    paths = ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", sys.executable]
    bid = readelf_build_id(paths[0]) if os.path.exists(paths[0]) else None
    if bid:
        paths.append(f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug")
    gcc = shutil.which("gcc")
    if gcc:
        cc1 = subprocess.run([gcc, "-print-prog-name=cc1"], capture_output=True,
                             text=True).stdout.strip()
        paths.append(cc1)
    return sorted({os.path.realpath(p) for p in paths if os.path.isfile(p)})


@pytest.mark.parametrize("section", [".symtab", ".dynsym"])
@pytest.mark.parametrize("objects", [False, True], ids=["functions", "with-objects"])
def test_fixup_by_columns_equals_the_rules_one_symbol_at_a_time(prog, section, objects):
    """The table fixed up by columns is the one perf's rules give stated
    symbol by symbol (tests/symtab_reference.py), on real binaries and the
    alias program: every kept entry, its size, name and source."""
    import symtab_reference as ref
    from symbolize.symbols.fixups import fixup_symbols
    from symbolize.symbols.symtab import SymbolTable
    checked = 0
    for path in _real_binaries() + [str(prog)]:
        binary = Binary(path)
        raw = read_elf_symbols(binary, section, "x", objects)
        want = ref.fixup_entries([[r.start, r.start + r.size, r.binding, r.name, r.source]
                                  for r in raw])
        assert fixup_symbols(raw) == want, path
        table = SymbolTable.from_raw(raw)
        assert [(s.start, s.size, s.name) for s in table] == \
            [(e[0], e[1] - e[0], e[3]) for e in want], path
        checked += len(want)
    assert checked > 1000 or pytest.skip("no real binary with a %s here" % section)
