"""JIT code described in a jitdump file (jit-PID.dump): what a JIT writes for
`perf inject --jit` (CPython 3.13 `-X perf_jit`, node `--perf-prof`, the
JVM's perf agent), read directly, so a recording that was never injected
is named too.

The layout is tools/perf/util/jitdump.h's: a header, then records of a
common prefix (id, total size, timestamp).  CODE_LOAD says that code named
`name` of `code_size` bytes was placed at `code_addr` at `timestamp`;
CODE_MOVE that the code of `code_index` moved; CODE_UNWINDING_INFO carries
the .eh_frame and .eh_frame_hdr of the next load's code (as perf inject
puts them in that load's jitted-PID-N.so, after the code, 8-aligned: see
symbolize.unwind.jit).  The other records (debug info, close) are skipped
by their size.

A JIT reuses its code space, so an address may hold several functions in
turn: at a time, the address is the last load's (or move's) at or before
that time that covers it; without a time, the last one in the file.  (perf
inject makes one ELF file per load and an MMAP2 record at its timestamp:
the same answer.)
"""
from __future__ import annotations

import bisect
import functools
import os
from typing import Any, NamedTuple

from construct import ConstructError, CString, Int32ub, Int32ul, Int64ub, Int64ul, Struct

from .perfmap import read_regular_file

MAX_JITDUMP_SIZE = 1 << 30
#: how many pieces of the address space a load covers, on average at most
#: (the loads of a real JIT overlap little; see JitDump)
COVER_ENTRIES_PER_LOAD = 64
JITDUMP_MAGIC = 0x4A695444            # "JiTD" in the writer's byte order
CODE_LOAD, CODE_MOVE, CODE_UNWINDING_INFO = 0, 1, 4
#: bytes of a CODE_UNWINDING_INFO body before its data (three u64 sizes)
_UNWINDING_HEAD = 24
#: header flag: the timestamps are the architecture's counter (TSC), not a clock
FLAG_ARCH_TIMESTAMP = 1


def _schemas(u32: Any, u64: Any) -> tuple[Struct, Struct, Struct, Struct, Struct]:
    """The layouts in one byte order: header, record prefix, CODE_LOAD,
    CODE_MOVE and CODE_UNWINDING_INFO bodies (after the prefix; the
    unwinding data follows the last)."""
    header = Struct(
        "magic" / u32, "version" / u32, "total_size" / u32, "elf_mach" / u32,
        "pad1" / u32, "pid" / u32, "timestamp" / u64, "flags" / u64)
    prefix = Struct("id" / u32, "total_size" / u32, "timestamp" / u64)
    load = Struct(
        "pid" / u32, "tid" / u32, "vma" / u64, "code_addr" / u64, "code_size" / u64,
        "code_index" / u64, "name" / CString("utf8"))
    move = Struct(
        "pid" / u32, "tid" / u32, "vma" / u64, "old_code_addr" / u64,
        "new_code_addr" / u64, "code_size" / u64, "code_index" / u64)
    unwinding = Struct(
        "unwinding_size" / u64, "eh_frame_hdr_size" / u64, "mapped_size" / u64)
    return header, prefix, load, move, unwinding


@functools.lru_cache(maxsize=None)
def _compiled(big_endian: bool) -> tuple:
    """The schemas compiled (twice the records a second), on first use."""
    schemas = _schemas(Int32ub, Int64ub) if big_endian else _schemas(Int32ul, Int64ul)
    return tuple(s.compile() for s in schemas)

_PREFIX_SIZE = 16
#: e_machine values of 32-bit architectures (EM_386, EM_ARM, EM_MIPS,
#: EM_PPC): the address size of the unwinding info's absolute pointers
_ELF_MACHINES_32 = frozenset((3, 40, 8, 20))
_HEADER_MIN = 40


class JitUnwind(NamedTuple):
    """A code load's unwinding info (CODE_UNWINDING_INFO): .eh_frame then
    .eh_frame_hdr, as the JIT wrote them for the layout of perf inject's
    ELF file (see symbolize.unwind.jit)."""
    eh_frame: bytes
    eh_frame_hdr: bytes


class JitCode(NamedTuple):
    name: str
    start: int
    size: int
    timestamp: int
    code_index: int
    #: the unwinding info that came before the load (None: the JIT wrote none)
    unwind: JitUnwind | None = None
    #: where the code's bytes are in the file (a CODE_LOAD's, after its
    #: name; a move's are its load's), None where the record has none
    code_at: int | None = None

    @property
    def end(self) -> int:
        return self.start + self.size


class JitDump:
    """The code loads of one jitdump, looked up by address and time."""

    def __init__(self, codes: list[JitCode] | None = None, pid: int | None = None,
                 arch_timestamps: bool = False, address_size: int = 8,
                 little_endian: bool = True, machine: int = 0) -> None:
        # (a stable sort: records of one timestamp keep the file's order)
        self.codes = sorted(codes or (), key=lambda c: c.timestamp)
        self.pid = pid
        #: the timestamps are TSC counts: not comparable with a sample's time
        self.arch_timestamps = arch_timestamps
        self.address_size = address_size
        self.little_endian = little_endian
        #: the ELF e_machine of the code (the header's elf_mach)
        self.machine = machine
        self.warnings: list[str] = []
        #: does any load carry unwinding info (CODE_UNWINDING_INFO)?
        self.has_unwinding = any(c.unwind is not None for c in self.codes)
        bounds = sorted({c.start for c in self.codes} | {c.end for c in self.codes})
        # Pieces between consecutive bounds; each holds the codes covering it
        # in time order (and their timestamps, for bisect).
        self._bounds = bounds
        self._covering: list[list[JitCode]] = [[] for _ in bounds]
        # A JIT's loads overlap only where it reused freed code space, so a
        # load covers a few pieces; a damaged or hostile dump (huge sizes)
        # would make this n squared: past the budget, loads are left out.
        budget = COVER_ENTRIES_PER_LOAD * len(self.codes) + 4096
        left_out = 0
        for c in self.codes:
            first = bisect.bisect_left(bounds, c.start)
            last = bisect.bisect_left(bounds, c.end)
            if last - first > budget:
                left_out += 1
                continue
            budget -= last - first
            for i in range(first, last):
                self._covering[i].append(c)
        if left_out:
            self.warnings.append(f"{left_out} code loads overlapping more code than a JIT "
                                 "reuses left out (a damaged jitdump?)")
        self._times = [[c.timestamp for c in cov] for cov in self._covering]
        self._load_times = [c.timestamp for c in self.codes]

    @classmethod
    def parse(cls, data: bytes, *, source: str = "jitdump") -> "JitDump":
        warnings = []
        if len(data) < _HEADER_MIN:
            t = cls()
            t.warnings.append(f"{source}: too short for a jitdump header")
            return t
        little = int.from_bytes(data[:4], "little") == JITDUMP_MAGIC
        if little:
            header_s, prefix_s, load_s, move_s, unwinding_s = _compiled(False)
        elif int.from_bytes(data[:4], "big") == JITDUMP_MAGIC:
            header_s, prefix_s, load_s, move_s, unwinding_s = _compiled(True)
        else:
            t = cls()
            t.warnings.append(f"{source}: not a jitdump (bad magic)")
            return t
        header = header_s.parse(data)
        at = max(header.total_size, _HEADER_MIN)
        codes: list[JitCode] = []
        # code_index -> (name, unwinding info, where its code is, its size)
        # of its load, for the moves
        names: dict[int, tuple[str, JitUnwind | None, int | None, int]] = {}
        # the unwinding info for the next load (perf inject's jd->unwinding_data)
        pending: JitUnwind | None = None
        bad = 0
        while at + _PREFIX_SIZE <= len(data):
            prefix = prefix_s.parse(data[at:at + _PREFIX_SIZE])
            size = prefix.total_size
            if size < _PREFIX_SIZE or at + size > len(data):
                # a record cut by the end (the JIT was killed while writing)
                # or damaged: nothing after it can be trusted to start a record
                bad += 1
                break
            body = data[at + _PREFIX_SIZE:at + size]
            try:
                if prefix.id == CODE_LOAD:
                    r = load_s.parse(body)
                    # (the code's bytes end the record, after the name)
                    code_at = at + size - r.code_size if r.code_size <= len(body) else None
                    names[r.code_index] = (r.name, pending, code_at, r.code_size)
                    if r.code_size:
                        codes.append(JitCode(r.name, r.code_addr, r.code_size, prefix.timestamp,
                                             r.code_index, pending, code_at))
                    # perf inject (jit_repipe_code_load) lets the info go
                    # only when it had an .eh_frame_hdr
                    if pending is not None and pending.eh_frame_hdr:
                        pending = None
                elif prefix.id == CODE_MOVE:
                    r = move_s.parse(body)
                    known = names.get(r.code_index)
                    if known is not None and r.code_size:
                        # the moved code keeps its load's file, so its .eh_frame
                        # (its bytes the load's, where the sizes agree)
                        codes.append(JitCode(known[0], r.new_code_addr, r.code_size,
                                             prefix.timestamp, r.code_index, known[1],
                                             known[2] if known[3] == r.code_size else None))
                elif prefix.id == CODE_UNWINDING_INFO:
                    u = unwinding_s.parse(body)
                    held = len(body) - _UNWINDING_HEAD
                    if u.eh_frame_hdr_size > u.unwinding_size or u.unwinding_size > held:
                        bad += 1          # sizes beyond the record: not used
                        pending = None
                    else:
                        eh_size = u.unwinding_size - u.eh_frame_hdr_size
                        start = _UNWINDING_HEAD
                        pending = JitUnwind(body[start:start + eh_size],
                                            body[start + eh_size:start + u.unwinding_size])
            except (ConstructError, UnicodeDecodeError):
                bad += 1
            at += size
        if bad:
            warnings.append(f"{source}: {bad} damaged or cut records skipped")
        t = cls(codes, header.pid, bool(header.flags & FLAG_ARCH_TIMESTAMP),
                4 if header.elf_mach in _ELF_MACHINES_32 else 8,
                little, header.elf_mach)
        t.warnings[:] = [f"{source}: {w}" for w in t.warnings] + warnings
        return t

    @classmethod
    def from_file(cls, path: str) -> "JitDump":
        try:
            data = read_regular_file(path, MAX_JITDUMP_SIZE)
        except OSError as e:
            t = cls()
            t.warnings.append(f"{path}: {e.strerror or e}")
            return t
        return cls.parse(data, source=path)

    def __len__(self) -> int:
        return len(self.codes)

    def epoch(self, time: int | None) -> int:
        """How many codes were placed by `time` (all, with no time): two
        times of one epoch see the same code at every address."""
        if time is None or self.arch_timestamps:
            return len(self.codes)
        return bisect.bisect_right(self._load_times, time)

    def lookup(self, address: int, time: int | None = None) -> JitCode | None:
        """The code at `address` at `time` (the last one placed there at or
        before it; the jitdump's clock, CLOCK_MONOTONIC), or with no time
        the last one placed there."""
        i = bisect.bisect_right(self._bounds, address) - 1
        if i < 0:
            return None
        covering = self._covering[i]
        if not covering:
            return None
        if time is None or self.arch_timestamps:     # (TSC counts: no order
            return covering[-1]                        # against a sample's clock)
        k = bisect.bisect_right(self._times[i], time)
        return covering[k - 1] if k else None


def is_jitdump_path(path: str, pid: int | None = None) -> bool:
    """perf inject's jit_detect(): a file named jit-PID.dump (of this pid, if
    given)."""
    base = os.path.basename(path)
    if not (base.startswith("jit-") and base.endswith(".dump")):
        return False
    digits = base[4:-5]
    return digits.isdigit() and (pid is None or int(digits) == pid)


def injected_jit_group(path: str) -> str | None:
    """The files perf inject --jit wrote for one process's code loads, one
    per load (jit_write_elf's jitted-PID-INDEX.so, util/jitdump.c), named
    as one: DIR/jitted-PID-*.so for any of them (or that name itself);
    None for any other path."""
    base = os.path.basename(path)
    if not (base.startswith("jitted-") and base.endswith(".so")):
        return None
    pid, _, index = base[7:-3].partition("-")
    if not (pid.isdigit() and (index.isdigit() or index == "*")):
        return None
    return os.path.join(os.path.dirname(path), "jitted-%s-*.so" % pid)

