"""Inline chains (function names) from a native DWARF index: Sentry's
`symbolic` (Rust: gimli under it), when its wheel is installed.

`symbolic` builds a "symcache" of a whole ELF file, every function with its
inlined calls and line rows, in native code (for a whole libpython, about
the time pyelftools takes to decode one of its units), and
answers a lookup in microseconds.  The symcache is kept on disk by build-id,
so the index is built once per binary, not once per address or per run.

Used for names only (LineInfo.function_names), where it gives what the
pyelftools walk of lines.py gives and addr2line prints; what is left to
pyelftools, and why:
- File names: symbolic normalizes paths ("./Include/object.h" becomes
  "Include/object.h"); addr2line, so perf, prints them joined, not
  normalized.  So source lines come from here (locations) only where a
  base name is printed (perf script's srcline without --full-source-path);
  whole paths stay with lines.py.
- A function's own name: symbolic prefers the ELF symbol at the function's
  entry over DWARF's name (`foo.constprop.0`, `foo.cold`, an alias) where
  perf prints DWARF's.  The symcache is therefore built from a copy of the
  file whose symbol tables are hidden (.symtab/.dynsym section types and
  the PT_DYNAMIC header set to null): it then holds DWARF's names only.
- Units of no known language (assembler: gas describes each alias of a
  function as a subprogram of the same range, and symbolic names the first
  where addr2line names the last): answered None, so lines.py decides.
Every failure (no wheel, an unsupported file, malformed DWARF, a damaged
cache file) makes the lookup answer None: lines.py then answers as before.
"""
from __future__ import annotations

import os
import struct
from typing import IO, TYPE_CHECKING, Any

from ..cachedir import CacheDir
from ..elffile import Binary
from .unit_symcache import E_MACHINE, WHOLE, UnitSymcaches

if TYPE_CHECKING:
    from types import ModuleType

    from ..cachedir import CacheWhere
    from .unit_symcache import UnitSource

# ELF machines symbolic names, by pyelftools' e_machine names.
_ARCHES = {"EM_X86_64": "x86_64", "EM_AARCH64": "arm64"}
_SHT_SYMTAB, _SHT_DYNSYM, _SHT_PROGBITS = 2, 11, 1
_PT_LOAD, _PT_DYNAMIC, _PT_NULL = 1, 2, 0

_TAG = None
_MISSING = object()
# (_MISSING: not looked for yet)
_symbolic: ModuleType | None = _MISSING  # type: ignore[assignment]


def _module() -> ModuleType | None:
    """The `symbolic` package, or None where it is not installed (or
    disabled by PERFDATA_NATIVE=0)."""
    global _symbolic
    if _symbolic is _MISSING:
        _symbolic = None
        if os.environ.get("PERFDATA_NATIVE", "1") != "0":
            try:
                import symbolic.debuginfo
                import symbolic.symcache
                _symbolic = symbolic
            except Exception:          # ImportError, or a wheel that fails to load
                _symbolic = None
    return _symbolic


def available() -> bool:
    return _module() is not None


def cache_tag() -> str:
    """What a symcache file's name carries: the symcache format version and a
    digest of this module (which decides what is hidden from symbolic)."""
    global _TAG
    if _TAG is None:
        from ..cachedir import code_tag
        sym = _module()
        version = sym.symcache.SYMCACHE_LATEST_VERSION if sym is not None else 0
        _TAG = code_tag("symcache%d" % version, ("symbols/native.py",))
    return _TAG


def cache_prefix(cache: CacheDir, build_id: str, which: str) -> str | None:
    """Where the symcache of the file with this build-id is kept, without the
    tag cache_tag() adds (which imports symbolic: a caller that never looks
    an inline chain up does not pay for it); `which` tells a binary's own
    DWARF ("b") from its debug file's ("d").  None without a cache."""
    return cache.path_for("symcache", build_id, "-" + which)


def _copy_without_symbols(binary: Binary, dst: IO[bytes]) -> bool:
    """Write to the open file `dst` a copy of the ELF file with its symbol
    tables hidden from symbolic; False for a file this does not handle (not
    64-bit little-endian ELF).  The copy goes through the kernel (or, for a
    file held in memory, one write), never through a second buffer here:
    symbolic maps it, so building costs no more memory than its own index."""
    if not (binary.ok and binary.is_64 and binary.little_endian) or binary.size < 64:
        return False
    import shutil
    try:
        if os.path.isfile(binary.path) and os.path.getsize(binary.path) == binary.size:
            with open(binary.path, "rb") as src:
                shutil.copyfileobj(src, dst, 1 << 20)
        else:
            data = binary.read(0, binary.size)
            if data is None:
                return False
            dst.write(data)
        dst.flush()
        head = binary.read(0, 64)
        # (a read that runs past the file is None: a TypeError, caught below)
        phoff, shoff = struct.unpack_from("<QQ", head, 0x20)  # type: ignore[arg-type]
        phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", head, 0x36)  # type: ignore[arg-type]
        patches = []
        if phnum and phentsize >= 56 and phoff + phnum * phentsize <= binary.size:
            for i in range(phnum):
                at = phoff + i * phentsize
                # (None past the end: a TypeError, caught below)
                if struct.unpack("<I", binary.read(at, 4))[0] == _PT_DYNAMIC:  # type: ignore[arg-type]
                    patches.append((at, _PT_NULL))
        if shnum and shentsize >= 64 and shoff + shnum * shentsize <= binary.size:
            for i in range(shnum):
                at = shoff + i * shentsize + 4
                # (None past the end: a TypeError, caught below)
                if struct.unpack("<I", binary.read(at, 4))[0] in (_SHT_SYMTAB, _SHT_DYNSYM):  # type: ignore[arg-type]
                    patches.append((at, _SHT_PROGBITS))
        for at, value in patches:
            dst.seek(at)
            dst.write(struct.pack("<I", value))
        dst.flush()
        return True
    except (OSError, struct.error, TypeError):
        return False


class NativeIndex:
    """The symcache of one ELF file: names of the inline chain at an address.
    `names()` answers None wherever lines.py must answer instead."""

    def __init__(self, binary: Binary, cache: CacheWhere = None,
                 cache_key: tuple[str, str] | None = None, units: UnitSource | None = None) -> None:
        """cache, cache_key: a CacheDir (or a directory's path) and the
        (build-id, which) the symcache is kept under (cache_prefix() plus
        the tag); without them it is built in every run.  units: where the
        file's units are found, for answering from the symcaches of the
        units asked about while no symcache of the whole file is kept and
        they cost less (unit_symcache.py): a first run's case."""
        self.binary = binary
        self.cache = CacheDir.of(cache if cache_key else None)
        self.cache_prefix = cache_prefix(self.cache, *cache_key) if cache_key else None
        self.cache_file: str | None = None
        self._index: Any = None           # symbolic's SymCache
        self._failed = False
        segs = binary.load_segments if binary.ok else []
        # symcache addresses are relative to the first PT_LOAD's address.
        self._base = segs[0].vaddr if segs else 0
        self.built = False                # built here (not read from the cache)
        self.error: str | None = None     # why symbolic could not build it
        self._units = units
        self._per_unit: Any = _MISSING    # unit_symcache.UnitSymcaches, or None

    def _symcache(self) -> Any:
        if self._index is None and not self._failed:
            self._failed = True
            sym = _module()
            arch = _ARCHES.get(self.binary.machine or "")
            if sym is None or arch is None:
                return None
            self.cache_file = self._kept_file()
            self._index = self._load(sym) or self._build(sym, arch)
            self._failed = self._index is None
        return self._index

    def _load(self, sym: ModuleType) -> Any:
        path = self.cache_file
        if not path or not os.path.isfile(path):
            return None
        try:
            sc = sym.symcache.SymCache.open(path)
            if sc.is_latest_version:
                self.cache.used(path)      # recently used: pruned last
                return sc
        except Exception:
            pass
        # Damaged or stale: built again (and the file replaced).
        return None

    def _build(self, sym: ModuleType, arch: str) -> Any:
        import tempfile
        where = os.path.dirname(self.cache_file) if self.cache_file else None
        if where:
            try:
                os.makedirs(where, exist_ok=True)
            except OSError:
                where = None              # a read-only cache: the copy goes to $TMPDIR
            if where and not os.access(where, os.W_OK):
                where = None
        try:
            with tempfile.NamedTemporaryFile(prefix=".tmp-elf-", dir=where) as copy:
                if not _copy_without_symbols(self.binary, copy):
                    return None
                archive = sym.debuginfo.Archive.open(copy.name)
                obj = archive.get_object(arch=arch)
                if obj is None:
                    return None
                sc = obj.make_symcache()  # owns its bytes: the copy may go
                del archive, obj
            self.built = True
        except Exception as e:
            # Not a warning on the file: lines.py answers instead, and warns
            # itself where the DWARF is at fault.
            self.error = "%s: %s" % (type(e).__name__, str(e).split("\n")[0])
            return None
        if self.cache_file:
            try:
                blob = sc.open_stream().read()
                if self.cache.write(self.cache_file, blob):
                    # The same file's index under an older tag is stale.
                    import glob
                    # (a cache_file: cache_prefix is set)
                    for old in glob.glob(glob.escape(self.cache_prefix) + "-*.symc"):  # type: ignore[type-var, operator]
                        if old != self.cache_file:
                            try:
                                os.unlink(old)
                            except OSError:
                                pass
            except Exception:
                pass
        return sc

    @property
    def units_built(self) -> int:
        """How many units' own symcaches answered lookups (unit_symcache.py)."""
        units = self._per_unit
        return units.built if isinstance(units, UnitSymcaches) else 0

    def _found(self, svma: int) -> list | None:
        """symbolic's SourceLocations at svma, from a unit's symcache or the
        whole file's; None without either."""
        units = self._unit_symcaches()
        if units is not None:
            got = units.lookup(svma)
            if got is not WHOLE:
                return got
        sc = self._symcache()
        if sc is None or svma < self._base:
            return None
        try:
            return list(sc.lookup(svma - self._base))
        except Exception:
            return None

    def _unit_symcaches(self) -> Any:
        """The units' symcaches where they answer: a units source, no
        symcache of the whole file made or kept, a 64-bit little-endian file
        whose DWARF has no supplementary file."""
        if self._per_unit is _MISSING:
            self._per_unit = None
            b = self.binary
            sym = _module()
            arch = _ARCHES.get(b.machine or "")
            if self._units is None or self._index is not None or sym is None or arch is None \
                    or not (b.ok and b.is_64 and b.little_endian) or b.supplementary_link:
                return None
            kept = self._kept_file()
            if kept and os.path.isfile(kept) or not self._units.section_size(".debug_info"):
                return None
            self._per_unit = UnitSymcaches(sym, arch, E_MACHINE[b.machine], self._units)  # type: ignore[index]
        return self._per_unit

    def _kept_file(self) -> str | None:
        """Where the whole file's symcache is kept, or None without a cache."""
        return "%s-%s.symc" % (self.cache_prefix, cache_tag()) if self.cache_prefix else None

    def prepare(self) -> None:
        """Read the symcache from the cache, or build and keep it, now."""
        self._symcache()

    def locations(self, svma: int) -> list[tuple[str | None, str | None, int | None]] | None:
        """(function, file, line) of each frame of the inline chain at svma,
        innermost first, the outer ones at their call sites, or None when
        lines.py must answer (no function there: lines.py may still find a
        line; a unit of no known language).  The file is symbolic's path
        (normalized: "dir/./x.h" reads "dir/x.h"), so this is for callers
        that print base names or where the path need not be addr2line's."""
        found = self._found(svma)
        if not found:
            return None
        out = []
        for loc in found:
            if loc.lang == "unknown":
                return None
            out.append((loc.symbol or None, loc.full_path or None, loc.line))
        return out

    def names(self, svma: int) -> tuple | None:
        """Names of the inline chain at svma, innermost first (() when DWARF
        has no function there), or None when lines.py must answer."""
        found = self._found(svma)
        if found is None:
            return None
        out = []
        for loc in found:
            if loc.lang == "unknown":
                return None
            out.append(loc.symbol or None)
        return tuple(out)
