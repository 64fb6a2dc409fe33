"""Where symbolize keeps what it builds once per binary: `CacheDir`.

One directory holds every cache (the layout existing caches have):

    symtab/BI/LD-KINDS.table           symbol tables, by build-id (BI = its
                                       first two hex digits, LD the rest)
    symtab/BI/LD-KINDS-MODE.answers    what each address met was named, by
                                       table and naming mode (symbols/answers.py)
    inline/BI/LD-WHICH.json            inline names learnt per address
    symcache/BI/LD-WHICH-TAG.symc      the native inline index (symbols/native.py)
    elf/KE/Y-facts.marshal             an ELF file's sections, segments,
                                       build-id and machine, by its identity
                                       (device, inode, size, mtime: KEY)
    kallsyms-KEY.bin                   parsed kallsyms tables (mapped)
    vdso-BUILDID.so                    this machine's vdso image

By default it is $PERFDATA_CACHE_DIR, else $XDG_CACHE_HOME/perfdata, else
~/.cache/perfdata; an empty $PERFDATA_CACHE_DIR turns the cache off.  Every
function of symbolize that keeps a cache takes a CacheDir or a path string
(a library user's choice) or None (no cache), through CacheDir.of().

A CacheDir writes atomically (a reader never sees half a file), reads
without trusting (an absent, unreadable, oversized or not regular file is
None; the caller treats a file it cannot parse the same way and builds the
thing again), marks what it reads as used, and keeps the files it made
within `limit` bytes, least recently used first.  A disabled CacheDir reads
and writes nothing.
"""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    import mmap
    from collections.abc import Callable, Iterable
    from typing import TypeAlias

    # A cache file's contents: its bytes, or the parts it is made of.
    Data: TypeAlias = "bytes | bytearray | memoryview | list[bytes | bytearray | memoryview]"

    # What a function of symbolize that keeps a cache takes (CacheDir.of).
    CacheWhere: TypeAlias = "CacheDir | str | os.PathLike[str] | _Default | None"

#: Total size the cache's files may take; the least recently used go first.
CACHE_LIMIT = 512 << 20

# The directories (by kind) and the top-level file name prefixes a CacheDir
# makes: the bound removes these and nothing else (--symbol-cache may name a
# directory that holds other files too).
KINDS = ("symtab", "inline", "symcache", "elf")
TOP_LEVEL = ("kallsyms-", "vdso-")
_TMP = ".tmp-"


def user_cache_dir(name: str) -> str:
    """$XDG_CACHE_HOME/name, or ~/.cache/name (the XDG convention)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, name)


def perfdata_cache_dir() -> str | None:
    """The cache directory, or None when $PERFDATA_CACHE_DIR is set empty."""
    env = os.environ.get("PERFDATA_CACHE_DIR")
    if env is not None:
        return os.path.expanduser(env) if env.strip() else None
    return user_cache_dir("perfdata")


class _Default:
    """The `where` that means perfdata's default cache directory."""
    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFAULT"


#: CacheDir.of(DEFAULT): the directory perfdata_cache_dir() names.
DEFAULT = _Default()


class CacheDir:
    """One cache directory (root), or none (root None: disabled)."""

    def __init__(self, root: "str | os.PathLike | None" = None, limit: int = CACHE_LIMIT) -> None:
        self.root = os.path.expanduser(os.fspath(root)) if root else None
        self.limit = limit
        # The bound is applied at this object's first write, then again
        # whenever what it wrote since the last pass exceeds a sixteenth of
        # the limit: a scan of the tree per write would cost a first run more
        # than the writes, and the cache stays within limit + limit / 16.
        self._pruned = False
        self._written = 0

    @classmethod
    def default(cls) -> "CacheDir":
        """$PERFDATA_CACHE_DIR, else ~/.cache/perfdata (disabled when
        $PERFDATA_CACHE_DIR is set empty)."""
        return cls(perfdata_cache_dir())

    @classmethod
    def of(cls, where: CacheWhere) -> "CacheDir":
        """A CacheDir from what a caller gave: a CacheDir (itself), a path,
        DEFAULT (perfdata's default directory), or None / "" (disabled)."""
        if isinstance(where, CacheDir):
            return where
        if where is DEFAULT:
            return cls.default()
        return cls(where or None)  # type: ignore[arg-type]  # (DEFAULT is _Default's one instance)

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def __repr__(self) -> str:
        return "CacheDir(%r)" % self.root

    # Equal by directory: running_vdso() is memoized by the CacheDir given.
    def __eq__(self, other: object) -> bool:
        return isinstance(other, CacheDir) and (self.root, self.limit) == (other.root, other.limit)

    def __hash__(self) -> int:
        return hash((self.root, self.limit))

    # ------------------------------------------------------------ names
    def path_for(self, kind: str, build_id: str, suffix: str = "") -> str | None:
        """Where the entry of `kind` (one of KINDS) for a build-id (or
        another key of hex digits) is kept: kind/BI/LD+suffix; None when
        disabled."""
        if self.root is None:
            return None
        return os.path.join(self.root, kind, build_id[:2], build_id[2:] + suffix)

    def file(self, name: str) -> str | None:
        """A file at the top of the directory (name starts with one of
        TOP_LEVEL); None when disabled."""
        return os.path.join(self.root, name) if self.root is not None else None

    # ------------------------------------------------------------ reading
    @overload
    def read(self, path: str | None, max_size: int = ..., map_from: None = None
             ) -> bytes | None: ...

    @overload
    def read(self, path: str | None, max_size: int, map_from: int
             ) -> bytes | mmap.mmap | None: ...

    def read(self, path: str | None, max_size: int = 512 << 20,
             map_from: int | None = None) -> bytes | mmap.mmap | None:
        """The bytes of a cache file, or None if disabled, absent, not a
        regular file, too large or unreadable; a file of map_from bytes or
        more mapped read-only instead (what the caller reads of it is all it
        pays for; a file replaced or pruned while mapped stays as it was
        mapped).  The file counts as used."""
        if self.root is None or not path:
            return None
        got = _read_regular(path, max_size, map_from)
        if got is None:
            return None
        data, st = got
        self._touch(path, st)
        return data

    def map(self, path: str | None, max_size: int = 512 << 20) -> mmap.mmap | None:
        """A cache file mapped read-only, or None as read() gives it (an
        empty file too).  The file counts as used."""
        got = self.read(path, max_size, 0)
        return got if not isinstance(got, bytes) else None

    def read_json(self, path: str | None, max_size: int = 512 << 20) -> Any:
        """The JSON document in a cache file, or None (as read(), or damaged)."""
        import json
        data = self.read(path, max_size)
        if data is None:
            return None
        try:
            return json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None

    def used(self, path: str | None) -> None:
        """Mark a cache file read by other means (a mapped index) as used."""
        if self.root is None or not path:
            return
        try:
            self._touch(path, os.stat(path))
        except OSError:
            pass

    @staticmethod
    def _touch(path: str, st: os.stat_result) -> None:
        # The last use is the access time, set here (not left to the mount's
        # atime policy); the modification time stays when the file was made.
        now = time.time()
        if now - st.st_atime > 60:
            try:
                os.utime(path, ns=(time.time_ns(), st.st_mtime_ns))
            except OSError:
                pass

    # ------------------------------------------------------------ writing
    def write(self, path: str | None, data: Data) -> bool:
        """Write a cache file atomically (data: its bytes, or a list of the
        parts it is made of, written in turn); False when disabled or
        failing."""
        if self.root is None or not path or not write_atomic(path, data):
            return False
        return self._wrote(_size(data))

    def write_mapped(self, path: str | None, size: int,
                     fill: Callable[[mmap.mmap], int | None]) -> bool:
        """Write a cache file of at most size bytes atomically through a
        mapping of it: fill(mapped) lays the contents out in place and says
        how many bytes they are (None: none, nothing kept).  What a compiled
        reader lays out as it reads (the kernel's table, 2.5 MB) is then
        written once, into the page cache, not first into memory and then
        copied there: on this project's machines each page first touched
        costs more than the copy.  False when disabled or failing (the
        blocks are taken first, so a full disk fails here, not in the
        mapping)."""
        written = write_mapped(path, size, fill) if self.root is not None and path else None
        return written is not None and self._wrote(written)

    def _wrote(self, size: int) -> bool:
        """A file of size bytes written: the bound applied when due."""
        self._written += size
        if not self._pruned or self._written > self.limit // 16:
            self.prune()
        return True

    def write_json(self, path: str | None, doc: object) -> bool:
        import json
        try:
            text = json.dumps(doc)
        except (TypeError, ValueError):
            return False
        return self.write(path, text.encode())

    # ------------------------------------------------------------ the bound
    def entries(self) -> list[tuple[float, int, str]]:
        """(last use, size, path) of every file this cache made."""
        if self.root is None:
            return []
        out: list[tuple[float, int, str]] = []
        old_tmp = time.time() - 3600

        def add(entry: os.DirEntry[str]) -> None:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                return
            # A temporary file of a write under way is not the bound's to
            # remove; one left an hour ago by a killed run is.
            if entry.name.startswith(_TMP) and st.st_mtime > old_tmp:
                return
            out.append((max(st.st_atime, st.st_mtime), st.st_size, entry.path))

        try:
            top = list(os.scandir(self.root))
        except OSError:
            return []
        for entry in top:
            if entry.name in KINDS and entry.is_dir(follow_symlinks=False):
                try:
                    for sub in os.scandir(entry.path):
                        if sub.is_dir(follow_symlinks=False):
                            for f in os.scandir(sub.path):
                                if f.is_file(follow_symlinks=False):
                                    add(f)
                except OSError:
                    continue
            elif entry.name.startswith(TOP_LEVEL + (_TMP,)) and \
                    entry.is_file(follow_symlinks=False):
                add(entry)
        return out

    def size(self) -> int:
        """Bytes the cache's files take."""
        return sum(size for _, size, _ in self.entries())

    def prune(self, limit: int | None = None) -> None:
        """Keep the cache's files within `limit` (by default self.limit)
        bytes, removing the least recently used first."""
        limit = self.limit if limit is None else limit
        self._pruned = True
        self._written = 0
        files = self.entries()
        total = sum(size for _, size, _ in files)
        files.sort()
        for _, size, path in files:
            if total <= limit:
                break
            try:
                os.unlink(path)
                total -= size
            except OSError:
                pass


def identity_key(identity: str) -> str:
    """The key in a cache file's name for what it was made from (a file's
    identity, a text's hash): 16 hex digits of two checksums, short but not
    unique, so the file holds the identity too and its reader checks it."""
    import zlib
    raw = identity.encode("utf-8", "surrogateescape")
    return "%08x%08x" % (zlib.crc32(raw), zlib.adler32(raw))


def code_tag(kind: str, modules: Iterable[str]) -> str:
    """The tag a cache entry of `kind` must carry to be used: a digest of the
    symbolize modules whose code decides what it holds (a change to any of
    them makes every entry stale)."""
    # Two checksums (64 bits), not a cryptographic hash: this runs in every
    # process that reads a cache, and hashlib loads OpenSSL (3 ms).
    import zlib
    crc, adler = 0, 1
    here = os.path.dirname(os.path.abspath(__file__))
    for name in modules:
        try:
            with open(os.path.join(here, name), "rb") as f:
                data = f.read()
        except OSError:
            data = name.encode()
        crc, adler = zlib.crc32(data, crc), zlib.adler32(data, adler)
    return "perfdata-%s-%08x%08x" % (kind, crc, adler)


def _parts(data: Data) -> list[bytes | bytearray | memoryview]:
    return data if isinstance(data, list) else [data]


def _size(data: Data) -> int:
    """The bytes of data, or of its parts."""
    return sum(memoryview(part).nbytes for part in _parts(data))


def write_atomic(path: str, data: Data) -> bool:
    """Write data (bytes, or a list of parts written in turn) to path so
    that a reader never sees half a file (a temporary file renamed over it);
    False, and nothing left behind, when that fails."""
    def fill(fd: int) -> int:
        with os.fdopen(fd, "wb", closefd=False) as f:
            for part in _parts(data):
                f.write(part)
        return 0
    return _renamed_into_place(path, fill) is not None


def write_mapped(path: str, size: int, fill: Callable[[mmap.mmap], int | None]) -> int | None:
    """CacheDir.write_mapped's file: how many bytes it holds, or None (and
    nothing left behind)."""
    import mmap

    def laid_out(fd: int) -> int:
        os.posix_fallocate(fd, 0, size)
        with mmap.mmap(fd, size) as mapped:
            kept = fill(mapped)
        if kept is None or not 0 < kept <= size:
            raise ValueError("nothing to keep")
        os.ftruncate(fd, kept)
        return kept
    return _renamed_into_place(path, laid_out)


def _renamed_into_place(path: str, write: Callable[[int], int]) -> int | None:
    """write(fd) on a new temporary file beside path, then the file renamed
    to path: what write returned, or None (and nothing left behind) where
    any of it failed."""
    tmp = None
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = _new_temporary(os.path.dirname(path))
        try:
            got = write(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return got
    except (OSError, ValueError, BufferError):
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return None


def _new_temporary(folder: str) -> tuple[int, str]:
    """A new file of this user's alone in folder, named _TMP and a random
    part, opened for writing: what tempfile.mkstemp makes, without the 5-13
    ms its import (shutil, random, bz2, lzma) costs a first run's start."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(folder, _TMP + os.urandom(6).hex())
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"{folder}: no temporary name left")


@overload
def read_file(path: str, max_size: int = ..., map_from: None = None) -> bytes | None: ...


@overload
def read_file(path: str, max_size: int, map_from: int) -> bytes | mmap.mmap | None: ...


def read_file(path: str, max_size: int = 512 << 20,
              map_from: int | None = None) -> bytes | mmap.mmap | None:
    """The bytes of the file at path, or None if absent, not a regular file,
    too large or unreadable; a file of map_from bytes or more mapped
    read-only instead."""
    got = _read_regular(path, max_size, map_from)
    return got[0] if got is not None else None


def _read_regular(path: str, max_size: int, map_from: int | None = None
                  ) -> tuple[bytes | mmap.mmap, os.stat_result] | None:
    import stat
    try:
        # (stat before open: opening a FIFO would block)
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_size:
            return None
        if map_from is not None and st.st_size >= map_from:
            import mmap
            if not st.st_size:
                return None             # (nothing to map)
            with open(path, "rb") as f:
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            if len(mapped) > max_size:
                mapped.close()
                return None
            return mapped, st
        # (read the size stat gave, not max_size: a read of n bytes first
        # allocates n; one byte more tells a file that grew meanwhile)
        with open(path, "rb", buffering=0) as f:
            data = f.read(st.st_size + 1)
    except (OSError, ValueError):
        return None
    if len(data) > st.st_size:          # changed as it was read: not to be trusted
        return None
    return data, st
