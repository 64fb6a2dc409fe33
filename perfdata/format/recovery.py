"""Recovery in a record walk: the plausibility rule and resynchronisation.

A damaged record (a size too small or too large, an impossible type, a cut
tail) is skipped: the walk looks for the next plausible record header, first
inside the records just before it (their size may be what is wrong), and
goes on there, noting the skipped bytes in its log.  `WalkRecovery` holds
those steps; `RecordWalker` (walker.py) is one, and keeps the state they
read and move (declared here).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .constants import RecordType as RT, record_type_name
from .plausibility import NAME_OFFSETS, TYPE_PATTERNS, named_size

if TYPE_CHECKING:
    import struct

    from .decoder import DecodeContext
    from .errors import InputName, WalkLog
    from .source import ByteSource

# Resynchronisation reads the rest of the data section in blocks of this size
# (plus one largest record of look-ahead).
RESYNC_BLOCK = 1 << 20
LOOKAHEAD = 2 * (1 << 16) + 16
# The end of a stream not yet read to its end (pipe mode): past any offset.
NO_END = 1 << 62
# (bound once as plain ints: RT.X costs ~100 ns a lookup on the enum class)
_SAMPLE, _COMPRESSED, _COMPRESSED2 = int(RT.SAMPLE), int(RT.COMPRESSED), int(RT.COMPRESSED2)
_FINISHED_ROUND, _FINISHED_INIT = int(RT.FINISHED_ROUND), int(RT.FINISHED_INIT)
# What the slow path's look-ahead found (WalkRecovery.look_ahead): the
# next header is sane, take the record as it is; or the source moved on to
# records found inside this one.
TAKE, MOVED = "take", "moved"


class WalkRecovery:
    """The recovery steps of a walk over the walk's state."""
    src: ByteSource
    ctx: DecodeContext
    log: WalkLog
    path: InputName | None
    header: struct.Struct       # the record header's layout
    little: bool
    recover: bool
    data_end: int               # where the data ends (NO_END: a stream's, unknown)
    # {record type: least plausible size}, and the fast path's copy
    least: dict[int, int]
    fast_least: dict[int, int]
    step: int                   # resync's step: 8, or 1 where records are unaligned
    align_mask: int
    prev: int | None            # offset of the last good record
    # SAMPLE sizes seen: a SAMPLE far larger than every one before it may
    # hide the next records (its size field damaged).
    nsamples: int
    max_sample: int
    scanned: int                # resync scans never read a byte twice: time stays linear
    # whether the last chain _plausible_at accepted held by reaching the end
    chain_hit_end: bool

    # ------------------------------------------------------------- the rule
    def plausible(self, rtype: int, size: int, at: int, end: int) -> bool:
        """Whether a header (rtype, size) at file offset `at` is one to trust:
        a known type, at least its least size, ending by `end`, 8-byte
        aligned where records are (COMPRESSED ones need not be), and
        FINISHED_ROUND/FINISHED_INIT of exactly 8 bytes."""
        least = self.least.get(rtype)
        if least is None or size < least or at + size > end:
            return False
        if size & self.align_mask and rtype != _COMPRESSED and rtype != _COMPRESSED2:
            return False
        if size != 8 and (rtype == _FINISHED_ROUND or rtype == _FINISHED_INIT):
            return False
        return True

    def _plausible_at(self, buf: bytes | memoryview, i: int, at: int, end: int) -> bool:
        """Whether a record starts at buf[i] (file offset `at`): a plausible
        header, then the next header just as plausible (or the end of the
        data); when the record carries no event id the attrs know, the one
        after that too."""
        unpack = self.header.unpack_from
        self.chain_hit_end = False
        rtype, _, size = unpack(buf, i)
        if not self.plausible(rtype, size, at, end):
            return False
        if i + size > len(buf):
            return False
        depth = 2 if self.ctx.id_known(rtype, buf[i + 8:i + size]) else 3
        for _ in range(depth - 1):
            at += size
            i += size
            if at == end:
                self.chain_hit_end = True
                return True
            if i + 8 > len(buf):
                return False
            rtype, _, size = unpack(buf, i)
            if not self.plausible(rtype, size, at, end):
                return False
        return True

    def _found_inside(self, start: int, offset: int, size: int) -> int | None:
        """Where records start inside the record at `offset` (from `start`),
        its size being too large, or None; the source is left at its end.
        Records found there that hold only by reaching the end of the data
        (which a cut file has anywhere: one header's size ran to it) do not
        count where the record's own size leads on to sane records."""
        src = self.src
        found = self.resync(start, offset + size)
        weak = found is not None and self.chain_hit_end
        src.goto(offset + size)
        if weak:
            look = src.peek(LOOKAHEAD)
            end = src.known_end
            if len(look) >= 8 and self._plausible_at(look, 0, offset + size,
                                                     NO_END if end is None else end):
                return None
        return found

    def look_ahead(self, offset: int, rtype: int, size: int, raw: memoryview) -> str | None:
        """Recovery's checks of a record the slow path takes: TAKE when
        the header after it is sane (`plausible` inlined, as in the fast path),
        MOVED when records start inside it (its size was too large: the
        source is moved there), None when it is to be taken the long way."""
        src = self.src
        buf, head = src.buf, src.head
        big = False
        if rtype == _SAMPLE:
            big = self.nsamples >= 16 and size > 2 * self.max_sample + 64
            if not big:
                self.nsamples += 1
                if size > self.max_sample:
                    self.max_sample = size
        if not big and rtype not in NAME_OFFSETS and rtype != _COMPRESSED and \
                rtype != _COMPRESSED2 and len(buf) - head >= 8:
            t2, _, s2 = self.header.unpack_from(buf, head)
            least = self.fast_least.get(t2)
            if least is not None and least <= s2 and not s2 & self.align_mask and \
                    offset + size + s2 <= self.data_end and \
                    (s2 == 8 or (t2 != _FINISHED_ROUND and t2 != _FINISHED_INIT)):
                return TAKE
        resume = None
        if rtype in NAME_OFFSETS:
            resume = self._check_string_record(rtype, raw, offset, size)
        elif big:
            start = max(offset + 8, self.scanned)
            start += (offset - start) % self.step
            resume = self._found_inside(start, offset, size)
            self.scanned = max(self.scanned, resume or offset + size)
            if resume is None:
                self.nsamples += 1
                self.max_sample = size
        if resume is None:
            resume = self._check_next(offset, size)
        if resume is None:
            return None
        self.scanned = max(self.scanned, resume or offset + size)
        if not resume:
            return None
        # This record's size is too large: the records after it start inside it.
        self.log.note_skipped(self.path, offset, resume - offset,
                              "record size %d overlaps the next records" % size)
        self.prev = None
        src.goto(resume)
        return MOVED

    # ------------------------------------------------------------- recovery
    def skip_damaged(self, offset: int, rtype: int, size: int, raw: memoryview, why: str) -> bool:
        """A damaged record at `offset`: note it and move the source to where
        the records go on.  False when they do not (the walk ends)."""
        src, path, log = self.src, self.path, self.log
        recover = self.recover
        prev = self.prev
        resume = None
        back = max(prev + 8, self.scanned) if prev is not None else offset
        back += (prev - back) % self.step if prev is not None else 0
        if recover and back < offset and (src.seekable or back >= src.pos):
            # The previous record's size may be what is wrong (too large,
            # swallowing the records after it): look inside it first.
            resume = self.resync(back, offset)
            self.scanned = max(self.scanned, resume or offset)
            if resume is not None:
                # (prev is an offset here: back < offset needs one)
                log.warnings.append("%s: offset %#x: record size overlaps the next "
                                      "records (resumed at %#x)"
                                      % (path, prev, resume))  # type: ignore[str-format]
                self.prev = None
                src.goto(resume)
                return True
        if recover:
            start = max(offset + 8, self.scanned)
            start += (offset - start) % self.step
            resume = self.resync(start, self.data_end)
            if resume is None:
                self.data_end = src.known_end or src.offset
            self.scanned = max(self.scanned, resume if resume is not None else self.data_end)
        if resume is None and size >= 8 and len(raw) < size:
            # Nothing plausible follows: the tail was cut (a killed perf record).
            log.warnings.append("%s: offset %#x: file ends inside a %s record "
                                  "(%d of %d bytes)" % (path, offset, record_type_name(rtype),
                                                        len(raw), size))
            log.truncated_at = offset
            return False
        stop = self.data_end if resume is None else resume
        log.note_skipped(path, offset, stop - offset, why)
        if resume is None:
            return False
        self.prev = None
        src.goto(resume)
        return True

    def _check_string_record(self, rtype: int, raw: memoryview, offset: int,
                             size: int) -> int | None:
        """MMAP, MMAP2 and COMM end with their name, padded to 8 bytes, and the
        sample_id trailer: a size well past that may hide the next records."""
        expected = named_size(bytes(raw[:8 + NAME_OFFSETS[rtype] + 4104]), 0, rtype, size,
                              self.ctx.trailer_size())
        if expected is None or size <= expected + 8:
            return None
        start = max(offset + expected, self.scanned)
        start += (offset - start) % self.step
        if start >= offset + size:
            self.src.goto(offset + size)
            return None
        return self._found_inside(start, offset, size)

    def _check_next(self, offset: int, size: int) -> int | None:
        """Recovery look-ahead: None when the header after this record looks
        sane; else where a plausible record starts inside this one (its size
        was too large), or 0 when none does (the next record is the bad one)."""
        src = self.src
        buf: bytes | memoryview
        buf, head = src.buf, src.head
        if len(buf) - head < 8:
            look = src.peek(8)
            if len(look) < 8:
                return None
            buf, head = look, 0
        rtype, _, nsize = self.header.unpack_from(buf, head)
        if self.plausible(rtype, nsize, offset + size, self.data_end):
            return None
        # Not a header we know (maybe just a type newer than us): look for a
        # chain of sane headers inside this record before trusting its size.
        start = max(offset + 8, self.scanned)
        start += (offset - start) % self.step
        if start >= offset + size:
            return 0
        return self._found_inside(start, offset, size) or 0

    def resync(self, start: int, stop: int) -> int | None:
        """File offset of the first plausible record header in [start, stop)
        (stepping by 8 from start, or by 1 in files with unaligned records),
        or None.  Scans through the source's own buffer, so that no byte is
        read from the file twice; the source is left somewhere in the range
        (the caller moves it with goto()).  Time linear in the bytes scanned."""
        src = self.src
        step = self.step
        find = TYPE_PATTERNS[self.little].search
        src.goto(start)
        while src.offset + 8 <= stop:
            at = src.offset
            # A stream holds only this window (the block plus look-ahead).
            buf = src.peek(RESYNC_BLOCK + LOOKAHEAD)
            if len(buf) < 8:
                return None
            end = src.known_end
            if end is None:
                end = NO_END
            limit = min(RESYNC_BLOCK, len(buf) - 7, stop - at)
            i = 0
            while i < limit:
                match = find(buf, i, limit + 3)
                if match is None:
                    break
                j = match.start()
                if j >= limit:
                    break
                if not j % step and self._plausible_at(buf, j, at + j, end):
                    return at + j
                i = j + 1
                i += -i % step
            src.goto(at + (limit + step - 1) // step * step)
        return None
