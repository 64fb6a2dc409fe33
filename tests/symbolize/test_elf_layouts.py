"""symbolize/elflayouts.py is pyelftools' description, not a second one: each
struct it lays out is the one pyelftools' ELFStructs builds (for every
class, byte order, machine, file type and OS ABI it is used for), derived as
Binary.struct_layout derives it, and each e_type and e_machine name is
pyelftools' own; ElfHeader reads the same header as pyelftools' Elf_Ehdr,
real files and damaged ones alike."""
from __future__ import annotations

import os
import random
import struct
import sys

import pytest

from symbolize import Binary, elflayouts
from symbolize.elfheader import ElfHeader

elftools_structs = pytest.importorskip("elftools.elf.structs")
from elftools.elf import enums  # noqa: E402

STRUCTS = ("Elf_Shdr", "Elf_Phdr", "Elf_Sym")
OS_ABIS = ("ELFOSABI_SYSV", "ELFOSABI_LINUX", "ELFOSABI_FREEBSD", "ELFOSABI_ARM")


def derived(construct_struct, little: bool, skip: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    """A pyelftools struct as Binary.struct_layout derives its format."""
    fmt, names = "<" if little else ">", []
    for sub in construct_struct.subcons:
        if sub.name in skip:
            continue
        inner = sub
        while not hasattr(inner, "packer") and hasattr(inner, "subcon"):
            inner = inner.subcon
        if hasattr(inner, "packer"):
            fmt += inner.packer.format[-1:]
        else:
            fmt += {1: "B", 2: "H", 4: "I", 8: "Q"}[sub.sizeof()]
        names.append(sub.name)
    return fmt, names


def pyelftools_structs(little: bool, elfclass: int, *advanced: str):
    s = elftools_structs.ELFStructs(little_endian=little, elfclass=elfclass)
    s.create_basic_structs()
    if advanced:
        s.create_advanced_structs(*advanced)
    return s


@pytest.mark.parametrize("elfclass", [32, 64])
@pytest.mark.parametrize("little", [True, False], ids=["little", "big"])
def test_layouts_are_pyelftools_structs(elfclass, little):
    basic = pyelftools_structs(little, elfclass)
    fmt, names = elflayouts.layout(elfclass, little, "Elf_Ehdr")
    assert (fmt, names) == derived(basic.Elf_Ehdr, little, ("e_ident",))
    assert 16 + struct.calcsize(fmt) == basic.Elf_Ehdr.sizeof()
    for machine in elflayouts.E_MACHINE.values():
        for e_type in elflayouts.E_TYPE.values():
            for osabi in OS_ABIS:
                s = pyelftools_structs(little, elfclass, e_type, machine, osabi)
                for name in STRUCTS:
                    assert elflayouts.layout(elfclass, little, name) == \
                        derived(getattr(s, name), little), (machine, e_type, osabi, name)
    assert elflayouts.layout(elfclass, little, "Elf_Dyn") is None


def test_names_are_pyelftools_enums():
    for value, name in elflayouts.E_TYPE.items():
        assert enums.ENUM_E_TYPE[name] == value
    for value, name in elflayouts.E_MACHINE.items():
        assert enums.ENUM_E_MACHINE[name] == value
    assert elflayouts.E_VERSION == {v: k for k, v in enums.ENUM_E_VERSION.items()
                                    if k != "_default_"}


FIELDS = ("e_type", "e_machine", "e_version", "e_entry", "e_phoff", "e_shoff", "e_flags",
          "e_ehsize", "e_phentsize", "e_phnum", "e_shentsize", "e_shnum", "e_shstrndx")


def _pyelftools_header(data: bytes):
    little = data[5] == 1
    basic = pyelftools_structs(little, 32 if data[4] == 1 else 64)
    h = basic.Elf_Ehdr.parse(data[:basic.Elf_Ehdr.sizeof()])
    return {k: h[k] for k in FIELDS}


def _ours(data: bytes):
    h = ElfHeader(data).header
    return {k: h[k] for k in FIELDS}


def _real_files() -> list[str]:
    paths = ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2", sys.executable,
             "/bin/sh", "/usr/bin/true"]
    return sorted({os.path.realpath(p) for p in paths if os.path.isfile(p)})


def test_real_files_read_as_pyelftools_reads_them():
    from elftools.elf.elffile import ELFFile
    files = _real_files()
    if not files:
        pytest.skip("no ELF file here")
    for path in files:
        with open(path, "rb") as f:
            data = f.read(4096)
            elf = ELFFile(f)
            binary = Binary(path)
            assert _ours(data) == _pyelftools_header(data), path
            assert binary.machine == elf["e_machine"]
            for name in STRUCTS:
                assert binary.struct_layout(name) == derived(getattr(elf.structs, name),
                                                             elf.little_endian), path


def test_damaged_headers_read_as_pyelftools_reads_them():
    """Headers with random bytes after e_ident (any type and machine: the
    ones elflayouts.py does not know go to pyelftools), both classes and
    byte orders."""
    rng = random.Random(40)
    for k in range(400):
        cls, data_enc = rng.choice((1, 2)), rng.choice((1, 2))
        body = bytearray(rng.randbytes(48))
        if k % 2:       # a known type and machine
            order = "<" if data_enc == 1 else ">"
            struct.pack_into(order + "HH", body, 0, rng.choice(list(elflayouts.E_TYPE)),
                             rng.choice(list(elflayouts.E_MACHINE)))
        data = b"\x7fELF" + bytes([cls, data_enc, 1, rng.randrange(256)]) + bytes(8) + body
        assert _ours(data) == _pyelftools_header(data), data
        got = ElfHeader(data)
        for name in STRUCTS:
            fmt_names = got.layout(name)
            if fmt_names is not None:
                assert fmt_names == derived(getattr(got.structs, name), data_enc == 1)
    with pytest.raises(ValueError):
        ElfHeader(b"\x7fELF\x02\x01\x01" + bytes(20))
