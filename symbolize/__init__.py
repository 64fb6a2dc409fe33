"""symbolize: name addresses in ELF binaries; find binaries and debug info.

A library about binaries, not about perf.data: it never imports perfdata.
Three packages side by side, none importing another, on a common floor:

    debuginfo/   finding files: candidates (locate), debuginfod, packages,
                 the vDSO image, MiniDebugInfo, and BinaryFinder (finder)
    symbols/     naming addresses: ELF symbol tables (symtab, plt), the
                 demanglers, DWARF lines and inline frames (lines,
                 dwarf_units, native), kallsyms, JIT maps (perfmap, jitdump)
    unwind/      unwinding: CFI (cfi and its parts), arches, the unwinder
    the floor    elffile (Binary) and its elf* parts, buildid, cachedir,
                 addresses, errors, warninglog

with the Symbolizer (symbolizer.py) the facade over the three.  The symbol
side (this file's exports) is:

    Symbolizer(locator, demangle=True, inline=True).lookup(path, build_id, svma)
    Binary(path)              a safely opened ELF file
    DebugInfoLocator(...)     where binaries and debug files may be
    SymbolTable, build_symbol_table, LineInfo, KernelSymbols, PerfMap, demangle
    CacheDir(path)            where what is built once per binary is kept
                              (Symbolizer(cache_dir=...) takes one or a path)
"""
from .errors import SymbolizeError, BinaryError, NotELFError, InvalidBuildIdError
from .buildid import normalize_build_id, is_valid_build_id, require_build_id
from .elffile import Binary, LoadSegment, SectionHeader, open_binary
from .symbols.symtab import (Symbol, SymbolTable, RawSymbol, build_symbol_table, read_elf_symbols,
                     load_table, save_table)
from .symbols.plt import PltSymbol, synthesize_plt_symbols
from .symbols.demangle import demangle, demangle_rust_legacy, demangle_rust_v0
from .debuginfo.minidebuginfo import load_minidebuginfo
from .symbols.lines import LineInfo, InlineFrame
from .debuginfo.locate import DebugInfoLocator, Candidate
from .symbols.kallsyms import KernelSymbols, KernelSymbol
from .symbols.perfmap import PerfMap, MapSymbol, is_perfmap_path
from .symbolizer import Symbolizer, Frame, BinaryChoice, address_for_lookup
from .cachedir import CacheDir

__all__ = [
    "SymbolizeError", "BinaryError", "NotELFError", "InvalidBuildIdError",
    "normalize_build_id", "is_valid_build_id", "require_build_id",
    "Binary", "LoadSegment", "SectionHeader", "open_binary",
    "Symbol", "SymbolTable", "RawSymbol", "build_symbol_table", "read_elf_symbols",
    "load_table", "save_table",
    "PltSymbol", "synthesize_plt_symbols",
    "demangle", "demangle_rust_legacy", "demangle_rust_v0",
    "load_minidebuginfo", "LineInfo", "InlineFrame",
    "DebugInfoLocator", "Candidate", "KernelSymbols", "KernelSymbol",
    "PerfMap", "MapSymbol", "is_perfmap_path",
    "Symbolizer", "Frame", "BinaryChoice", "address_for_lookup", "CacheDir",
]
