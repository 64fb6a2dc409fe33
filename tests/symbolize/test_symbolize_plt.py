"""PLT stub names against objdump -d's `<name@plt>` labels."""
import pytest

from symbolize import Binary, build_symbol_table, synthesize_plt_symbols
from test_symbolize_util import compile_c, libc_and_debug, objdump_plt_labels

SRC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    char b[64];
    puts("hi"); printf("%d\n", argc); strcpy(b, argv[0]);
    return atoi(b) + (int)strlen(argv[0]);
}
"""

VARIANTS = {
    "plain": ["-O1"],
    "cf_protection": ["-O1", "-fcf-protection=full"],
    "ibt_plt_sec": ["-O1", "-fcf-protection=full", "-Wl,-z,ibtplt"],
    "ibt_now": ["-O1", "-fcf-protection=full", "-Wl,-z,ibtplt", "-Wl,-z,now"],
    "no_plt": ["-O1", "-fno-plt"],
    "now": ["-O1", "-Wl,-z,now"],
    "no_pie": ["-O1", "-no-pie"],
    "shared": ["-O1", "-shared", "-fPIC"],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("plt")
    return {k: compile_c(d, k, SRC, *flags) for k, flags in VARIANTS.items()}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_plt_names_match_objdump(built, variant):
    path = built[variant]
    truth = objdump_plt_labels(path)
    b = Binary(path)
    ours = {p.start: p.name for p in synthesize_plt_symbols(b)}
    assert ours == truth
    if variant == "ibt_plt_sec":
        assert b.get_section(".plt.sec") is not None
        assert any(b.get_section(".plt.sec").addr <= a for a in ours)
    # In the table, every stub address and its last byte resolve to the stub.
    table = build_symbol_table(b)
    for p in synthesize_plt_symbols(b):
        for a in (p.start, p.start + p.size - 1):
            s = table.lookup(a)
            assert s.name == p.name and s.source == "plt"


def test_plt_header_not_given_to_init(built):
    """perf 6.1 names .plt stubs `_init+0x..` (size-0 _init extended over
    .plt); here the stubs keep their own names and _init stops at .plt."""
    b = Binary(built["plain"])
    table = build_symbol_table(b)
    plt = b.get_section(".plt")
    init = table.get_symbol_by_name("_init")
    if init is not None:
        assert init.end <= plt.addr + 16 or init.start >= plt.addr + plt.size


def test_libc_plt_with_irelative_slots():
    """libc's .plt has IRELATIVE slots (objdump: `*ABS*+0x9f550@plt`): they
    are named after the IFUNC symbol at the relocation's addend."""
    libc, dbg = libc_and_debug()
    truth = objdump_plt_labels(libc)
    b = Binary(libc)
    table = build_symbol_table(b, Binary(dbg))
    plt = {s.start: s.name for s in table if s.source == "plt"}
    assert set(plt) == set(truth)
    for addr, label in truth.items():
        if label.startswith("*ABS*+"):
            target = int(label[len("*ABS*+"):-len("@plt")], 16)
            s = table.lookup(target)
            # named without the version of the .symtab name (memcpy@@GLIBC_2.14)
            assert s is not None and s.start == target and \
                plt[addr] == s.name.split("@")[0] + "@plt"
        else:
            assert plt[addr] == label


def test_plt_on_garbage_sections_does_not_raise(built, tmp_path):
    data = bytearray(open(built["plain"], "rb").read())
    b = Binary(built["plain"])
    for name in (".rela.plt", ".plt", ".plt.got", ".dynsym"):
        sec = b.get_section(name)
        if sec is None:
            continue
        buf = bytearray(data)
        for i in range(sec.offset, sec.offset + sec.size):
            buf[i] = (i * 37) & 0xFF
        p = tmp_path / ("bad" + name)
        p.write_bytes(bytes(buf))
        synthesize_plt_symbols(Binary(str(p)))


I386_SRC = r"""
extern int foo(int); extern int bar(int); extern int (*fptr)(int);
int entry(int x) { return foo(x) + bar(x) + fptr(x); }
static int helper(int x) { return x * 3; }
int entry2(int x) { return helper(x) + foo(x); }
"""


@pytest.mark.parametrize("flags", [[], ["-fcf-protection=full", "-Wl,-z,ibtplt"], ["-Wl,-z,now"]])
def test_i386_plt_and_elf32_symbols(tmp_path, flags):
    """ELF32 (i386 PIC, `jmp *disp(%ebx)` stubs): built freestanding, as no
    32-bit libc is needed for a -nostdlib shared object."""
    from test_symbolize_util import nm_defined
    path = compile_c(tmp_path, "s32", I386_SRC, "-m32", "-O1", "-fPIC", "-shared", "-nostdlib", *flags)
    b = Binary(path)
    assert not b.is_64 and b.machine == "EM_386"
    truth = objdump_plt_labels(path)
    assert truth
    assert {p.start: p.name for p in synthesize_plt_symbols(b)} == truth
    table = build_symbol_table(b)
    for addr, typ, name in nm_defined(path):
        if typ in "Tt":
            s = table.lookup(addr)
            assert s is not None and s.start == addr, name
