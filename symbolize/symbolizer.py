"""`Symbolizer`: the facade other tools use to name an address in a binary.

It finds the binary and its debug file through a DebugInfoLocator, checks
build-ids (and .gnu_debuglink CRCs), builds the symbol table once per build-id,
adds inlined frames and source lines from DWARF, demangles, and caches it all
per binary and per address. It never raises for bad input: problems become
entries in `warnings` (one per file and problem) and frames with name None.
"""
from __future__ import annotations

import contextlib
import functools
import os
import zlib
from typing import TYPE_CHECKING, NamedTuple, Sequence

from .addresses import address_for_lookup, ends_call
from .symbols.answers import AddressAnswers
from .buildid import normalize_build_id
from .cachedir import CacheDir
from .symbols.demangle import demangle as _demangle
from .elffile import Binary
from .symbols.kallsyms import KernelSymbols
from .symbols.lines import LineInfo
from .debuginfo.locate import Candidate, DebugInfoLocator
from .debuginfo.minidebuginfo import load_minidebuginfo
from .symbols.jitdump import JitDump
from .symbols.perfmap import PerfMap, is_perfmap_path
from .symbols.symtab import SymbolTable, build_symbol_table, load_table, save_table
from .unwind.jit import JitUnwinding

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .cachedir import CacheWhere
    from .unwind.jit import JitUnwindTable

# Lookups kept by (binary, address), cleared when full: ~0.29 KiB an entry
# with its key and frames.  A frame-pointer profile of a compiler built
# without frame pointers meets a new garbage return address every few
# samples (a make of 240 files, 900,000 samples: 119,496 entries, 34 MiB, at
# a bound of 1 << 20, which let memory grow with the file); what repeats is
# found again here soon after a clear, and the rest of a miss is the symbol
# table's bisect or the answers kept from an earlier run.  At 1 << 16, with
# the callers' own caches as large, a long DWARF recording of builds peaked
# 14 MiB higher for no speed.
MAX_CACHED_ADDRESSES = 1 << 14
# What a (path, build-id) is looked up in (Symbolizer._where_of).
_IN_BINARY, _IN_KERNEL, _IN_PERFMAP = "binary", "kernel", "perfmap"
_USER_PSEUDO = ("[vdso]", "[vsyscall]", "[vvar]", "[heap]", "[stack]", "[anon]", "[uprobes]")
# Those that name no file to look for: a frame there is a garbage return
# address (a DWARF unwind or a frame-pointer walk that read a heap or stack
# pointer), whose lookup has nothing to say.
NO_FILE_MAPPINGS = frozenset(_USER_PSEUDO) - {"[vdso]"}
_UNUSABLE = ("not-elf", "truncated", "not-regular", "too-large", "unreadable", "no-code")

STATUSES = ("found", "missing", "buildid-mismatch", "not-elf", "no-symbols")


class Frame(NamedTuple):
    name: str | None          # None: no symbol covers the address ([unknown])
    offset: int | None        # address - symbol start; None for inlined frames
    svma: int | None          # the address as given (not address - 1)
    dso_path: str
    build_id: str | None
    source: str | None        # symtab dynsym plt minidebuginfo debuginfo kallsyms perfmap;
                              # with no name: no-symbols (the binary has none but PLT stubs)
    inlined: bool = False
    srcline: str | None = None


class BinaryChoice(NamedTuple):
    """What binary_for() settled on, and why (for diagnosis)."""
    status: str               # one of STATUSES
    binary: Binary | None     # the file with the code (None if not found)
    debug: Binary | None      # a separate debug file, if one was found
    reason: str
    tried: tuple              # (path, outcome, detail) for each candidate looked at;
                              # detail: the build-id a buildid-mismatch file has
                              # ("" for none), what is wrong with a damaged one
    # the binary was taken at its recorded path with no build-id to check it
    # by, and it was modified after the profile was written (recorded_at)
    modified_after_recording: bool = False


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


class Symbolizer:
    def __init__(self, locator: DebugInfoLocator | None = None, demangle: bool = True,
                 inline: bool = True, *, srcline: bool = False, signatures: bool = False,
                 kallsyms: KernelSymbols | str | None = None,
                 cache_dir: CacheWhere = None, vdso: str | None = None,
                 demangle_kernel: bool = False, source_paths: bool = True,
                 recorded_at: float | None = None) -> None:
        """srcline: also fill Frame.srcline when inline is off (it costs a
        DWARF line-table read per compilation unit hit). kallsyms: a table or
        a file path for '[kernel.kallsyms]' lookups; by default it is found
        through the locator (perf's build-id cache, then /proc/kallsyms).
        cache_dir: keep what is built once per binary there (symbol
        tables, inline names, the native inline index, parsed kallsyms, the
        vdso image) across runs: a CacheDir or a directory's path; None (the
        default) keeps nothing, CacheDir.default() is perfdata's directory.
        signatures: C++ names with their parameter lists, return types and
        clone suffixes (perf -v's form); by default perf's (`ns::f<int>`).
        vdso: the path of a vdso image to stand in for a profile's vdso that
        has no build-id (see given_vdso).  demangle_kernel: demangle kernel
        symbols too (Rust's, in a kernel built with it): perf does only with
        --demangle-kernel.  source_paths: source lines name their files by
        the whole path addr2line gives; False where only base names are
        printed, which lets the native index answer (see native.py).
        recorded_at: when the profile was written (seconds since the epoch):
        a binary taken at its recorded path with no build-id to check it by
        (perf record 6.1 writes build-ids only for the binaries its samples'
        own ips hit) that was modified after then is warned about, its names
        maybe another build's (BinaryChoice.modified_after_recording)."""
        self.cache = CacheDir.of(cache_dir)
        self.locator = locator if locator is not None else DebugInfoLocator()
        self.demangle = demangle
        self.demangle_kernel = demangle_kernel
        self.signatures = signatures
        self.inline = inline
        self.srcline = srcline or inline
        self.source_paths = source_paths
        self.warnings: list[str] = []
        self._warned: set = set()
        self._dsos: dict[tuple, _Dso] = {}
        # (path, build-id as given) -> where its addresses are looked up (_where_of)
        self._where: dict[tuple, tuple] = {}
        self._tables: dict[str, SymbolTable] = {}
        # The tables with data objects (lookup_data), by (path, build-id)
        self._object_tables: dict[tuple[str, str | None], SymbolTable] = {}
        self._lineinfos: dict[str, LineInfo] = {}
        self._frames: dict[tuple, tuple] = {}
        self._names: dict[str, str] = {}
        self._kallsyms = kallsyms
        self._vdso = vdso
        self._answers: dict[str, AddressAnswers] = {}   # by file: see _answers_for
        self._kernel_tables: dict = {}
        self._kernel_files: dict = {}     # build-id -> the kallsyms file read
        self._perfmaps: dict[str, PerfMap] = {}
        self._jitdumps: dict[str, JitDump] = {}
        self._jit_unwinding: dict[str, JitUnwinding] = {}
        self._jit_places: dict[str, list[str]] = {}     # see add_jit_file_place
        # (path, build-id) -> warnings of a prepare(), said at the first use
        self._deferred: dict[tuple, list[str]] = {}
        self.recorded_at = recorded_at
        self._modified: set[str] = set()     # candidates modified after recorded_at

    # ---------------------------------------------------------- warnings
    def _warn(self, path: str, kind: str, message: str) -> None:
        key = (path, kind)
        if key not in self._warned:
            self._warned.add(key)
            self.warnings.append(message)

    def _drain(self, *objs: Binary | DebugInfoLocator | KernelSymbols | PerfMap | JitDump | None
               ) -> None:
        for o in objs:
            if o is None:
                continue
            # A damaged file can fail at every address asked: one warning
            # names it, the first problem found.
            path = getattr(o, "path", None) if isinstance(o, Binary) else None
            for w in getattr(o, "warnings", ()):
                self._warn(path or w, "detail", w)
            try:
                o.warnings.clear()
            except AttributeError:
                pass

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
            with self._warnings_held((path, bid)):
                status = self._dso(path, build_id).choice.status
            if status in ("found", "no-symbols"):
                return path
        return paths[0]

    def _dso(self, path: str, build_id: str | None) -> _Dso:
        bid = normalize_build_id(build_id)
        key = (path, bid)
        d = self._dsos.get(key)
        if self._deferred:
            self._say_deferred(key)
        if d is None:
            if build_id is not None and bid is None:
                self._warn(path, "bad-bid", f"{path}: invalid build-id {build_id!r} ignored")
            d = self._load(path, bid)
            self._dsos[key] = d
        return d

    def _load(self, path: str, bid: str | None) -> _Dso:
        tried = []
        binary = None
        worst = "missing"
        for cand in self.locator.candidates_for_binary(path, bid):
            b, outcome, detail = self._try(cand, bid)
            tried.append((cand.path, outcome, detail))
            if b is not None:
                binary = b
                break
            if outcome == "buildid-mismatch":
                worst = outcome
            elif outcome in _UNUSABLE and worst == "missing":
                worst = "not-elf"      # a FIFO, a directory, a text file, a cut ELF
        self._drain(self.locator)
        want = bid or (binary.build_id if binary is not None else None)
        debuglink = binary.debuglink if binary is not None else None
        debug = None
        # (the binary itself is no debug file; a candidate that does not
        # exist is not it either, and costs no realpath: a stat a component)
        real = os.path.realpath(binary.path) if binary is not None else None
        for cand in self.locator.candidates_for_debug(
                path, want, debuglink, binary.path if binary is not None else None):
            if real is not None and os.path.lexists(cand.path) and \
                    os.path.realpath(cand.path) == real:
                continue
            d, outcome, detail = self._try(cand, want, debug=True)
            if d is not None and not (d.has_section(".symtab") or d.has_section(".debug_info")):
                # A copy of the stripped binary (e.g. a .build-id/xx/rest entry of
                # an archive) is no debug file: keep looking.  A file whose
                # section table is cut off is damaged, and said to be.
                detail = self._say_damaged(cand, d)
                d.close()
                d, outcome = None, "no-debug-sections"
            tried.append((cand.path, outcome, detail))
            if d is not None:
                debug = d
                break
        self._drain(self.locator)
        minidebug = load_minidebuginfo(binary) if binary is not None else None
        if binary is None and debug is None:
            status = worst
            reason = {"missing": "no candidate file exists",
                      "buildid-mismatch": "every candidate has another build-id",
                      "not-elf": "candidates exist but are not usable ELF files"}[status]
            # (other outcomes were named per file already; a memfd never was
            # a file to find: nothing to say without a build-id to look for)
            if status == "missing" and (bid or not path.startswith("/memfd:")) and \
                    path not in NO_FILE_MAPPINGS:
                self._warn(path, "missing", f"{path}: {reason}" + (f" (build-id {bid})" if bid else ""))
            return _Dso(BinaryChoice(status, None, None, reason, tuple(tried)), None, None, None)
        kinds = _table_kinds(binary, debug, minidebug)
        table = self._table_for(binary, debug, minidebug, want, kinds)
        self._drain(binary, debug, minidebug)
        lines = None
        for f in (debug, binary):
            if f is not None and f.ok and f.get_section(".debug_info") is not None:
                # One LineInfo per build-id: its per-CU caches are shared by
                # every path the same file is known under.
                lines = self._lineinfos.get(want) if want else None
                if lines is None:
                    # (which file the DWARF came from is in the cache's names)
                    lines = LineInfo(f, self.cache, cache_key=(
                        want, "d" if f is debug else "b") if want else None,
                                     native_lines=not self.source_paths,
                                     supplementary=functools.partial(self._supplementary_of, f))
                    if want:
                        self._lineinfos[want] = lines
                break
        if len(table) == 0:
            status, reason = "no-symbols", "found, but it has no function symbols"
            self._warn(path, "no-symbols", f"{path}: no symbols")
        else:
            status = "found"
            reason = f"symbols from {', '.join(table.sources)}"
        modified = binary is not None and binary.path in self._modified
        return _Dso(BinaryChoice(status, binary, debug, reason, tuple(tried), modified),
                    table, lines,
                    minidebug, self._answers_for(want, kinds, table, binary, debug, minidebug))

    def _answers_for(self, bid: str | None, kinds: str, table: SymbolTable,
                     *files: Binary | None) -> AddressAnswers | None:
        """The answers of earlier runs for this table (one per cache file:
        every path of the same build-id shares it), in this naming mode;
        None where they are not kept: no cache or build-id, no symbols, a
        damaged file (as its table), or lookups that also read DWARF (inline
        frames, source lines: those answers are the LineInfo's to keep)."""
        if not self.cache.enabled or bid is None or not len(table) or self.inline or \
                self.srcline or _damaged(*files):
            return None
        path = self.cache.path_for("symtab", bid, f"-{kinds}-{self._mode()}.answers")
        if path is None:
            return None
        answers = self._answers.get(path)
        if answers is None:
            answers = self._answers[path] = AddressAnswers(self.cache, path)
        return answers

    def _try(self, cand: Candidate, bid: str | None, debug: bool = False
             ) -> tuple[Binary | None, str, str]:
        """Open one candidate; (Binary, 'found', '') or (None, why not, what
        the file holds instead: the build-id of a buildid-mismatch ('' for
        none), what is wrong with a damaged file, else '')."""
        if not os.path.lexists(cand.path):
            return None, "missing", ""
        if cand.origin in ("debug-dir", "buildid-cache") and os.path.isdir(cand.path):
            # perf's build-id cache layout: .build-id/xx/rest and <path> are
            # directories there (their `elf` and `debug` are candidates too)
            return None, "directory", ""
        b = Binary(cand.path, facts=self.cache)
        # (what the checks below and the lookups read of the file: kept for
        # the next run, which then reads no ELF header)
        b.keep_facts()
        if not b.ok:
            if b.error_kind != "missing":
                self._warn(cand.path, "open", f"{cand.path}: {b.error_kind}: {b.error}")
            # (not ok: error_kind is set)
            return None, ("not-elf" if b.error_kind in ("not-elf", "truncated")  # type: ignore[return-value]
                          else b.error_kind), ""
        if not debug and not b.has_code and b.get_section(".dynsym") is None:
            # (a debug file's copy, or a file cut short: perf's build-id
            # cache entry of a binary truncated in place, a copy that failed)
            damage = self._say_damaged(cand, b)
            b.close()
            return None, "no-code", damage
        have = b.build_id
        if bid is not None:
            if have != bid:
                self._warn(cand.path, "bid",
                           f"{cand.path}: build-id {have or 'none'} is not the wanted {bid}; not used")
                b.close()
                return None, "buildid-mismatch", have or ""
            return b, "found", ""
        # No build-id to check against.
        if cand.crc is not None:
            crc = _file_crc32(cand.path)
            if crc != cand.crc:
                self._warn(cand.path, "crc", f"{cand.path}: .gnu_debuglink CRC mismatch; not used")
                b.close()
                return None, "crc-mismatch", ""
            return b, "found", ""
        if cand.origin in ("original", "path-map", "symfs", "debug-dir") and not debug:
            if cand.origin == "original":
                self._check_unchanged(cand.path)
            return b, "found", ""
        if debug and cand.origin in ("debug-dir", "symfs", "system") and have is None:
            return b, "found", ""
        b.close()
        return None, "unverifiable", ""

    def _supplementary_of(self, f: Binary) -> Binary | None:
        """The supplementary file (`dwz -m`'s) that f's DWARF names, found
        by its identity (build-id, or .debug_sup checksum); None, said once,
        where no candidate is it."""
        link = f.supplementary_link
        if link is None:
            return None
        for cand in self.locator.candidates_for_supplementary(link.name, link.identity, f.path):
            if not os.path.isfile(cand.path):
                continue
            b = Binary(cand.path, facts=self.cache)
            if b.ok and (b.has_section(".debug_info") or b.has_section(".debug_str")) and (
                    link.identity is None or b.supplementary_identity == link.identity):
                return b
            if b.ok:
                self._warn(cand.path, "sup-id", "%s: not the supplementary file %s of %s "
                           "(it is %s); not used" % (cand.path, link.identity, f.path,
                                                    b.supplementary_identity or "unidentified"))
            b.close()
        self._drain(self.locator)
        self._warn(f.path, "sup-missing",
                   "%s: its DWARF refers to the supplementary file %s (made by dwz%s), not "
                   "found: the names of the functions inlined from there are left out; install "
                   "it (the package's debug files put it under /usr/lib/debug/.dwz) or give "
                   "--debug-dir DIR where it is DIR/.build-id/xx/rest.debug or at its path" % (
                       f.path, link.name, ", id %s" % link.identity if link.identity else ""))
        return None

    def modified_after_recording(self, path: str) -> bool:
        """Was the binary at this path taken unverified (the profile has no
        build-id for it) though modified after recorded_at?"""
        return path in self._modified

    def _check_unchanged(self, path: str) -> None:
        """Warn about a binary taken unverified at its recorded path that
        was modified after the profile was written.  (Only there: a copy
        under --path-map, --symfs or a debug dir has its own times.)"""
        if self.recorded_at is None:
            return
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            return
        if mtime > self.recorded_at:
            import time
            self._modified.add(path)
            self._warn(path, "modified", "%s: modified after the profile was written (%s, the "
                       "profile %s) and the profile has no build-id to check it by: its names "
                       "may be another build's (perf record --buildid-all records every "
                       "binary's build-id)" % (
                           path, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(mtime)),
                           time.strftime("%Y-%m-%d %H:%M:%S",
                                         time.localtime(self.recorded_at))))

    def _say_damaged(self, cand: Candidate, b: Binary) -> str:
        """Warn about a candidate whose headers point past its end (the
        first thing found wrong), and return that ('' for nothing wrong)."""
        if b.ok:
            b.sections        # (read: a cut-off table is found wanting here)
        if not b.warnings:
            return ""
        problem = b.warnings[0]
        problem = problem[len(b.path) + 2:] if problem.startswith(b.path + ": ") else problem
        self._warn(cand.path, "damaged", f"{cand.path}: damaged ({problem}); not used")
        b.warnings.clear()
        return problem

    def _mode(self) -> str:
        """The naming mode: "s" signatures, "p" perf's demangled names, "r"
        the names as read."""
        return "s" if self.signatures else "p" if self.demangle else "r"

    def _table_for(self, binary: Binary | None, debug: Binary | None, minidebug: Binary | None,
                   bid: str | None, kinds: str, objects: bool = False) -> SymbolTable:
        """A binary's symbol table (with objects, the one with its data
        objects too: lookup_data keeps those), from the cache directory
        where an earlier run left it, else built and left there."""
        memo = None if objects else self._tables
        if bid is not None and memo is not None and bid in memo:
            return memo[bid]
        disk = None
        if self.cache.enabled and bid is not None:
            # The name says which sources went in, so a table built before a
            # debug file was installed is not reused after.
            # (and a naming mode other than the default, "p": it chooses
            # between aliases, as perf's)
            mode = "" if self._mode() == "p" else "-" + self._mode()
            disk = self.cache.path_for("symtab", bid,
                                       f"-{kinds}{mode}{'-objects' if objects else ''}.table")
            # (enabled: path_for gave a path)
            table = load_table(disk, cache=self.cache)  # type: ignore[arg-type]
            if table is not None:
                if memo is not None:
                    memo[bid] = table
                return table
        mode = self._mode()
        table = build_symbol_table(binary, debug, minidebug, objects=objects,
                                   demangled="" if mode == "r" else mode)
        if bid is not None and memo is not None:
            memo[bid] = table
        # A damaged file gives a partial table: never let it stand in for the
        # good copy of the same build-id in later runs.
        if disk is not None and len(table) and not _damaged(binary, debug, minidebug):
            save_table(table, disk, self.cache)
        return table

    def flush(self) -> None:
        """Keep in the cache directory what was learnt and is worth keeping
        (inline names and plain answers by address); a no-op without a cache
        directory."""
        for lines in self._lineinfos.values():
            if lines is not None:
                lines.save_names()
        for dso in self._dsos.values():
            # (a file that showed a fault while it was read gave answers of
            # a damaged copy: those are not kept, as its table is not)
            if dso.answers is not None and not _damaged(dso.choice.binary, dso.choice.debug,
                                                        dso.minidebug):
                dso.answers.save()

    def prepare(self, path: str, build_id: str | None = None, inline_names: bool = False) -> None:
        """Find and load a binary now (its symbol table, and with
        inline_names the native index of its DWARF), writing what the cache
        keeps: so that processes sharing the cache directory can each build
        a part of what a run needs, then read the rest.  What loading it had
        to say waits for the first lookup in the binary (none: never said),
        so the warnings are those of a run that did not prepare."""
        with self._warnings_held((path, normalize_build_id(build_id))):
            d = self._dso(path, build_id)
            if inline_names and d.lines is not None:
                d.lines.prepare()
                self._drain(d.lines.binary)

    def prepare_kernel(self, build_id: str | None = None) -> None:
        """kernel_symbols() now, its warnings held as prepare() holds them."""
        bid = normalize_build_id(build_id)
        with self._warnings_held(("[kernel.kallsyms]", bid)):
            self._kernel_table(bid)

    @contextlib.contextmanager
    def _warnings_held(self, key: tuple[str, str | None]) -> Iterator[None]:
        """The warnings said inside the block, kept back for _say_deferred(key)."""
        mark = len(self.warnings)
        try:
            yield
        finally:
            said = self.warnings[mark:]
            del self.warnings[mark:]
        if said:
            self._deferred[key] = said

    def _say_deferred(self, key: tuple[str, str | None]) -> None:
        said = self._deferred.pop(key, None)
        if said:
            self.warnings.extend(said)

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

    def jit_file(self, path: str) -> str | None:
        """Where a file a JIT wrote for perf (a jitdump, or a perf map:
        /tmp/perf-PID.map), recorded or named at `path`, is here (the
        locator's candidates_for_jit_file: --debug-dir, --path-map, --symfs,
        the path itself), or None."""
        for cand in self.locator.candidates_for_jit_file(path):
            if os.path.lexists(cand.path):
                return cand.path
        for place in self._jit_places.get(path, ()):
            if os.path.lexists(place):
                return place
        return None

    def add_jit_file_place(self, path: str, place: str) -> None:
        """One more place where the JIT file named `path` may be, tried
        after the locator's (the caller knows of it: a container's /tmp
        under /proc/PID/root).  Before the file is first read."""
        places = self._jit_places.setdefault(path, [])
        if place not in places:
            places.append(place)

    def jitdump(self, path: str) -> JitDump:
        """The jitdump recorded at `path` (found by jit_file), read once
        (empty where absent or unreadable: its fault said once among the
        warnings)."""
        dump = self._jitdumps.get(path)
        if dump is None:
            found = self.jit_file(path)
            dump = JitDump.from_file(found) if found is not None else JitDump()
            self._drain(dump)
            self._jitdumps[path] = dump
        return dump

    def jit_unwind_table(self, path: str, time: int | None) -> JitUnwindTable | None:
        """The unwinding info of the code the jitdump at `path` had placed
        by `time` (None: all of it), by process address; None when no load
        carries any (CODE_UNWINDING_INFO)."""
        unwinding = self._jit_unwinding.get(path)
        if unwinding is None:
            unwinding = self._jit_unwinding[path] = JitUnwinding(self.jitdump(path))
        return unwinding.table(time)

    def lookup_jitdump(self, path: str, address: int, time: int | None,
                       is_return_address: bool = False) -> tuple[Frame, int | None]:
        """The JIT code at `address` (a process address) at `time` (the
        jitdump's clock; None: the last code placed there) from the jitdump
        at `path`: (frame, the code's index in the dump, which tells apart
        two functions that held the address in turn).  name None where no
        code covers the address."""
        dump = self.jitdump(path)
        code = dump.lookup(address_for_lookup(address, is_return_address), time)
        if code is None:
            return Frame(None, None, address, path, None, None), None
        return (Frame(self._name(code.name), address - code.start, address, path, None,
                      "jitdump"), code.code_index)

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
            with self._warnings_held((path, bid)):
                dso = self._dso(path, build_id)
        choice = dso.choice
        src = choice.binary or choice.debug
        if bid is None and choice.binary is not None:
            bid = choice.binary.build_id
        svma = src.file_offset_to_svma(file_offset) if src is not None else None
        if svma is None:
            return Frame(None, None, None, path, bid, None)
        key = (path, bid)
        table = self._object_tables.get(key)
        if table is None:
            files = (choice.binary, choice.debug, dso.minidebug)
            table = self._object_tables[key] = self._table_for(
                *files, bid, _table_kinds(*files), objects=True)
        sym = table.lookup(svma)
        if sym is None:
            return Frame(None, None, svma, path, bid, None)
        return Frame(self._name(sym.name), svma - sym.start, svma, path, bid, sym.source)

    def _lookup(self, path: str, build_id: str | None, svma: int | None, file_offset: int | None,
                is_return_address: bool) -> list[Frame]:
        where = self._where.get((path, build_id))
        if where is None:
            where = self._where_of(path, build_id)
        if where[0] is not _IN_BINARY:
            if where[0] is _IN_KERNEL:
                return self._lookup_kernel(path, where[1], svma, is_return_address)
            return self._lookup_perfmap(path, svma, is_return_address)
        _, dso, bid, src = where
        if svma is None:
            if file_offset is None:
                return [Frame(None, None, None, path, bid, None)]
            svma = src.file_offset_to_svma(file_offset) if src is not None else None
            if svma is None:
                return [Frame(None, None, None, path, bid, None)]
        return self._resolve(dso, path, bid, svma, is_return_address)

    def _where_of(self, path: str, build_id: str | None) -> tuple:
        """What the addresses of (path, build-id) are looked up in, kept for
        the next address: (_IN_KERNEL, build-id), (_IN_PERFMAP,), or
        (_IN_BINARY, its _Dso, its build-id, the file that maps file offsets)."""
        bid = normalize_build_id(build_id)
        if path.startswith("[kernel.kallsyms]") or path.startswith("[guest.kernel") or (
                path.startswith("[") and path.endswith("]") and path not in _USER_PSEUDO):
            # perf names kernel modules "[ext4]"; their symbols are in kallsyms.
            where: tuple = (_IN_KERNEL, bid)
        elif path.startswith("/tmp/perf-") and is_perfmap_path(path):
            where = (_IN_PERFMAP,)
        else:
            dso = self._dso(path, build_id)
            if bid is None and dso.choice.binary is not None:
                bid = dso.choice.binary.build_id
            where = (_IN_BINARY, dso, bid, dso.choice.binary or dso.choice.debug)
        self._where[(path, build_id)] = where
        return where

    def _call_precedes(self, dso: _Dso, svma: int) -> bool:
        """Whether the instruction before svma in the binary is a call (the
        return-address rule applies); True where the bytes cannot be read."""
        b = dso.choice.binary
        if b is None or svma < 1:
            return True
        end = b.svma_to_file_offset(svma - 1)
        if end is None:
            return True
        n = 15
        while n > 1 and b.svma_to_file_offset(svma - n) != end + 1 - n:
            n -= 1                      # not past the start of the segment
        code = b.read_code(end + 1 - n, n)
        if code is None:
            return True
        got = ends_call(bytes(code), b.machine)
        return True if got is None else got

    def _resolve(self, dso: _Dso, path: str, bid: str | None, svma: int,
                 is_ret: bool) -> list[Frame]:
        answers = dso.answers
        if answers is not None:
            key = svma * 2 + is_ret
            known = answers.known.get(key)
            if known is not None:
                return [Frame(known[0], known[1], svma, path, bid, known[2])]
            found = self._resolve_anew(dso, path, bid, svma, is_ret)
            # (no inline frames, no srcline: answers are kept for plain
            # lookups only, so the one frame is the whole answer)
            answers.add(key, (found[0].name, found[0].offset, found[0].source))
            return found
        return self._resolve_anew(dso, path, bid, svma, is_ret)

    def _resolve_anew(self, dso: _Dso, path: str, bid: str | None, svma: int,
                      is_ret: bool) -> list[Frame]:
        # A return address is looked up at address - 1 (the call) only where
        # a call ends there: a frame-pointer walk also yields addresses that
        # no call pushed (a function's first byte after a jmp), named as is.
        if is_ret and not self._call_precedes(dso, svma):
            is_ret = False
        addr = address_for_lookup(svma, is_ret)
        sym = dso.table.lookup(addr) if dso.table is not None else None
        if sym is None and addr != svma and dso.table is not None:
            # address - 1 falls between functions (alignment padding): the
            # value was a function's entry found on the stack (makecontext's
            # __start_context, a jump-entered function), not the end of a call:
            # name what is at the address itself, as perf does.
            sym = dso.table.lookup(svma)
            if sym is not None:
                addr = svma
        inl = []
        srcline = None
        if dso.lines is not None and (self.inline or self.srcline):
            if self.inline:
                inl = dso.lines.frames(addr)
                self._drain(dso.lines.binary)
                if inl:
                    srcline = inl[-1].srcline
            else:
                srcline = dso.lines.srcline(addr)
                self._drain(dso.lines.binary)
        out = []
        for f in inl[:-1]:
            out.append(Frame(self._name(f.function) if f.function else None, None, svma, path, bid,
                             "debuginfo", True, f.srcline))
        if sym is not None:
            out.append(Frame(self._name(sym.name), svma - sym.start, svma, path, bid,
                             sym.source, False, srcline))
        elif inl and inl[-1].function:
            # No symbol (stripped, or a gap), but DWARF names the function.
            out.append(Frame(self._name(inl[-1].function), None, svma, path, bid,
                             "debuginfo", False, srcline))
        else:
            # (no-symbols: the binary has none to name any address with, but
            # PLT stubs: addr2line, which perf asks for a line, names nothing)
            bare = dso.table is not None and dso.table.sources in ((), ("plt",))
            out.append(Frame(None, None, svma, path, bid, "no-symbols" if bare else None, False,
                             srcline))
        return out

    # ---------------------------------------------------------- kernel, JIT
    def _kernel_table(self, bid: str | None) -> KernelSymbols:
        if self._deferred:
            self._say_deferred(("[kernel.kallsyms]", bid))
        if bid in self._kernel_tables:
            return self._kernel_tables[bid]
        src = self._kallsyms
        source = src if isinstance(src, str) else None
        if isinstance(src, KernelSymbols):
            table = src
        elif isinstance(src, str):
            table = KernelSymbols.from_file(src, self.cache)
        else:
            table = KernelSymbols()
            for cand in self.locator.candidates_for_kallsyms(bid):
                if not os.path.isfile(cand.path):
                    continue
                if cand.origin == "original" and bid is not None and not running_kernel_is(bid):
                    self._warn(cand.path, "bid", f"{cand.path}: the running kernel is not build-id {bid}; not used")
                    continue
                table = KernelSymbols.from_file(cand.path, self.cache)
                if len(table):
                    source = cand.path
                    break
        self._drain(table)
        if len(table) == 0:
            self._warn("[kernel.kallsyms]", "missing", "[kernel.kallsyms]: no kernel symbols")
        self._kernel_tables[bid] = table
        self._kernel_files[bid] = source if len(table) else None
        return table

    @property
    def given_kernel_symbols(self) -> KernelSymbols | str | None:
        """The kernel symbols the caller gave (a KernelSymbols table, e.g. from
        a vmlinux, or a kallsyms file's path), or None: then they are found
        by the kernel's build-id."""
        return self._kallsyms

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
        return self._kernel_files.get(bid)

    def _lookup_kernel(self, path: str, bid: str | None, address: int | None,
                       is_ret: bool) -> list[Frame]:
        if address is None:
            return [Frame(None, None, None, path, bid, None)]
        table = self._kernel_table(bid)
        s = table.lookup(address_for_lookup(address, is_ret))
        if is_ret and (s is None or s.name.startswith("__pfx_")):
            # address - 1 is in the padding before a function (__pfx_*, or
            # none): the address is that function's first byte, not the end
            # of a call; a __pfx_ symbol is never the answer there.
            at = table.lookup(address)
            if at is not None and not at.name.startswith("__pfx_"):
                s = at
        if s is None:
            return [Frame(None, None, address, path, bid, None)]
        name = self._name(s.name) if self.demangle_kernel else s.name
        return [Frame(name, address - s.start, address, path, bid, "kallsyms")]

    def _lookup_perfmap(self, path: str, address: int | None, is_ret: bool) -> list[Frame]:
        if address is None:
            return [Frame(None, None, None, path, None, None)]
        pm = self._perfmaps.get(path)
        if pm is None:
            # No map file is no fault: anonymous executable memory promises
            # none (perf is silent too); a map that is there but unreadable is.
            # (perf 6.1 reads /tmp/perf-PID.map only: a recording read on
            # another machine or after a container is gone needs the map
            # where --path-map, --symfs or an archive put it.)
            found = self.jit_file(path)
            pm = PerfMap.from_file(found) if found is not None else PerfMap()
            self._drain(pm)
            self._perfmaps[path] = pm
        s = pm.lookup(address_for_lookup(address, is_ret))
        if s is None:
            return [Frame(None, None, address, path, None, None)]
        return [Frame(self._name(s.name), address - s.start, address, path, None, "perfmap")]


def _file_crc32(path: str) -> int | None:
    try:
        crc = 0
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    return crc & 0xFFFFFFFF
                crc = zlib.crc32(chunk, crc)
    except OSError:
        return None


def running_kernel_is(bid: str) -> bool:
    """Whether /sys/kernel/notes names this build-id (unknown counts as yes:
    there is nothing better to use)."""
    from .buildid import parse_build_id_notes
    try:
        with open("/sys/kernel/notes", "rb") as f:
            data = f.read(1 << 16)
    except OSError:
        return True
    have = parse_build_id_notes(data, True)
    return have is None or have == bid


def _table_kinds(binary: Binary | None, debug: Binary | None, minidebug: Binary | None) -> str:
    """Which sources a binary's symbol table is made from (its cache files'
    names: a table built before a debug file was installed is not reused
    after)."""
    return "".join(k for k, on in (
        ("d", debug is not None),
        ("s", binary is not None and binary.has_section(".symtab")),
        ("m", minidebug is not None),
        ("c", binary is not None and binary.has_code)) if on) or "x"


def _damaged(*files: Binary | None) -> bool:
    """Whether a file showed a fault while it was read: what was made of it
    (its table, its answers) is a damaged copy's, never kept for the good
    copy of the same build-id."""
    return any(getattr(b, "warnings", None) for b in files)
