"""The ELF structs a run reads of every binary (the file header after its
e_ident, section headers, program headers, symbols) as struct formats with
pyelftools' field names, and the names pyelftools gives e_type and e_machine
values: ElfHeader reads a file's header with them, and Binary.struct_layout
answers from them, without importing pyelftools (its construct library is a
fifth of a first run's own work on a small recording).

Taken from pyelftools: tests/symbolize/test_elf_layouts.py derives each from
pyelftools' own structs (ELFStructs, for every machine named here, each file
type and OS ABI) and enums (ENUM_E_TYPE, ENUM_E_MACHINE), as
Binary.struct_layout derives them, and requires them equal.  A file of
another type or machine is read with pyelftools itself."""
from __future__ import annotations

_SHDR = ["sh_name", "sh_type", "sh_flags", "sh_addr", "sh_offset", "sh_size", "sh_link",
         "sh_info", "sh_addralign", "sh_entsize"]
_EHDR = ["e_type", "e_machine", "e_version", "e_entry", "e_phoff", "e_shoff", "e_flags",
         "e_ehsize", "e_phentsize", "e_phnum", "e_shentsize", "e_shnum", "e_shstrndx"]

# (elfclass) -> struct name -> (format without its byte order, field names)
LAYOUTS: dict[int, dict[str, tuple[str, list[str]]]] = {
    32: {
        "Elf_Ehdr": ("HHLLLLLHHHHHH", _EHDR),      # after the 16 bytes of e_ident
        "Elf_Shdr": ("LLLLLLLLLL", _SHDR),
        "Elf_Phdr": ("LLLLLLLL", ["p_type", "p_offset", "p_vaddr", "p_paddr", "p_filesz",
                                  "p_memsz", "p_flags", "p_align"]),
        "Elf_Sym": ("LLLBBH", ["st_name", "st_value", "st_size", "st_info", "st_other",
                               "st_shndx"]),
    },
    64: {
        "Elf_Ehdr": ("HHLQQQLHHHHHH", _EHDR),
        "Elf_Shdr": ("LLQQQQLLQQ", _SHDR),
        "Elf_Phdr": ("LLQQQQQQ", ["p_type", "p_flags", "p_offset", "p_vaddr", "p_paddr",
                                  "p_filesz", "p_memsz", "p_align"]),
        "Elf_Sym": ("LBBHQQ", ["st_name", "st_info", "st_other", "st_shndx", "st_value",
                               "st_size"]),
    },
}

E_VERSION = {0: "EV_NONE", 1: "EV_CURRENT"}        # (any other: the number)
E_TYPE = {0: "ET_NONE", 1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE"}
E_MACHINE = {3: "EM_386", 8: "EM_MIPS", 20: "EM_PPC", 21: "EM_PPC64", 22: "EM_S390",
             40: "EM_ARM", 43: "EM_SPARCV9", 62: "EM_X86_64", 183: "EM_AARCH64",
             243: "EM_RISCV", 258: "EM_LOONGARCH"}


def layout(elfclass: int, little_endian: bool, name: str) -> tuple[str, list[str]] | None:
    """(struct format, field names) of one of the structs here, as
    Binary.struct_layout derives it from pyelftools'; None for another."""
    got = LAYOUTS.get(elfclass, {}).get(name)
    if got is None:
        return None
    return ("<" if little_endian else ">") + got[0], list(got[1])
