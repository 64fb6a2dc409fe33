"""The unwinding info of a jitdump's code (CODE_UNWINDING_INFO records), by
process address and time: `JitUnwinding(dump).table(time)`.

The dump is read by symbolize.symbols.jitdump; this module sees it only
through the face below (JitCodeLoads), so the unwinder never stands on the
symbol side.  Each load's .eh_frame lies where perf inject's ELF file puts
it (genelf.c): the code at GEN_ELF_TEXT_OFFSET (16-aligned), .eh_frame at
ALIGN_8(its end), .eh_frame_hdr right after; mapped at the code's address,
that is ALIGN_8(code size) past the code's start.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .cfi import CfiRow, CfiTable


class JitUnwindInfo(Protocol):
    """A load's .eh_frame and .eh_frame_hdr (symbols.jitdump.JitUnwind)."""
    @property
    def eh_frame(self) -> bytes: ...
    @property
    def eh_frame_hdr(self) -> bytes: ...


class JitCodeLoad(Protocol):
    """One code load (symbols.jitdump.JitCode)."""
    @property
    def start(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def unwind(self) -> JitUnwindInfo | None: ...


class JitCodeLoads(Protocol):
    """What is read of a jitdump (symbols.jitdump.JitDump)."""
    has_unwinding: bool
    address_size: int
    little_endian: bool
    codes: list[Any]

    def epoch(self, time: int | None) -> int: ...
    def lookup(self, address: int, time: int | None = None) -> Any: ...


class JitUnwinding:
    """The unwinding info of one jitdump's loads: a JitUnwindTable for each
    epoch (how many loads were placed by a time), each load's CfiTable read
    once."""

    def __init__(self, dump: JitCodeLoads) -> None:
        self.dump = dump
        # epoch -> its JitUnwindTable; code -> the CfiTable of its unwinding info
        self._tables: dict[int, JitUnwindTable] = {}
        self._code_cfi: dict[JitCodeLoad, CfiTable] = {}

    def table(self, time: int | None) -> JitUnwindTable | None:
        """The unwinding info of the code placed by `time` (None: all of
        it), by process address; None when no load carries any."""
        dump = self.dump
        if not dump.has_unwinding:
            return None
        epoch = dump.epoch(time)
        table = self._tables.get(epoch)
        if table is None:
            # (any time of the epoch sees the same code at every address)
            table = self._tables[epoch] = JitUnwindTable(
                self, None if epoch == len(dump.codes) else time)
        return table

    def cfi_of(self, code: JitCodeLoad) -> CfiTable | None:
        """The CfiTable of a load's unwinding info, by process address (see
        the module's note), or None without any."""
        u = code.unwind
        if u is None:
            return None
        table = self._code_cfi.get(code)
        if table is None:
            # (imported here: the CFI reader and pyelftools' DWARF constants
            # cost 3 ms at start-up, and a frame-pointer run never unwinds)
            from .cfi import CfiTable
            at = code.start + (-(-code.size // 8) * 8)
            table = self._code_cfi[code] = CfiTable.from_sections(
                eh_frame=u.eh_frame, eh_frame_addr=at,
                eh_frame_hdr=u.eh_frame_hdr or None, eh_frame_hdr_addr=at + len(u.eh_frame),
                address_size=self.dump.address_size, little_endian=self.dump.little_endian)
        return table


class JitUnwindTable:
    """The unwinding info of a jitdump's code at one time, with a CfiTable's
    face for the unwinder (`rows`, `fde_range`, `has_cfi`; bias 0): a
    process address in, the row of the code placed there then."""

    def __init__(self, unwinding: JitUnwinding, time: int | None) -> None:
        self._unwinding = unwinding
        self._time = time
        self.rows: dict[int, CfiRow | None] = _Rows(self._find_row)

    def has_cfi(self) -> bool:
        return self._unwinding.dump.has_unwinding

    def _table_at(self, avma: int) -> CfiTable | None:
        code = self._unwinding.dump.lookup(avma, self._time)
        return self._unwinding.cfi_of(code) if code is not None else None

    def _find_row(self, avma: int) -> CfiRow | None:
        table = self._table_at(avma)
        return table.rows[avma] if table is not None else None

    def fde_range(self, avma: int) -> tuple[int, int] | None:
        table = self._table_at(avma)
        return table.fde_range(avma) if table is not None else None


class _Rows(dict):
    """avma -> compute(avma), computed on first use (bounded)."""
    __slots__ = ("compute",)

    LIMIT = 1 << 16

    def __init__(self, compute: Any) -> None:
        super().__init__()
        self.compute = compute

    def __missing__(self, key: int) -> CfiRow | None:
        if len(self) > self.LIMIT:
            self.clear()
        value = self[key] = self.compute(key)
        return value
