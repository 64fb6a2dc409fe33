"""The ELF binding a symbol table keeps per symbol (perf's sym->binding,
which `perf script -s` hands scripts as callchain[i]['sym']['binding']):
read from the ELF symbol, STB_GLOBAL for synthesized PLT stubs, from the
type letter for kallsyms (lower case local, W weak), and kept by the cache
files both tables are saved in.  Ground truth: readelf's symbol table.
And the kernel map's bounds perf takes from a kallsyms table."""
from __future__ import annotations

import os

import pytest

from symbolize import Binary, build_symbol_table
from symbolize.symbols.kallsyms import KernelSymbols
from symbolize.symbols.fixups import STB_GLOBAL, STB_LOCAL, STB_WEAK
from symbolize.symbols.symtab import SymbolTable
from test_symbolize_util import readelf_symbols

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples", "bin")
BINDINGS = {"LOCAL": STB_LOCAL, "GLOBAL": STB_GLOBAL, "WEAK": STB_WEAK}


@pytest.mark.parametrize("name", ["plt_loop", "threads", "cpp_inline", "exit_atexit"])
def test_binding_as_readelf(name):
    """Every function symbol alone at its address (aliases: perf keeps one,
    tests/symbolize/test_symbolize_symtab.py) has readelf's binding, through the
    table and through its cache file's bytes; a PLT stub STB_GLOBAL."""
    path = os.path.join(BIN, name)
    table = build_symbol_table(Binary(path))
    funcs = [s for s in readelf_symbols(path) if s[2] in ("FUNC", "IFUNC") and s[0]]
    at: dict[int, list] = {}
    for s in funcs:
        at.setdefault(s[0], []).append(s)
    reloaded = SymbolTable.from_bytes(table.to_bytes() or b"")
    assert reloaded is not None
    checked = 0
    for addr, group in at.items():
        if len(group) != 1 or table.lookup(addr) is None or table.lookup(addr).start != addr:
            continue
        want = BINDINGS[group[0][3]]
        assert table.binding(addr) == reloaded.binding(addr) == want, group[0]
        checked += 1
    assert checked > 5
    assert {table.binding(addr) for addr in at} >= {STB_LOCAL, STB_GLOBAL}
    plt = [s for s in table if s.source == "plt"]
    assert plt and all(table.binding(s.start) == STB_GLOBAL for s in plt)


KALLSYMS = """\
ffffffff81000000 T _stext
ffffffff81000100 t local_fn
ffffffff81000200 W weak_fn
ffffffff81000300 T global_fn
ffffffff81000400 D some_data
ffffffff81000500 b local_bss
ffffffffc0000000 t mod_fn\t[mymod]
ffffffffc0000100 T mod_export\t[mymod]
"""
KALLSYMS_BINDINGS = {"_stext": STB_GLOBAL, "local_fn": STB_LOCAL, "weak_fn": STB_WEAK,
                     "global_fn": STB_GLOBAL, "some_data": STB_GLOBAL,
                     "local_bss": STB_LOCAL, "mod_fn": STB_LOCAL, "mod_export": STB_GLOBAL}


def test_kallsyms_bindings_and_cache(tmp_path):
    """A kallsyms table's bindings by type letter, parsed and as the cache
    file the next run maps gives them back."""
    path = tmp_path / "kallsyms"
    path.write_text(KALLSYMS)
    cache = tmp_path / "cache"
    first = KernelSymbols.from_file(str(path), cache=str(cache))
    assert os.listdir(cache), "the table was not cached"
    again = KernelSymbols.from_file(str(path), cache=str(cache))
    for table in (first, again):
        got = {s.name: table.binding(s.start) for s in table}
        assert got == KALLSYMS_BINDINGS
    # (no symbol starts there)
    assert first.binding(0xffffffff81000001) == STB_GLOBAL


def test_kallsyms_kernel_bounds(tmp_path):
    """perf's kernel map once kallsyms is read (map__fixup_start/end): the
    kernel's first symbol to the end of its last, which ends a page past
    its page as the last before the modules (perf's test: the probe of
    tests/scripting/test_scripting_perf.py, dso_map_end of kernel samples)."""
    table = KernelSymbols.parse(KALLSYMS)
    assert table.kernel_bounds() == (0xffffffff81000000, 0xffffffff81002000)
    path = tmp_path / "kallsyms"
    path.write_text(KALLSYMS)
    for _ in range(2):      # (parsed, then mapped from the cache)
        cached = KernelSymbols.from_file(str(path), cache=str(tmp_path / "cache"))
        assert cached.kernel_bounds() == (0xffffffff81000000, 0xffffffff81002000)
    assert KernelSymbols.parse("ffffffffc0000000 t mod_fn\t[mymod]\n").kernel_bounds() is None
