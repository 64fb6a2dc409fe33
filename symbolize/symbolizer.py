"""`Symbolizer`: the facade other tools use to name an address in a binary.

It stands on the three packages and joins them: debuginfo's BinaryFinder
finds the binary and its debug file (checked by build-id or .gnu_debuglink
CRC); symbols' SymbolTables and LineInfos build the symbol table and the
DWARF reader once per build-id, AddressNamer names an address (inlined
frames, source lines, demangled names), KernelTables the kernel's; unwind's
JitUnwinding reads a jitdump's unwinding info.  It caches per binary and per
address, and never raises for bad input: problems become entries in
`warnings` (one per file and problem) and frames with name None.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .buildid import normalize_build_id
from .cachedir import CacheDir
from .debuginfo.finder import (NO_FILE_MAPPINGS, STATUSES, USER_PSEUDO_MAPPINGS, BinaryChoice,
                               BinaryFinder, running_kernel_is)
from .debuginfo.locate import DebugInfoLocator
from .debuginfo.minidebuginfo import load_minidebuginfo
from .addresses import address_for_lookup
from .symbols.demangle import demangle as _demangle
from .symbols.frame import Frame
from .symbols.kallsyms import KernelSymbols
from .symbols.kernel import KernelTables
from .symbols.naming import AddressNamer
from .symbols.tables import LineInfos, SymbolTables, damaged, table_kinds
from .warninglog import WarningLog

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .cachedir import CacheWhere
    from .elffile import Binary
    from .symbols.answers import AddressAnswers
    from .symbols.jitdump import JitDump
    from .symbols.jitmaps import JitMaps
    from .symbols.lines import LineInfo
    from .symbols.symtab import SymbolTable
    from .unwind.jit import JitUnwinding, JitUnwindTable

__all__ = ["Symbolizer", "SymbolizerOptions", "Frame", "BinaryChoice", "NO_FILE_MAPPINGS",
           "STATUSES", "running_kernel_is", "address_for_lookup"]

# Lookups kept by (binary, address), cleared when full (an entry with its
# key and frames is a few hundred bytes).  A frame-pointer profile of a
# compiler built without frame pointers meets a new garbage return address
# every few samples, so a large bound lets memory grow with the file; what
# repeats is found again here soon after a clear, and the rest of a miss is
# the symbol table's bisect or the answers kept from an earlier run.
MAX_CACHED_ADDRESSES = 1 << 14
# What a (path, build-id) is looked up in (Symbolizer._where_of).
_IN_BINARY, _IN_KERNEL, _IN_PERFMAP = "binary", "kernel", "perfmap"


class _Dso:
    __slots__ = ("choice", "table", "lines", "minidebug", "answers")

    def __init__(self, choice: BinaryChoice, table: SymbolTable | None, lines: LineInfo | None,
                 minidebug: Binary | None, answers: AddressAnswers | None = None) -> None:
        self.choice = choice
        self.table = table
        self.lines = lines
        self.minidebug = minidebug
        # what its addresses were named in earlier runs (plain lookups only)
        self.answers = answers


@dataclass(frozen=True, slots=True)
class SymbolizerOptions:
    """How a Symbolizer names what it finds, and what it keeps across runs."""
    demangle: bool = True
    # the chain of functions inlined at an address, from DWARF
    inline: bool = True
    # also fill Frame.srcline when inline is off (it costs a DWARF
    # line-table read per compilation unit hit)
    srcline: bool = False
    # C++ names with their parameter lists, return types and clone suffixes
    # (perf -v's form); by default perf's (`ns::f<int>`)
    signatures: bool = False
    # a table or a file path for '[kernel.kallsyms]' lookups; by default it
    # is found through the locator (perf's build-id cache, then /proc/kallsyms)
    kallsyms: KernelSymbols | str | None = None
    # keep what is built once per binary there (symbol tables, inline names,
    # the native inline index, parsed kallsyms, the vdso image) across runs:
    # a CacheDir or a directory's path; None keeps nothing,
    # CacheDir.default() is perfdata's directory
    cache_dir: CacheWhere = None
    # the path of a vdso image to stand in for a profile's vdso that has no
    # build-id (see Symbolizer.given_vdso)
    vdso: str | None = None
    # demangle kernel symbols too (Rust's, in a kernel built with it): perf
    # does only with --demangle-kernel
    demangle_kernel: bool = False
    # source lines name their files by the whole path addr2line gives; False
    # where only base names are printed, which lets the native index answer
    # (see symbols/native.py)
    source_paths: bool = True
    # when the profile was written (seconds since the epoch): a binary taken
    # at its recorded path with no build-id to check it by (perf record 6.1
    # writes build-ids only for the binaries its samples' own ips hit) that
    # was modified after then is warned about, its names maybe another
    # build's (BinaryChoice.modified_after_recording)
    recorded_at: float | None = None


class Symbolizer:
    def __init__(self, locator: DebugInfoLocator | None = None,
                 options: SymbolizerOptions = SymbolizerOptions()) -> None:
        """locator: where binaries and debug files are found (by default
        DebugInfoLocator()'s places); options: SymbolizerOptions."""
        cache_dir, kallsyms = options.cache_dir, options.kallsyms
        demangle, inline, srcline = options.demangle, options.inline, options.srcline
        signatures, vdso, source_paths = options.signatures, options.vdso, options.source_paths
        demangle_kernel, recorded_at = options.demangle_kernel, options.recorded_at
        self.cache = CacheDir.of(cache_dir)
        self.locator = locator if locator is not None else DebugInfoLocator()
        self.demangle = demangle
        self.demangle_kernel = demangle_kernel
        self.signatures = signatures
        self.inline = inline
        self.srcline = srcline or inline
        self.source_paths = source_paths
        self.recorded_at = recorded_at
        self.log = WarningLog()
        self.warnings = self.log.messages
        self.finder = BinaryFinder(self.locator, self.cache, self.log, recorded_at)
        self.tables = SymbolTables(self.cache, self._mode())
        self.lineinfos = LineInfos(self.cache, native_lines=not source_paths)
        self.namer = AddressNamer(self.demangle_name, self.log.drain, self.inline, self.srcline)
        self.kernel = KernelTables(kallsyms, self.cache, self.log, self.finder.kallsyms_files)
        self._vdso = vdso
        self._dsos: dict[tuple, _Dso] = {}
        # (path, build-id as given) -> where its addresses are looked up (_where_of)
        self._where: dict[tuple, tuple] = {}
        self._frames: dict[tuple, tuple] = {}
        self._names: dict[str, str] = {}
        self._jit_unwinding: dict[str, JitUnwinding] = {}

    @functools.cached_property
    def jit_maps(self) -> JitMaps:
        """The JITs' perf maps and jitdumps, each read once: made at the
        first one met (their modules' import, 2 ms, is left out of the
        runs that meet none)."""
        from .symbols.jitmaps import JitMaps
        return JitMaps(self.finder.jit_file, self.log)

    def _mode(self) -> str:
        """The naming mode: "s" signatures, "p" perf's demangled names, "r"
        the names as read."""
        return "s" if self.signatures else "p" if self.demangle else "r"

    # ---------------------------------------------------------- finding
    def binary_for(self, path: str | None, build_id: str | None = None) -> BinaryChoice:
        if not isinstance(path, str):
            return BinaryChoice("missing", None, None, "no path", ())
        return self._dso(path, build_id).choice

    def first_found(self, paths: Sequence[str], build_id: str) -> str:
        """The first of `paths`, places of one binary in the order wanted,
        under which a file with this build-id is found (its symbols or not);
        else the first.  What looking under the others had to say is never
        said; the first's, at its first lookup, as always."""
        bid = normalize_build_id(build_id)
        for path in paths:
            with self.log.held((path, bid)):
                status = self._dso(path, build_id).choice.status
            if status in ("found", "no-symbols"):
                return path
        return paths[0]

    def modified_after_recording(self, path: str) -> bool:
        """Was the binary at this path taken unverified (the profile has no
        build-id for it) though modified after recorded_at?"""
        return path in self.finder.modified

    def _dso(self, path: str, build_id: str | None) -> _Dso:
        bid = normalize_build_id(build_id)
        key = (path, bid)
        d = self._dsos.get(key)
        if self.log.has_held():
            self.log.say_held(key)
        if d is None:
            if build_id is not None and bid is None:
                self.log.warn(path, "bad-bid", f"{path}: invalid build-id {build_id!r} ignored")
            d = self._load(path, bid)
            self._dsos[key] = d
        return d

    def _load(self, path: str, bid: str | None) -> _Dso:
        found = self.finder.find(path, bid)
        binary, debug = found.binary, found.debug
        want = bid or (binary.build_id if binary is not None else None)
        minidebug = load_minidebuginfo(binary) if binary is not None else None
        if found.missing is not None:
            return _Dso(found.missing, None, None, None)
        kinds = table_kinds(binary, debug, minidebug)
        table = self.tables.table_for(binary, debug, minidebug, want, kinds)
        self.log.drain(binary, debug, minidebug)
        lines = self.lineinfos.for_files(binary, debug, want, self.finder.supplementary_of)
        if len(table) == 0:
            status, reason = "no-symbols", "found, but it has no function symbols"
            self.log.warn(path, "no-symbols", f"{path}: no symbols")
        else:
            status = "found"
            reason = f"symbols from {', '.join(table.sources)}"
        modified = binary is not None and binary.path in self.finder.modified
        # (answers are kept for plain lookups only: with inline frames or
        # source lines the DWARF is read, and those are the LineInfo's)
        answers = None if self.inline or self.srcline else self.tables.answers_for(
            want, kinds, table, (binary, debug, minidebug))
        return _Dso(BinaryChoice(status, binary, debug, reason, found.tried, modified),
                    table, lines, minidebug, answers)

    def flush(self) -> None:
        """Keep in the cache directory what was learnt and is worth keeping
        (inline names and plain answers by address); a no-op without a cache
        directory."""
        self.lineinfos.save_names()
        for dso in self._dsos.values():
            # (a file that showed a fault while it was read gave answers of
            # a damaged copy: those are not kept, as its table is not)
            if dso.answers is not None and not damaged(dso.choice.binary, dso.choice.debug,
                                                       dso.minidebug):
                dso.answers.save()

    def prepare(self, path: str, build_id: str | None = None, inline_names: bool = False) -> None:
        """Find and load a binary now (its symbol table, and with
        inline_names the native index of its DWARF), writing what the cache
        keeps: so that processes sharing the cache directory can each build
        a part of what a run needs, then read the rest.  What loading it had
        to say waits for the first lookup in the binary (none: never said),
        so the warnings are those of a run that did not prepare."""
        with self.log.held((path, normalize_build_id(build_id))):
            d = self._dso(path, build_id)
            if inline_names and d.lines is not None:
                d.lines.prepare()
                self.log.drain(d.lines.binary)

    def prepare_kernel(self, build_id: str | None = None) -> None:
        """kernel_symbols() now, its warnings held as prepare() holds them."""
        bid = normalize_build_id(build_id)
        with self.log.held(("[kernel.kallsyms]", bid)):
            self._kernel_table(bid)

    def symbol_table(self, path: str, build_id: str | None = None) -> SymbolTable | None:
        return self._dso(path, build_id).table

    def svma_of(self, path: str, build_id: str | None, file_offset: int) -> int | None:
        """The address (its sections' virtual address) at which the binary,
        or its debug file, holds this file offset: what its DWARF and
        symbols are looked up by; None where no file of it is here or the
        offset is in no segment."""
        choice = self._dso(path, build_id).choice
        src = choice.binary or choice.debug
        return src.file_offset_to_svma(file_offset) if src is not None else None

    def line_info(self, path: str, build_id: str | None = None) -> LineInfo | None:
        """The LineInfo of a binary (its DWARF, from the binary or its debug
        file), for callers that need the raw inline chain; None without DWARF."""
        return self._dso(path, build_id).lines

    # ---------------------------------------------------------- lookups
    def demangle_name(self, name: str | None) -> str | None:
        """A symbol name as this symbolizer prints it (demangled or not, with
        or without signatures)."""
        if not self.demangle or not name:
            return name
        out = self._names.get(name)
        if out is None:
            out = _demangle(name, params=self.signatures)
            self._names[name] = out
        return out

    _name = demangle_name

    def lookup(self, path: str | None, build_id: str | None = None, svma: int | None = None, *,
               file_offset: int | None = None, is_return_address: bool = False) -> list[Frame]:
        """Frames for one address of a binary, innermost first.

        Give svma (address as stated in the ELF file) or file_offset. For
        '[kernel.kallsyms]' and '/tmp/perf-PID.map' give the address as svma.
        With is_return_address the lookup is at address - 1, while the
        reported svma and offset are from the address given (as perf prints).
        Always at least one frame; name None when nothing covers the address.
        """
        if not isinstance(path, str) or not (svma is None or isinstance(svma, int)) \
                or not (file_offset is None or isinstance(file_offset, int)):
            return [Frame(None, None, svma if isinstance(svma, int) else None,
                          path if isinstance(path, str) else "", None, None)]
        outer_key = (path, build_id, svma, file_offset, is_return_address)
        hit = self._frames.get(outer_key)
        if hit is not None:
            return list(hit)
        if len(self._frames) > MAX_CACHED_ADDRESSES:
            self._frames.clear()
        frames = self._lookup(path, build_id, svma, file_offset, is_return_address)
        self._frames[outer_key] = tuple(frames)
        return frames

    def lookup_data(self, path: str, build_id: str | None, file_offset: int) -> Frame:
        """The symbol at a data address of a binary (a page fault's), as
        perf names it: from the table that holds the binary's data objects
        (STT_OBJECT) as well as its functions, the one table perf keeps for
        a dso.  That table is made the first time it is asked for, and kept
        in the cache directory as the function table is.  name None where
        no symbol covers the address."""
        bid = normalize_build_id(build_id)
        dso = self._dsos.get((path, bid))
        if dso is None:
            # A data map's file may be no binary at all (ld.so.cache, a
            # locale archive): what loading it has to say is said only if
            # code is looked up in it too.
            with self.log.held((path, bid)):
                dso = self._dso(path, build_id)
        choice = dso.choice
        src = choice.binary or choice.debug
        if bid is None and choice.binary is not None:
            bid = choice.binary.build_id
        svma = src.file_offset_to_svma(file_offset) if src is not None else None
        if svma is None:
            return Frame(None, None, None, path, bid, None)
        table = self.tables.object_table((path, bid), choice.binary, choice.debug,
                                         dso.minidebug, bid)
        sym = table.lookup(svma)
        if sym is None:
            return Frame(None, None, svma, path, bid, None)
        return Frame(self._name(sym.name), svma - sym.start, svma, path, bid, sym.source)

    def object_table(self, path: str, build_id: str | None = None) -> SymbolTable:
        """The binary's table with its data objects (STT_OBJECT) too: the
        one table perf 6.1 keeps for a dso, where an object also ends the
        size-0 function before it (its sym->end: _fini before .rodata's
        first object).  lookup_data names data addresses from it."""
        dso = self._dso(path, build_id)
        choice = dso.choice
        bid = normalize_build_id(build_id)
        if bid is None and choice.binary is not None:
            bid = choice.binary.build_id
        return self.tables.object_table((path, bid), choice.binary, choice.debug,
                                        dso.minidebug, bid)

    def _lookup(self, path: str, build_id: str | None, svma: int | None, file_offset: int | None,
                is_return_address: bool) -> list[Frame]:
        where = self._where.get((path, build_id))
        if where is None:
            where = self._where_of(path, build_id)
        if where[0] is not _IN_BINARY:
            if where[0] is _IN_KERNEL:
                return self._lookup_kernel(path, where[1], svma, is_return_address)
            return self.jit_maps.perfmap_frames(path, svma, is_return_address, self._name)
        _, dso, bid, src = where
        if svma is None:
            if file_offset is None:
                return [Frame(None, None, None, path, bid, None)]
            svma = src.file_offset_to_svma(file_offset) if src is not None else None
            if svma is None:
                return [Frame(None, None, None, path, bid, None)]
        return self.namer.frames(dso.choice.binary, dso.table, dso.lines, dso.answers,
                                 path, bid, svma, is_return_address)

    def _where_of(self, path: str, build_id: str | None) -> tuple:
        """What the addresses of (path, build-id) are looked up in, kept for
        the next address: (_IN_KERNEL, build-id), (_IN_PERFMAP,), or
        (_IN_BINARY, its _Dso, its build-id, the file that maps file offsets)."""
        bid = normalize_build_id(build_id)
        if path.startswith("[kernel.kallsyms]") or path.startswith("[guest.kernel") or (
                path.startswith("[") and path.endswith("]") and
                path not in USER_PSEUDO_MAPPINGS):
            # perf names kernel modules "[ext4]"; their symbols are in kallsyms.
            where: tuple = (_IN_KERNEL, bid)
        elif path.startswith("/tmp/perf-") and _is_perfmap_path(path):
            where = (_IN_PERFMAP,)
        else:
            dso = self._dso(path, build_id)
            if bid is None and dso.choice.binary is not None:
                bid = dso.choice.binary.build_id
            where = (_IN_BINARY, dso, bid, dso.choice.binary or dso.choice.debug)
        self._where[(path, build_id)] = where
        return where

    # ---------------------------------------------------------- kernel
    def _kernel_table(self, bid: str | None) -> KernelSymbols:
        if self.log.has_held():
            self.log.say_held(("[kernel.kallsyms]", bid))
        return self.kernel.table(bid)

    @property
    def given_kernel_symbols(self) -> KernelSymbols | str | None:
        """The kernel symbols the caller gave (a KernelSymbols table, e.g. from
        a vmlinux, or a kallsyms file's path), or None: then they are found
        by the kernel's build-id."""
        return self.kernel.given

    @property
    def given_vdso(self) -> str | None:
        """The path of the vdso image the caller gave (the recording
        machine's, for a profile that names no build-id for its vdso:
        `perf record --buildid-mmap` records none), or None."""
        return self._vdso

    def kernel_symbols(self, build_id: str | None = None) -> KernelSymbols:
        """The kernel's symbol table (kallsyms) for a kernel build-id."""
        return self._kernel_table(normalize_build_id(build_id))

    def kernel_symbols_file(self, build_id: str | None = None) -> str | None:
        """The kallsyms file kernel_symbols() read for this build-id (perf's
        saved copy, a --kallsyms file, or /proc/kallsyms of the same kernel);
        None when the symbols came from elsewhere (a vmlinux) or nowhere."""
        bid = normalize_build_id(build_id)
        self._kernel_table(bid)
        return self.kernel.file(bid)

    def _lookup_kernel(self, path: str, bid: str | None, address: int | None,
                       is_ret: bool) -> list[Frame]:
        if address is None:
            return [Frame(None, None, None, path, bid, None)]
        return self.kernel.frames(self._kernel_table(bid), path, bid, address, is_ret,
                                  self._name if self.demangle_kernel else _as_read)

    # ---------------------------------------------------------- JIT
    def jit_file(self, path: str) -> str | None:
        """Where a file a JIT wrote for perf (a jitdump, or a perf map:
        /tmp/perf-PID.map), recorded or named at `path`, is here (the
        locator's candidates_for_jit_file: --debug-dir, --path-map, --symfs,
        the path itself), or None."""
        return self.finder.jit_file(path)

    def add_jit_file_place(self, path: str, place: str) -> None:
        """One more place where the JIT file named `path` may be, tried
        after the locator's (the caller knows of it: a container's /tmp
        under /proc/PID/root).  Before the file is first read."""
        self.finder.add_jit_file_place(path, place)

    def jitdump(self, path: str) -> JitDump:
        """The jitdump recorded at `path` (found by jit_file), read once
        (empty where absent or unreadable: its fault said once among the
        warnings)."""
        return self.jit_maps.jitdump(path)

    def jit_unwind_table(self, path: str, time: int | None) -> JitUnwindTable | None:
        """The unwinding info of the code the jitdump at `path` had placed
        by `time` (None: all of it), by process address; None when no load
        carries any (CODE_UNWINDING_INFO)."""
        unwinding = self._jit_unwinding.get(path)
        if unwinding is None:
            from .unwind.jit import JitUnwinding
            unwinding = self._jit_unwinding[path] = JitUnwinding(self.jitdump(path))
        return unwinding.table(time)

    def lookup_jitdump(self, path: str, address: int, time: int | None,
                       is_return_address: bool = False) -> tuple[Frame, int | None]:
        """The JIT code at `address` (a process address) at `time` (the
        jitdump's clock; None: the last code placed there) from the jitdump
        at `path`: (frame, the code's index in the dump, which tells apart
        two functions that held the address in turn).  name None where no
        code covers the address."""
        return self.jit_maps.jitdump_frame(path, address, time, is_return_address, self._name)

    def jitdump_code(self, path: str, code_index: int) -> tuple[int, int, bytes] | None:
        """The code load `code_index` (lookup_jitdump's index) of the
        jitdump at `path`: (the ELF e_machine of its code, the address it
        was loaded at, its bytes as the JIT wrote them), or None."""
        got = self.jit_maps.jitdump_code(path, code_index)
        if got is None:
            return None
        code, data = got
        return self.jit_maps.jitdump(path).machine, code.start, data



def _as_read(name: str) -> str:
    return name


def _is_perfmap_path(path: str) -> bool:
    """symbols.perfmap.is_perfmap_path, its module imported for such a path
    only."""
    from .symbols.perfmap import is_perfmap_path
    return is_perfmap_path(path)
