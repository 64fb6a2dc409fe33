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

    Symbolizer(locator, SymbolizerOptions(inline=False)).lookup(path, build_id, svma)
    Binary(path)              a safely opened ELF file
    DebugInfoLocator(...)     where binaries and debug files may be
    SymbolTable, build_symbol_table, LineInfo, KernelSymbols, PerfMap, demangle
    CacheDir(path)            where what is built once per binary is kept
                              (SymbolizerOptions(cache_dir=...) takes one or a path)
    make_locator, parse_path_map, package_of, prefetch, is_jitdump_path,
    injected_jit_group, NO_FILE_MAPPINGS: what a caller needs of the rooms

Each name's module is imported at its first use: a program that needs the
jitdump path rule does not pay for pyelftools.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .buildid import is_valid_build_id, normalize_build_id, require_build_id
    from .cachedir import CacheDir
    from .debuginfo.debuginfod import make_locator
    from .debuginfo.finder import NO_FILE_MAPPINGS
    from .debuginfo.locate import Candidate, DebugInfoLocator, parse_path_map
    from .debuginfo.minidebuginfo import load_minidebuginfo
    from .debuginfo.packages import package_of, prefetch
    from .elffile import SHF_ALLOC, Binary, LoadSegment, SectionHeader, open_binary
    from .errors import BinaryError, InvalidBuildIdError, NotELFError, SymbolizeError
    from .symbolizer import BinaryChoice, Frame, Symbolizer, SymbolizerOptions, address_for_lookup
    from .symbols.demangle import demangle, demangle_rust_legacy, demangle_rust_v0
    from .symbols.jitdump import injected_jit_group, is_jitdump_path
    from .symbols.kallsyms import KernelSymbol, KernelSymbols
    from .symbols.lines import InlineFrame, LineInfo
    from .symbols.perfmap import MapSymbol, PerfMap, is_perfmap_path
    from .symbols.plt import PltSymbol, synthesize_plt_symbols
    from .symbols.elfsymbols import RawSymbol, read_elf_symbols
    from .symbols.symtab import Symbol, SymbolTable, build_symbol_table, load_table, save_table

_MODULE_OF = {
    **dict.fromkeys(("SymbolizeError", "BinaryError", "NotELFError", "InvalidBuildIdError"),
                    "errors"),
    **dict.fromkeys(("normalize_build_id", "is_valid_build_id", "require_build_id"), "buildid"),
    **dict.fromkeys(("Binary", "LoadSegment", "SectionHeader", "open_binary", "SHF_ALLOC"),
                    "elffile"),
    **dict.fromkeys(("Symbol", "SymbolTable", "build_symbol_table", "load_table", "save_table"),
                    "symbols.symtab"),
    **dict.fromkeys(("RawSymbol", "read_elf_symbols"), "symbols.elfsymbols"),
    **dict.fromkeys(("PltSymbol", "synthesize_plt_symbols"), "symbols.plt"),
    **dict.fromkeys(("demangle", "demangle_rust_legacy", "demangle_rust_v0"),
                    "symbols.demangle"),
    "load_minidebuginfo": "debuginfo.minidebuginfo",
    **dict.fromkeys(("LineInfo", "InlineFrame"), "symbols.lines"),
    **dict.fromkeys(("DebugInfoLocator", "Candidate", "parse_path_map"), "debuginfo.locate"),
    "make_locator": "debuginfo.debuginfod",
    **dict.fromkeys(("package_of", "prefetch"), "debuginfo.packages"),
    "NO_FILE_MAPPINGS": "debuginfo.finder",
    **dict.fromkeys(("KernelSymbols", "KernelSymbol"), "symbols.kallsyms"),
    **dict.fromkeys(("PerfMap", "MapSymbol", "is_perfmap_path"), "symbols.perfmap"),
    **dict.fromkeys(("is_jitdump_path", "injected_jit_group"), "symbols.jitdump"),
    **dict.fromkeys(("Symbolizer", "SymbolizerOptions", "Frame", "BinaryChoice",
                     "address_for_lookup"), "symbolizer"),
    "CacheDir": "cachedir",
}
__all__ = list(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError("module 'symbolize' has no attribute %r" % name)
    import importlib
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value
