"""perf 6.1's symbol-table rules stated one symbol at a time: what
symbolize/symtab.py does by columns, kept here as the tests' reference
(dso__load_sym's filter, symbols__fixup_end, symbols__fixup_duplicate)."""
import struct
from operator import itemgetter

from symbolize.elffile import SHF_ALLOC
from symbolize.symtab import (SHN_LORESERVE, SHN_UNDEF, STT_FUNC, STT_GNU_IFUNC, STT_NOTYPE,
                              STT_OBJECT, STV_HIDDEN, STV_INTERNAL, RawSymbol, choose_best,
                              symbol_section)

_START = itemgetter(0)


def read_elf_symbols(binary, section_name, source, objects=False):
    tables = symbol_section(binary, section_name)
    if tables is None:
        return []
    data, strtab = tables
    fmt, names = binary.struct_layout("Elf_Sym")
    size = struct.calcsize(fmt)
    order = tuple(names.index(n) for n in
                  ("st_name", "st_value", "st_size", "st_info", "st_other", "st_shndx"))
    arm = binary.machine in ("EM_ARM", "EM_AARCH64")
    sections = binary.sections
    sec_by_index = {s.index: s for s in sections}
    out: list[RawSymbol] = []
    n = len(data) // size
    i_name, i_value, i_size, i_info, i_other, i_shndx = order
    for ent in struct.iter_unpack(fmt, bytes(data[:n * size])):
        st_info = ent[i_info]
        typ = st_info & 0xF
        st_name = ent[i_name]
        shndx = ent[i_shndx]
        if st_name == 0 or shndx == SHN_UNDEF or shndx >= SHN_LORESERVE:
            continue
        if typ == STT_NOTYPE:
            vis = ent[i_other] & 3
            if vis in (STV_HIDDEN, STV_INTERNAL):
                continue
            is_label = True
        elif typ in (STT_FUNC, STT_GNU_IFUNC) or (objects and typ == STT_OBJECT):
            is_label = False
        else:
            continue
        sec = sec_by_index.get(shndx)
        # Symbols of sections that are not loaded never match a sample.
        if sec is None or not (sec.flags & SHF_ALLOC):
            continue
        if is_label and "text" not in sec.name:
            continue
        if st_name >= len(strtab):
            continue
        end = strtab.find(b"\0", st_name)
        name = strtab[st_name:end if end >= 0 else len(strtab)].decode("utf-8", "replace")
        # ARM/AArch64 mapping symbols ($a, $d, $t, $x) mark code/data runs,
        # not functions; perf rejects them.
        if arm and name[:1] == "$" and len(name) >= 2 and name[1] in "adtx" and (
                len(name) == 2 or name[2] == "."):
            continue
        out.append(RawSymbol(name, ent[i_value], ent[i_size], st_info >> 4, typ, source))
    return out


def fixup_entries(ents: list[list], *, is_kallsyms: bool = False) -> list[list]:
    """fixup_symbols on [start, end, binding, name, source] lists already
    made (kallsyms makes them straight from its text); sorts them in place."""
    ents.sort(key=_START)               # stable: equal starts keep table order
    if not ents:
        return []
    for prev, curr in zip(ents, ents[1:]):
        if prev[1] == prev[0]:
            if is_kallsyms and (("[" in prev[3]) != ("[" in curr[3])):
                # Last kernel/module symbol: end of its page, not across the gap.
                prev[1] = ((prev[1] + 4096) + 4095) // 4096 * 4096
            else:
                prev[1] = curr[0]
    last = ents[-1]
    if last[1] == last[0]:
        last[1] = (last[0] + 4095) // 4096 * 4096 + 4096
    out = []
    curr = ents[0]
    for nxt in ents[1:]:
        if nxt[0] != curr[0]:
            out.append(curr)
            curr = nxt
        elif not choose_best(curr, nxt):
            curr = nxt
    out.append(curr)
    return out
