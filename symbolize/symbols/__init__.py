"""Names for addresses: ELF symbol tables (symtab, plt), demangling, DWARF
lines and inline frames (lines, native), the kernel's symbols (kallsyms),
JIT maps (perfmap, jitdump) and the answers kept across runs (answers).

Stands on symbolize's floor (elffile, buildid, cachedir, addresses, errors)
and on nothing in symbolize.debuginfo or symbolize.unwind.
"""
