"""--vmlinux: kernel symbols from an ELF image, checked against nm, and refused
when its build-id is not the profiled kernel's."""
import shutil
import subprocess
from pathlib import Path

import pytest

from symbolize.elffile import Binary
from symbolize.symbols.kallsyms import KernelSymbols

# Any ELF with a .symtab stands in for a vmlinux (none is installed here).
IMAGE = Path(__file__).resolve().parents[2] / "samples" / "bin" / "cpp_inline"


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm")
def test_vmlinux_symbols_equal_nm():
    table = KernelSymbols.from_vmlinux(str(IMAGE))
    out = subprocess.run(["nm", "--defined-only", str(IMAGE)], capture_output=True,
                         text=True, check=True).stdout
    funcs = [(int(a, 16), name) for a, kind, name in
             (line.split() for line in out.splitlines() if len(line.split()) == 3)
             if kind in "tT"]
    assert funcs
    for address, name in funcs:
        sym = table.lookup(address)
        assert sym is not None and sym.start == address, name


def test_vmlinux_of_another_build_id_is_refused():
    bid = Binary(str(IMAGE)).build_id
    other = ("0" if bid[0] != "0" else "1") + bid[1:]
    table = KernelSymbols.from_vmlinux(str(IMAGE), other)
    assert len(table) == 0 and "not used" in table.warnings[0]
    assert len(KernelSymbols.from_vmlinux(str(IMAGE), bid)) > 0
