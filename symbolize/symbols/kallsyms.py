"""Kernel symbols from a kallsyms text (/proc/kallsyms, or the copy perf keeps
in its build-id cache, ~/.debug/[kernel.kallsyms]/<build-id>/kallsyms).

perf's conventions (tools/perf/util/symbol.c, perf 6.1): keep types T, W, D and
B (either case); a symbol's size runs to the next symbol; the last symbol of
the kernel or of a module ends at the end of its page rather than across the
gap to the next; symbols sharing an address are resolved by choose_best_symbol.
"""
from __future__ import annotations

import bisect
import itertools
import operator
import struct
from array import array
from typing import TYPE_CHECKING

from ..cachedir import DEFAULT, CacheDir, identity_key
from . import kallsyms_text
from .compiled import symtab_core
from .kallsyms_text import KernelSymbol, TextSymbols

if TYPE_CHECKING:
    import mmap
    import os
    from collections.abc import Iterable, Iterator, Sequence

    from ..cachedir import CacheWhere
from .fixups import STB_GLOBAL, STB_LOCAL, STB_WEAK, fixup_columns, fixup_symbols
from .symtab import utf8_names

MAX_KALLSYMS_SIZE = 256 << 20
KSYM_NAME_LEN = 512


# The symbol types perf keeps from kallsyms (T, W, D, B in either case) and
# their binding: lower case is local, W weak.
_BINDINGS = {"T": STB_GLOBAL, "D": STB_GLOBAL, "B": STB_GLOBAL, "W": STB_WEAK,
             "t": STB_LOCAL, "d": STB_LOCAL, "b": STB_LOCAL, "w": STB_WEAK}


class KernelSymbols:
    def __init__(self, symbols: Iterable[KernelSymbol] = ()) -> None:
        self._syms: list[KernelSymbol] | _LazySymbols | TextSymbols = sorted(
            symbols, key=lambda s: s.start)
        self._starts: Sequence[int] = [s.start for s in self._syms]
        self.warnings: list[str] = []
        # (the identity and the cache file's bytes the compiled parse laid
        # the table out in, to be written as they are)
        self._image: tuple[bytes, bytearray] | None = None
        # (the Python parse of a printable text: the text and where each
        # kept symbol's name is in it, for the cache file)
        self._name_at: tuple[bytes, list[int]] | None = None

    @classmethod
    def parse(cls, text: str | bytes, *, source: str = "kallsyms") -> "KernelSymbols":
        """A kallsyms text's table (bytes: UTF-8, undecodable bytes replaced)."""
        return cls._parse(text, source, "")

    @classmethod
    def _parse(cls, text: str | bytes | mmap.mmap, source: str, identity: str
               ) -> "KernelSymbols":
        """parse(), on the compiled path laid out as the cache file of the
        text known by `identity` holds it (text: also a file mapped, whose
        bytes the C checks itself)."""
        import mmap     # (here: a warm run that parses no text never needs it)
        compiled = symtab_core()
        raw: bytes | mmap.mmap | None = None
        if isinstance(text, str):
            raw = text.encode("ascii") if text.isascii() else None
        elif isinstance(text, (bytes, bytearray)):
            raw = bytes(text) if text.isascii() else None
        elif isinstance(text, mmap.mmap):
            raw = text
        if compiled is not None and raw is not None:
            ident = identity.encode("utf-8", "surrogateescape")
            parsed = compiled.parse_kallsyms(raw, kallsyms_text.HEADER.size, len(ident))
            if parsed is not None:
                return cls._compiled(parsed, source, ident, raw)
        if isinstance(text, mmap.mmap):
            text = bytes(text)
            raw = text if text.isascii() else None
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", "replace")
        elif not isinstance(text, str):
            text = ""
        # (a printable text is cached as its names' places in it)
        at_names = isinstance(raw, bytes) and kallsyms_text.printable(raw)
        starts, kinds, names, bad, name_at = _columns(text, at_names)
        table = cls()
        if starts and not any(starts):
            table.warnings.append(f"{source}: every address is 0 (kptr_restrict?)")
            return table
        # Kept as arrays and one string of names (120,000 KernelSymbols would
        # cost more than the parse); symbols are made when looked up.
        fixed, sizes, names, bindings, name_at = fixup_columns(
            starts, [0] * len(starts), list(map(_BINDINGS.__getitem__, kinds)), names,
            name_at, is_kallsyms=True)
        if at_names:
            table._name_at = (raw, name_at)  # type: ignore[assignment]
        modules = [""] * len(names)
        for i in itertools.compress(range(len(names)), map(operator.contains, names,
                                                            itertools.repeat("\t"))):
            name, _, module = names[i].partition("\t")
            names[i], modules[i] = name, module[1:-1]
        syms = _LazySymbols.build(names, array("Q", fixed), array("Q", sizes), modules,
                                  bytes(bindings))
        table._syms, table._starts = syms, syms.starts
        if bad:
            table.warnings.append(f"{source}: {bad} malformed lines skipped")
        return table

    @classmethod
    def _compiled(cls, parsed: tuple, source: str, ident: bytes, text: bytes | mmap.mmap
                  ) -> "KernelSymbols":
        """The table the compiled parse laid out as a cache file over its
        text (the same symbols as parse() makes in Python, the reference)."""
        bad, all_zero, count = parsed[:3]
        table = cls()
        if all_zero:
            table.warnings.append(f"{source}: every address is 0 (kptr_restrict?)")
            return table
        image = parsed[3]
        kallsyms_text.HEADER.pack_into(image, 0, kallsyms_text.MAGIC, count, len(text),
                                       len(ident))
        image[len(image) - len(ident):] = ident
        syms = TextSymbols.of(image, count, text)
        assert syms is not None     # (the C's own layout)
        table._syms, table._starts, table._image = syms, syms.starts, (ident, image)
        if bad:
            table.warnings.append(f"{source}: {bad} malformed lines skipped")
        return table

    @classmethod
    def from_file(cls, path: str, cache: CacheWhere = DEFAULT) -> "KernelSymbols":
        """Parse a kallsyms file; an unreadable one gives an empty table with
        a warning.  Parsed tables are kept in a cache file keyed by the text's
        hash (parsing a kernel's kallsyms, 100k lines and more, is what each
        first run of benchmarks/bench_script.py pays once per kernel),
        in `cache`: a CacheDir or a directory's path, None for no cache; by
        default perfdata's cache directory."""
        cache = CacheDir.of(cache)
        # A regular file (perf's build-id cache copy) is known by its identity
        # and is not even read when its table is cached; /proc/kallsyms (40
        # ms to read: the kernel writes it out line by line, and it changes
        # with modules and BPF programs) by the hash of its text.
        identity = _file_identity(path)
        data: bytes | str | mmap.mmap | None = None
        if identity is not None:
            cached = _load_cached(identity, cache, path)
            if cached is not None:
                return cached
            # (mapped, not read: its table's names are left in it)
            data = _map_text(path, identity)
            if data is not None and len(data) > MAX_KALLSYMS_SIZE:
                data = None
        if data is None:
            data = _read_kallsyms(path)
        if isinstance(data, str):
            t = cls()
            t.warnings.append(data)
            return t
        # (the text, as _load_cached finds it again: the file's path, or
        # the bytes read of /proc/kallsyms)
        text_of: str | bytes = path
        if identity is None:
            assert isinstance(data, bytes)      # (_read_kallsyms')
            identity, text_of = _text_identity(data), data
            cached = _load_cached(identity, cache, data)
            if cached is not None:
                return cached
        if _parsed_into_cache(data, identity, cache):
            cached = _load_cached(identity, cache, text_of)
            if cached is not None:
                return cached
        table = cls._parse(data, path, identity)
        if len(table) and not table.warnings:
            _save_cached(identity, table, cache)
        return table

    @classmethod
    def from_vmlinux(cls, path: str, build_id: str | None = None) -> "KernelSymbols":
        """The function symbols of a vmlinux ELF file (perf's --vmlinux).  A
        vmlinux of another build-id than the profiled kernel's is not used."""
        from ..elffile import Binary
        from .elfsymbols import read_elf_symbols
        binary = Binary(path)
        table = cls()
        if not binary.ok:
            table.warnings.append(f"{path}: {binary.error}")
            return table
        if build_id and binary.build_id and binary.build_id != build_id:
            table.warnings.append(f"{path}: build-id {binary.build_id}, but the profiled "
                                  f"kernel is {build_id}; not used")
            return table
        raw = read_elf_symbols(binary, ".symtab", "vmlinux")
        syms = [KernelSymbol(e[3], e[0], e[1] - e[0], None) for e in fixup_symbols(raw)]
        table = cls(syms)
        table.warnings.extend(binary.warnings if hasattr(binary, "warnings") else [])
        if not syms:
            table.warnings.append(f"{path}: no function symbols")
        return table

    def __len__(self) -> int:
        return len(self._syms)

    def __iter__(self) -> Iterator[KernelSymbol]:
        return iter(self._syms)

    def binding(self, start: int) -> int:
        """The binding perf 6.1 gives the symbol starting at start, from its
        kallsyms type (T, D, B global; t, d, b local; W, w weak); STB_GLOBAL
        where no type is known (a vmlinux's table, symbols given by hand)."""
        syms = self._syms
        i = bisect.bisect_left(self._starts, start)
        if not isinstance(syms, (_LazySymbols, TextSymbols)) or i >= len(self._starts) or \
                self._starts[i] != start:
            return STB_GLOBAL
        return syms.binding(i)

    def kernel_bounds(self) -> tuple[int, int] | None:
        """Where perf 6.1's kernel map runs once it has read a kallsyms
        (map__fixup_start, map__fixup_end): from the first symbol of the
        kernel itself (no module's) to the end of its last.  None for a
        table of no kallsyms text (a vmlinux's: perf keeps the MMAP's)."""
        syms = self._syms
        if isinstance(syms, TextSymbols):
            return syms.kernel_bounds()
        if not isinstance(syms, _LazySymbols):
            return None
        ends = syms.module_ends
        own = [i for i in range(len(ends)) if ends[i] == (ends[i - 1] if i else 0)]
        if not own:
            return None
        return syms.starts[own[0]], syms.starts[own[-1]] + syms.sizes[own[-1]]

    def bounds(self) -> tuple[Sequence[int], Sequence[int]]:
        """The symbols' starts and sizes, sorted by start: what lookup()
        searches (for a caller that searches them in compiled code and
        asks lookup() for the symbol it found)."""
        syms = self._syms
        if isinstance(syms, (_LazySymbols, TextSymbols)):
            return syms.starts, syms.sizes
        return self._starts, [s.size for s in syms]

    def lookup(self, address: int) -> KernelSymbol | None:
        if not isinstance(address, int):
            return None
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0:
            return None
        s = self._syms[i]
        return s if address < s.start + s.size else None


_BLANK_OR_END = ("", " ", "\t")


def _columns(text: str, at_names: bool = False
             ) -> tuple[list[int], list[str], list[str], int, list[int]]:
    """The kept symbols of a kallsyms text, as columns (addresses, types,
    names with perf's in-band module marker "\\t[module]"), how many lines
    were malformed, and with at_names (a printable text: its lines end at
    newlines only) where each name is in the text."""
    starts, kinds, names, name_at = [], [], [], []
    bad = 0
    line_at = 0
    for line in text.split("\n") if at_names else text.splitlines():
        at, line_at = line_at, line_at + len(line) + 1
        parts = line.split(None, 3)
        if len(parts) < 3 or len(parts[1]) != 1:
            if line.strip():
                bad += 1
            continue
        try:
            addr = int(parts[0], 16)
        except ValueError:
            bad += 1
            continue
        if not 0 <= addr < 1 << 64:     # (a sign, or past 64 bits: no address)
            bad += 1
            continue
        if parts[1] not in _BINDINGS:   # perf keeps types T, W, D and B only
            continue
        name = parts[2]
        if len(name) >= KSYM_NAME_LEN:
            bad += 1
            continue
        if len(parts) == 4:
            mod = parts[3].strip()
            if mod.startswith("[") and mod.endswith("]"):
                name = f"{name}\t{mod}"      # perf's own in-band marker
        starts.append(addr)
        kinds.append(parts[1])
        names.append(name)
        if at_names:
            # (the kernel's form, one blank after each of the first two
            # tokens, at once; else as split found the name)
            k = len(parts[0])
            if line.startswith(parts[0]) and line[k + 1:k + 2] == parts[1] and \
                    line[k + 3:k + 4] not in _BLANK_OR_END:
                name_at.append(at + k + 3)
            else:
                name_at.append(at + kallsyms_text.name_offset(line))
    return starts, kinds, names, bad, name_at


def _read_kallsyms(path: str) -> bytes | str:
    """The bytes of a kallsyms file, or a warning string."""
    import os
    import stat
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError("not a regular file")
        # /proc files report size 0: read with a cap instead of trusting it.
        with open(path, "rb") as f:
            data = f.read(MAX_KALLSYMS_SIZE + 1)
    except OSError as e:
        return f"{path}: {e.strerror or e}"
    if len(data) > MAX_KALLSYMS_SIZE:
        return f"{path}: larger than {MAX_KALLSYMS_SIZE} bytes"
    return data


# ---------------------------------------------------------------- the cache
# A parsed table is kept in one file the next run maps rather than reads (a
# kernel's table is several MB, read and unpacked by every process).  A
# printable text's (a real kallsyms): kallsyms_text.py's layout, the names
# left in the text.  Any other's: a header, four arrays of native 64-bit
# numbers (starts, sizes, where each name ends, where each module ends), a
# byte per symbol (its binding), then the names, the modules and the
# identity of the kallsyms text it was parsed from (UTF-8).  The identity
# is checked on reading, so the short key in the file's name may collide.
_MAGIC = 0x3573_6d79_736c_6c6b     # b"kllsyms5" read in native byte order
# magic, symbols, bytes of names, of modules, of identity
_HEADER = struct.Struct("=QQQQQ")


def _file_identity(path: str) -> str | None:
    """A regular file that is not under /proc, known by its real path, size,
    modification time and inode.  None for anything else."""
    import os
    import stat
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    if real.startswith("/proc/") or not stat.S_ISREG(st.st_mode) or st.st_size == 0:
        return None
    return _stat_identity(real, st)


def _stat_identity(real: str, st: os.stat_result) -> str:
    """_file_identity's text of a file's real path and its stat."""
    return "file\0%s\0%d\0%d\0%d\0%d" % (real, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


def _text_identity(data: bytes) -> str:
    """A kallsyms text read (/proc/kallsyms), known by its hash."""
    import hashlib
    return "sha1\0" + hashlib.sha1(data).hexdigest()


def _cache_file(identity: str) -> str:
    return "kallsyms-%s.bin" % identity_key(identity)


def _load_cached(identity: str, cache: CacheDir, text: str | bytes
                 ) -> "KernelSymbols | None":
    """The table cached for the kallsyms text known by identity; text: that
    text (read: /proc/kallsyms) or the path of the file it is, mapped if
    the table's names are in it."""
    mapped = cache.map(cache.file(_cache_file(identity)))
    if mapped is None:
        return None
    syms: _LazySymbols | TextSymbols | None
    try:
        if kallsyms_text.HEADER.unpack_from(mapped, 0)[0] == kallsyms_text.MAGIC:
            syms = _text_symbols(mapped, identity, text)
        else:
            syms = _mapped_symbols(mapped, identity)
    except (ValueError, TypeError, struct.error):
        return None
    if syms is None:
        return None
    table = KernelSymbols.__new__(KernelSymbols)
    table._syms, table._starts = syms, syms.starts
    table.warnings, table._image, table._name_at = [], None, None
    return table


def _text_symbols(mapped: "mmap.mmap", identity: str, text: str | bytes) -> TextSymbols | None:
    """The symbols of a cache file in kallsyms_text's layout, over their text."""
    magic, count, text_size, identity_size = kallsyms_text.HEADER.unpack_from(mapped, 0)
    end = kallsyms_text.HEADER.size + 21 * count
    if end + identity_size != len(mapped) or \
            mapped[end:].decode("utf-8", "surrogateescape") != identity:
        return None
    source = _map_text(text, identity) if isinstance(text, str) else text
    if source is None or len(source) != text_size:
        return None
    return TextSymbols.of(mapped, count, source)


def _map_text(path: str, identity: str) -> "mmap.mmap | None":
    """The kallsyms file at path mapped, if it is still the file known by
    identity (its size, modification time and inode: not changed since)."""
    import mmap
    import os
    try:
        real = os.path.realpath(path)
        with open(real, "rb") as f:
            if identity != _stat_identity(real, os.fstat(f.fileno())):
                return None
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None


def _mapped_symbols(mapped: "mmap.mmap", identity: str) -> "_LazySymbols | None":
    """The symbols of a cache file's bytes in the layout with the names, or
    None where it is not that file's or the ends of the names or modules
    pass their text."""
    magic, count, names_size, modules_size, identity_size = _HEADER.unpack_from(mapped, 0)
    modules_end = _HEADER.size + 33 * count + names_size + modules_size
    if magic != _MAGIC or modules_end + identity_size != len(mapped) or \
            mapped[modules_end:].decode("utf-8", "surrogateescape") != identity:
        return None
    at = _HEADER.size
    arrays_end = at + 4 * 8 * count
    bindings_end = arrays_end + count
    names_end = bindings_end + names_size
    numbers = memoryview(mapped)[at:arrays_end].cast("Q")
    starts, sizes, name_ends, module_ends = (numbers[i * count:(i + 1) * count]
                                             for i in range(4))
    if count and (name_ends[-1] > names_size or module_ends[-1] > modules_size):
        return None
    return _LazySymbols(_Text(mapped, bindings_end), name_ends, starts, sizes,
                        _Text(mapped, names_end), module_ends,
                        memoryview(mapped)[arrays_end:bindings_end])


class _Text:
    """The names (or modules) of a mapped table: text cut out by byte offsets."""
    __slots__ = ("data", "at")

    def __init__(self, data: "mmap.mmap | bytes | bytearray", at: int) -> None:
        self.data, self.at = data, at

    def __getitem__(self, cut: slice) -> str:
        return self.data[self.at + cut.start:self.at + cut.stop].decode("utf-8", "surrogateescape")


class _LazySymbols:
    """The symbols of a parsed or cached table, made into KernelSymbols only
    when asked for (a profile looks up a few hundred of a kernel's 120,000):
    the names stay one string (or the mapped cache file's bytes) with an
    array of where each ends, not 120,000 strings."""
    __slots__ = ("names", "name_ends", "starts", "sizes", "modules", "module_ends", "bindings")

    def __init__(self, names: str | _Text, name_ends: Sequence[int], starts: Sequence[int],
                 sizes: Sequence[int], modules: str | _Text, module_ends: Sequence[int],
                 bindings: Sequence[int]) -> None:
        self.names, self.name_ends = names, name_ends
        self.starts, self.sizes = starts, sizes
        self.modules, self.module_ends = modules, module_ends
        self.bindings = bindings          # (STB_*, a byte per symbol)

    def __len__(self) -> int:
        return len(self.starts)

    @classmethod
    def build(cls, names: list[str], starts: array[int], sizes: array[int],
              modules: list[str], bindings: bytes) -> _LazySymbols:
        """From lists of names and modules ('' for the kernel), arrays and
        the bindings."""
        return cls("".join(names), array("Q", itertools.accumulate(map(len, names))), starts, sizes,
                   "".join(modules), array("Q", itertools.accumulate(map(len, modules))),
                   bindings)

    @staticmethod
    def _cut(text: str | _Text, ends: Sequence[int], i: int) -> str:
        return text[ends[i - 1] if i else 0:ends[i]]

    def binding(self, i: int) -> int:
        return self.bindings[i]

    def __getitem__(self, i: int) -> KernelSymbol:
        if i < 0:
            i += len(self.starts)
        module = self._cut(self.modules, self.module_ends, i)
        return KernelSymbol(self._cut(self.names, self.name_ends, i), self.starts[i],
                            self.sizes[i], module or None)

    def __iter__(self) -> Iterator[KernelSymbol]:
        return (self[i] for i in range(len(self.starts)))


def _parsed_into_cache(text: bytes | mmap.mmap, identity: str, cache: CacheDir) -> bool:
    """The compiled parse of a kallsyms text laid out in its cache file
    itself, mapped (CacheDir.write_mapped: the 2.5 MB table is not made in
    memory and then written); True where the file is there.  A text the C
    leaves to Python, or whose table has a warning (malformed lines, every
    address 0) or no symbol, is not cached: False, and the caller parses."""
    compiled = symtab_core()
    if compiled is None or not cache.enabled:
        return False
    ident = identity.encode("utf-8", "surrogateescape")
    head = kallsyms_text.HEADER.size
    try:
        room = compiled.kallsyms_room(text, head, len(ident))
    except (ValueError, MemoryError):
        return False

    def fill(out: "mmap.mmap") -> int | None:
        parsed = compiled.parse_kallsyms(text, head, len(ident), out)
        if parsed is None or parsed[0] or parsed[1] or not parsed[2]:
            return None
        count = parsed[2]
        kallsyms_text.HEADER.pack_into(out, 0, kallsyms_text.MAGIC, count, len(text), len(ident))
        end = head + 21 * count
        out[end:end + len(ident)] = ident
        return end + len(ident)
    return cache.write_mapped(cache.file(_cache_file(identity)), room, fill)


def _save_cached(identity: str, table: "KernelSymbols", cache: CacheDir) -> None:
    if not cache.enabled:
        return
    mine = identity.encode("utf-8", "surrogateescape")
    if table._image is None and table._name_at is not None:
        # (the Python parse of a printable text: laid out as the C lays it out)
        syms = table._syms
        assert isinstance(syms, _LazySymbols)
        text, name_at = table._name_at
        image = kallsyms_text.layout(syms.starts, syms.sizes, syms.bindings,
                                     [syms.modules[(syms.module_ends[i - 1] if i else 0):
                                                   syms.module_ends[i]]
                                      for i in range(len(syms))], name_at)
        kallsyms_text.HEADER.pack_into(image, 0, kallsyms_text.MAGIC, len(syms), len(text), 0)
        table._image = (b"", image)
    if table._image is not None:
        # (laid out by the compiled parse; for another identity than its own,
        # the same bytes with this one)
        ident, image = table._image
        data: bytes | bytearray = image
        if ident != mine:
            header = list(kallsyms_text.HEADER.unpack_from(image, 0))
            header[-1] = len(mine)
            data = b"".join((kallsyms_text.HEADER.pack(*header),
                             memoryview(image)[kallsyms_text.HEADER.size:len(image) - len(ident)],
                             mine))
        cache.write(cache.file(_cache_file(identity)), data)
        return
    syms = table._syms
    # (what parse() made: its names one string; a table mapped from the
    # cache or made of KernelSymbols is not saved)
    if not isinstance(syms, _LazySymbols) or not isinstance(syms.names, str) or \
            not isinstance(syms.modules, str):
        return
    count = len(syms)
    names, name_ends = utf8_names(syms.names, syms.name_ends, "surrogateescape")
    modules, module_ends = utf8_names(syms.modules, syms.module_ends, "surrogateescape")
    data = b"".join((_HEADER.pack(_MAGIC, count, len(names), len(modules), len(mine)),
                     array("Q", syms.starts).tobytes(), array("Q", syms.sizes).tobytes(),
                     array("Q", name_ends).tobytes(), array("Q", module_ends).tobytes(),
                     bytes(syms.bindings), names, modules, mine))
    cache.write(cache.file(_cache_file(identity)), data)
