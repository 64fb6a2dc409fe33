"""`Binary`: one ELF file opened safely, read lazily.

Never raises out of its constructor or properties for bad input: the reason a
file could not be used is kept in `error` (text) and `error_kind` (a word), and
properties answer None or empty. pyelftools raises many exception types on
malformed files (ELFError, construct errors, struct.error, ValueError,
IndexError, ...), so every call into it goes through `_guard`.
"""
from __future__ import annotations

import io
import mmap
import os
import stat
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    from .cachedir import CacheDir

    T = TypeVar("T")
    D = TypeVar("D")

from .buildid import parse_build_id_notes
from .cachedir import identity_key
from .elffacts import LoadSegment, SectionHeader, facts_document, facts_from_bytes
from .elfcompress import decompress_section
from .elfheader import ElfHeader
from .elflinks import SupplementaryLink, read_debuglink, read_supplementary

MAX_BINARY_SIZE = 4 << 30
# How a binary is opened: never waiting on a FIFO put in its place.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
# Reads of at least this many bytes give their pages of the mapping back
# once copied (Binary.read).
RELEASE_AFTER_COPY = 64 << 10

SHT_NOBITS = 8
SHT_NOTE = 7
SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHF_COMPRESSED = 0x800
PT_LOAD = 1
PT_NOTE = 4
PF_X = 1                # a segment's p_flags: executable
SHN_XINDEX = 0xFFFF


class Binary:
    """An ELF file on disk (or in memory, for MiniDebugInfo).

    `path` is what the caller named; `ok` says whether it opened as ELF.
    """

    def __init__(self, path: str, *, max_size: int = MAX_BINARY_SIZE,
                 data: bytes | None = None, facts: CacheDir | None = None) -> None:
        """facts: a CacheDir keeping what a run asks of every binary (the
        sections, segments, build-id and machine) by the file's identity,
        so that the next run reads them instead of the ELF headers (see
        keep_facts)."""
        self.path = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else str(path)
        self.error: str | None = None
        self.error_kind: str | None = None
        self.warnings: list[str] = []
        self.size = 0
        # (None only while not ok, or closed: nothing reads it then)
        self._buf: bytes | mmap.mmap = None  # type: ignore[assignment]  # mmap or bytes: the whole file
        self._elf: ElfHeader | None = None
        self._elf_failed = False
        self._sections: list[SectionHeader] | None = None
        self._by_name: dict[str, SectionHeader] | None = None
        self._segments: list[LoadSegment] | None = None
        self._build_id: str | None | bool = False   # False: not computed yet
        self._machine: str | None | bool = False    # False: not computed yet
        # (its supplementary link, the identity it is linked by; None: not read yet)
        self._supplementary: tuple[SupplementaryLink | None, str | None] | None = None
        # Where this file's facts are cached, while they are not read from it.
        self._facts_at: tuple[CacheDir, str, str] | None = None
        # (device, inode) of the file mapped; the file read_code() reads,
        # opened at its first call (None: not yet; False: none, map instead)
        self._identity: tuple[int, int] | None = None
        self._code_file: io.FileIO | None | bool = None
        if data is not None:
            self._buf = bytes(data)
            self.size = len(self._buf)
            self._check_magic()
        else:
            st = self._open_file(max_size)
            if st is not None and self.ok and facts is not None and facts.enabled:
                self._load_facts(facts, st)

    # ----- opening -------------------------------------------------------
    def _fail(self, kind: str, reason: str) -> None:
        self.error_kind = kind
        self.error = f"{self.path}: {reason}"

    def _open_file(self, max_size: int) -> os.stat_result | None:
        """Open and map the file; its status, or None when it failed."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._fail("missing", "no such file")
            return None
        except OSError as e:
            self._fail("unreadable", e.strerror or str(e))
            return None
        # A FIFO would block open(), a device could be endless: refuse both
        # before opening.
        if not stat.S_ISREG(st.st_mode):
            self._fail("not-regular", "not a regular file")
            return None
        if st.st_size > max_size:
            self._fail("too-large", f"{st.st_size} bytes is over the {max_size} limit")
            return None
        try:
            fd = os.open(self.path, _OPEN_FLAGS)
        except OSError as e:
            self._fail("unreadable", e.strerror or str(e))
            return None
        try:
            st = os.fstat(fd)      # the file may have been swapped since stat()
            if not stat.S_ISREG(st.st_mode):
                self._fail("not-regular", "not a regular file")
                return None
            self.size = st.st_size
            self._identity = (st.st_dev, st.st_ino)
            if self.size < 16:
                self._fail("not-elf", "too short to be ELF")
                return None
            try:
                self._buf = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as e:
                self._fail("unreadable", f"mmap failed: {e}")
                return None
        finally:
            os.close(fd)
        self._check_magic()
        return st

    def _check_magic(self) -> None:
        buf = self._buf
        if self.size < 16 or buf[:4] != b"\x7fELF":
            return self._fail("not-elf", "not an ELF file")
        if buf[4] not in (1, 2) or buf[5] not in (1, 2):
            return self._fail("not-elf", "bad ELF class or data encoding")
        hdr_size = 64 if buf[4] == 2 else 52
        if self.size < hdr_size:
            return self._fail("truncated", "ELF header cut short")

    @property
    def ok(self) -> bool:
        return self.error is None

    def close(self) -> None:
        if isinstance(self._code_file, io.FileIO):
            self._code_file.close()
        self._code_file = False
        if isinstance(self._buf, mmap.mmap):
            try:
                self._buf.close()
            except (BufferError, ValueError):
                pass      # a memoryview still refers to it; the GC will do it
        self._buf = None  # type: ignore[assignment]  # (closed)
        self._elf = None

    def __repr__(self) -> str:
        state = "ok" if self.ok else self.error_kind
        return f"<Binary {self.path!r} {state}>"

    # ----- raw bytes --------------------------------------------------------
    @property
    def is_64(self) -> bool:
        return bool(self._buf is not None and self._buf[4] == 2)

    @property
    def little_endian(self) -> bool:
        return bool(self._buf is not None and self._buf[5] == 1)

    def _within(self, offset: int, size: int) -> bool:
        return self.ok and offset >= 0 and size >= 0 and offset + size <= self.size

    def read(self, offset: int, size: int) -> bytes | None:
        """size bytes at offset, or None when that runs past the file."""
        if not self._within(offset, size):
            return None
        data = self._buf[offset:offset + size]
        if size >= RELEASE_AFTER_COPY:
            self.let_go(offset, size)
        return data

    def view(self, offset: int, size: int) -> memoryview | bytes | None:
        """As read(), without a copy: a view of the mapping, which the
        caller releases (then let_go() gives its pages back)."""
        if not self._within(offset, size):
            return None
        buf = self._buf
        if isinstance(buf, mmap.mmap):
            return memoryview(buf)[offset:offset + size]
        return buf[offset:offset + size]

    def let_go(self, offset: int, size: int) -> None:
        """The mapping's pages at offset given back (MADV_DONTNEED: they
        stay in the page cache): what was read whole (a symbol table,
        .eh_frame, a DWARF section) need not stay resident too."""
        buf = self._buf
        if not isinstance(buf, mmap.mmap) or not self._within(offset, size):
            return
        start = offset - offset % mmap.PAGESIZE
        try:
            buf.madvise(mmap.MADV_DONTNEED, start, offset + size - start)
        except (AttributeError, OSError, ValueError):
            pass            # (no madvise here: the pages stay, as they did)

    def read_code(self, offset: int, size: int) -> bytes | None:
        """As read(), for a few bytes here and there (the instruction before
        each return address a profile meets), read from the file rather
        than through the mapping: a page fault there maps the 64 KiB around
        it (the kernel's fault-around), and a compiler's return addresses,
        spread over its text, kept much of cc1 resident on a DWARF
        recording of a build."""
        if not self._within(offset, size):
            return None
        f = self._code_file
        if f is None:
            f = self._code_file = self._open_for_code()
        if f:
            try:
                data = os.pread(f.fileno(), size, offset)  # type: ignore[union-attr]
                if len(data) == size:
                    return data
            except OSError:
                pass
        return self.read(offset, size)

    def _open_for_code(self) -> io.FileIO | bool:
        """The mapped file opened again for read_code(), or False (the path
        now names another file, or none: the mapping is read instead)."""
        if not isinstance(self._buf, mmap.mmap) or self._identity is None:
            return False
        try:
            fd = os.open(self.path, _OPEN_FLAGS)
        except OSError:
            return False
        f = io.FileIO(fd, "r", closefd=True)   # (closed with it, or when collected)
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) == self._identity:
                return f
        except OSError:
            pass
        f.close()
        return False

    def warn(self, message: str) -> None:
        if len(self.warnings) < 100:       # a damaged file can fail everywhere
            self.warnings.append(f"{self.path}: {message}")

    def _guard(self, what: str, fn: Callable[[], T], default: D | None = None) -> T | D | None:
        try:
            return fn()
        except RecursionError:
            self.warn(f"{what}: too deeply nested")
        except Exception as e:  # pyelftools raises many types on bad input
            self.warn(f"{what}: {type(e).__name__}: {e}")
        return default

    # ----- pyelftools -----------------------------------------------------
    @property
    def elf(self) -> ElfHeader | None:
        """The ELF header and pyelftools' structs for this file's class and
        byte order (an ElfHeader), built on first use; None if it fails."""
        if self._elf is None and self.ok and not self._elf_failed:
            self._elf = self._guard("ELF header", lambda: ElfHeader(self._buf))
            if self._elf is None:
                self._elf_failed = True
                self._fail("truncated", "ELF header could not be parsed")
        return self._elf

    def _header(self) -> Any:
        elf = self.elf
        return elf.header if elf is not None else None

    @property
    def elf_type(self) -> str | None:
        h = self._header()
        return str(h["e_type"]) if h is not None else None

    @property
    def machine(self) -> str | None:
        """e_machine as pyelftools names it ('EM_X86_64')."""
        if self._machine is False:
            h = self._header()
            self._machine = str(h["e_machine"]) if h is not None else None
        return self._machine  # type: ignore[return-value]  # (computed: no longer False)

    # ----- sections -------------------------------------------------------
    def struct_layout(self, name: str) -> tuple[str, list[str]]:
        """(struct format, field names) of one of pyelftools' ELF structs for
        this file's class and byte order (`Elf_Sym`, `Elf_Shdr` ...), derived
        from its description: tables are then unpacked with one
        struct.iter_unpack instead of a construct parse per entry."""
        known = self.elf.layout(name) if self.elf is not None else None
        if known is not None:
            return known                     # (elflayouts.py: pyelftools', by test)
        fmt, names = "<" if self.little_endian else ">", []
        for sub in getattr(self.elf.structs, name).subcons:  # type: ignore[union-attr]  # (parsed)
            inner = sub
            while not hasattr(inner, "packer") and hasattr(inner, "subcon"):
                inner = inner.subcon         # an enum adapter over a number
            if hasattr(inner, "packer"):
                fmt += inner.packer.format[-1:]
            else:                            # bit fields in whole bytes
                fmt += {1: "B", 2: "H", 4: "I", 8: "Q"}[sub.sizeof()]
            names.append(sub.name)
        return fmt, names

    def _read_sections(self) -> list[SectionHeader]:
        elf = self.elf
        if elf is None:
            return []
        h = elf.header
        shnum, shoff, shentsize = h["e_shnum"], h["e_shoff"], h["e_shentsize"]
        fmt, names = self.struct_layout("Elf_Shdr")
        layout = struct.Struct(fmt)
        if shoff <= 0 or shentsize < layout.size:
            return []
        first = None
        if shoff + layout.size <= self.size:
            first = dict(zip(names, layout.unpack_from(self._buf, shoff)))
        if shnum == 0 and first is not None:
            shnum = first["sh_size"]        # extended numbering: the count is in section 0
        # Check the table lies within the file before walking it: a bogus
        # e_shnum would otherwise cost a long loop.
        if shnum == 0:
            return []
        if shoff + shnum * shentsize > self.size:
            self.warn("section header table runs past the end of the file")
            return []
        rows = [dict(zip(names, layout.unpack_from(self._buf, shoff + i * shentsize)))
                for i in range(shnum)]
        strndx = h["e_shstrndx"]
        if strndx == SHN_XINDEX:
            strndx = rows[0]["sh_link"]
        strtab = None
        if isinstance(strndx, int) and 0 <= strndx < shnum:
            sh = rows[strndx]
            strtab = self.read(sh["sh_offset"], sh["sh_size"])
            if strtab is None:
                self.warn("section name table runs past the end of the file")
        out = []
        for i, sh in enumerate(rows):
            name = ""
            at = sh["sh_name"]
            if strtab is not None and 0 <= at < len(strtab):
                end = strtab.find(b"\0", at)
                name = bytes(strtab[at:end if end >= 0 else len(strtab)]).decode("utf-8",
                                                                                 "replace")
            out.append(SectionHeader(i, name, sh["sh_type"], sh["sh_flags"], sh["sh_addr"],
                                     sh["sh_offset"], sh["sh_size"], sh["sh_link"],
                                     sh["sh_info"], sh["sh_entsize"]))
        return out

    @property
    def sections(self) -> list[SectionHeader]:
        if self._sections is None:
            self._sections = self._guard("sections", self._read_sections, []) or []
        return self._sections

    def get_section(self, name: str) -> SectionHeader | None:
        if self._by_name is None:
            self._by_name = {}
            for s in self.sections:
                self._by_name.setdefault(s.name, s)
        return self._by_name.get(name)

    def section_by_index(self, index: int) -> SectionHeader | None:
        secs = self.sections
        if 0 <= index < len(secs) and secs[index].index == index:
            return secs[index]
        for s in secs:
            if s.index == index:
                return s
        return None

    def section_data(self, sec: SectionHeader | str | None) -> bytes | None:
        """Contents of a section (decompressed if SHF_COMPRESSED), or None."""
        data = self.section_view(sec, copy=True)
        return bytes(data) if isinstance(data, memoryview) else data

    def section_view(self, sec: SectionHeader | str | None, copy: bool = False
                     ) -> memoryview | bytes | None:
        """section_data(), a view() where it is stored as it is (copy: read())."""
        if isinstance(sec, str):
            sec = self.get_section(sec)
        if sec is None or sec.type == SHT_NOBITS:
            return None
        if sec.flags & SHF_COMPRESSED:
            return self._guard(f"section {sec.name}", lambda: decompress_section(self, sec))
        data = (self.read if copy else self.view)(sec.offset, sec.size)
        if data is None:
            self.warn(f"section {sec.name} runs past the end of the file")
        return data

    # ----- segments and addresses ----------------------------------------
    def _read_segments(self) -> list[LoadSegment]:
        return [LoadSegment(seg["p_vaddr"], seg["p_memsz"], seg["p_offset"],
                            seg["p_filesz"], seg["p_flags"], seg["p_align"])
                for seg in self._program_headers() if seg["p_type"] == PT_LOAD]

    def _program_headers(self) -> list[dict]:
        """Every program header, as a dict of pyelftools' field names."""
        elf = self.elf
        if elf is None:
            return []
        h = elf.header
        phnum, phoff, phentsize = h["e_phnum"], h["e_phoff"], h["e_phentsize"]
        if phnum == 0 or phoff + phnum * phentsize > self.size:
            return []
        fmt, names = self.struct_layout("Elf_Phdr")
        layout = struct.Struct(fmt)
        if phentsize < layout.size:
            self.warn("program headers of %d bytes are too short" % phentsize)
            return []
        return [dict(zip(names, layout.unpack_from(self._buf, phoff + i * phentsize)))
                for i in range(phnum)]

    @property
    def load_segments(self) -> list[LoadSegment]:
        if self._segments is None:
            self._segments = self._guard("program headers", self._read_segments, []) or []
        return self._segments

    def _segment_for_offset(self, file_offset: int) -> LoadSegment | None:
        segs = self.load_segments
        for s in segs:
            if s.offset <= file_offset < s.offset + s.filesz:
                return s
        # A mapping starts on a page boundary below its segment's p_offset, and
        # runs on past p_filesz into the zero-filled (bss) part; accept those.
        for s in segs:
            if s.offset & ~(s.page - 1) <= file_offset < s.offset + max(s.memsz, s.filesz):
                return s
        return None

    def file_offset_to_svma(self, file_offset: int) -> int | None:
        if not isinstance(file_offset, int) or file_offset < 0:
            return None
        s = self._segment_for_offset(file_offset)
        if s is None:
            return None
        return s.vaddr + (file_offset - s.offset)

    def svma_to_file_offset(self, svma: int) -> int | None:
        if not isinstance(svma, int):
            return None
        for s in self.load_segments:
            if s.vaddr <= svma < s.vaddr + s.filesz:
                return s.offset + (svma - s.vaddr)
        return None

    def mapping_bias(self, map_start: int, map_pgoff: int, map_length: int) -> int | None:
        """avma - svma for the code of a mapping of this file ([map_start,
        map_start + map_length) holding the file from map_pgoff), or None.

        The loader maps each PT_LOAD from the page below its p_offset.  GNU
        ld puts every segment at a page-aligned offset, but lld does not
        (its default, and rustc's since 1.90): a text segment at p_offset
        0x650, p_vaddr 0x1650 is mapped from offset 0, where the read-only
        segment lies, whose bias is another.  So the bias is the one of the
        executable segment that shares the most bytes with the mapping; a
        mapping that holds none (data) is taken at its first byte."""
        end = map_pgoff + map_length
        best: tuple[int, LoadSegment] | None = None
        for s in self.load_segments:
            if not s.flags & PF_X:
                continue
            shared = min(end, s.offset + s.filesz) - max(map_pgoff, s.offset)
            if shared > 0 and (best is None or shared > best[0]):
                best = (shared, s)
        if best is None:
            svma = self.file_offset_to_svma(map_pgoff)
            return None if svma is None else map_start - svma
        s = best[1]
        return map_start - map_pgoff - (s.vaddr - s.offset)

    def avma_to_svma(self, avma: int, map_start: int, map_pgoff: int) -> int | None:
        """Address in the process -> address in the file, through the mapping
        (start, page offset) the address fell in, as perf's MMAP records give."""
        if not all(isinstance(v, int) for v in (avma, map_start, map_pgoff)) or avma < map_start:
            return None
        return self.file_offset_to_svma(avma - map_start + map_pgoff)

    # ----- notes ----------------------------------------------------------
    @property
    def build_id(self) -> str | None:
        if self._build_id is False:
            self._build_id = self._guard("build-id note", self._find_build_id)
        return self._build_id  # type: ignore[return-value]  # (computed: no longer False)

    def _find_build_id(self) -> str | None:
        le = self.little_endian
        for s in self.sections:
            if s.type == SHT_NOTE:
                data = self.section_data(s)
                if data:
                    bid = parse_build_id_notes(data, le)
                    if bid:
                        return bid
        for seg in self._program_headers():
            if seg["p_type"] == PT_NOTE:
                data = self.read(seg["p_offset"], seg["p_filesz"])
                if data:
                    bid = parse_build_id_notes(data, le)
                    if bid:
                        return bid
        return None

    @property
    def debuglink(self) -> tuple[str, int] | None:
        """(file name, CRC32) from .gnu_debuglink, or None."""
        return read_debuglink(self)

    @property
    def supplementary_link(self) -> SupplementaryLink | None:
        """The supplementary file this file's DWARF refers to (`dwz -m`:
        the DIEs and strings several files share moved there), from
        .gnu_debugaltlink or DWARF 5's .debug_sup (is_supplementary 0);
        None when there is none, or this file is itself the supplementary
        one."""
        return self._read_supplementary()[0]

    @property
    def supplementary_identity(self) -> str | None:
        """What a file that refers to this one as its supplementary file
        names it by: the checksum of its own .debug_sup (is_supplementary
        1; dwz --dwarf-5 writes no build-id note there), else its build-id."""
        return self._read_supplementary()[1]

    def _read_supplementary(self) -> tuple[SupplementaryLink | None, str | None]:
        """(supplementary_link, supplementary_identity), read once."""
        if self._supplementary is None:
            link, identity = read_supplementary(self)
            self._supplementary = (link, identity or self.build_id)
        return self._supplementary

    # ----- facts kept across runs ----------------------------------------
    def _load_facts(self, cache: CacheDir, st: os.stat_result) -> None:
        """This file's facts from the cache, if kept for this very file
        (device, inode, size, modification time: the identity is checked,
        the key in the cache file's name may collide).  Not the change
        time: a hard link made to the file (perf's build-id cache makes
        them) changes it."""
        identity = "%d:%d:%d:%d" % (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        where = cache.path_for("elf", identity_key(identity), "-facts.marshal")
        if where is None:
            return
        facts = facts_from_bytes(cache.read(where, 1 << 20), identity)
        if facts is None:
            self._facts_at = (cache, where, identity)
            return
        self._machine, self._sections, self._segments, self._build_id = facts

    def keep_facts(self) -> None:
        """Keep in the cache (given as `facts`) what a run asks of every
        binary it uses, unless they came from there or the file is damaged
        (a warning said so: the next run reads it again)."""
        if self._facts_at is None or not self.ok:
            return
        cache, where, identity = self._facts_at
        self._facts_at = None
        # (what the symbolizer reads of every file it keeps; the segments
        # only of the binary it looks addresses up in)
        machine, sections, build_id = self.machine, self.sections, self.build_id
        if self.warnings or not self.ok:
            return
        segments = self.load_segments
        if self.warnings:
            # Damaged program headers: said if and where the run reads them.
            self.warnings.clear()
            self._segments = None
            return
        cache.write(where, facts_document(identity, machine, sections, segments, build_id))

    # ----- convenience ----------------------------------------------------
    def has_section(self, name: str) -> bool:
        return self.get_section(name) is not None

    @property
    def has_code(self) -> bool:
        """False for a separate debug file (its .text is NOBITS)."""
        t = self.get_section(".text")
        return t is not None and t.type != SHT_NOBITS


def open_binary(path: str, **kw: Any) -> Binary:
    """Binary(path): never raises; check `.ok` / `.error`."""
    return Binary(path, **kw)
