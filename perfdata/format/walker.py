"""The record walk of one byte source: file order, recovery, zstd expansion.

A `RecordWalker` walks the records of one `ByteSource` (the data section of a
file, a range of it, a `perf record --threads` data file, or a pipe) and
holds the state of that walk: where it is, the last good record, how far
resync has scanned, the step of a scan, the plausibility table, the zstd
stream.  It is handed what it needs of the recording: its `HeaderRecords`
(the events its records are decoded by, to which the walk hands perf's own
records as it reads them), a `WalkLog` for what it skips, and its
`WalkOptions`.

"Is a record header plausible here?" is one rule, `RecordWalker.plausible`,
over one table of least sizes (plausibility.py).  Resync, the look-ahead
after a suspect record and the check after a stream's tracing data call it;
the fast path for SAMPLE records, and the slow path's first look at the
next header, inline the same test on a copy of that table without the types
they leave to `plausible` (a failed inline test only sends the record on to
it), because a call per record is a large part of the hot loop's time.
"""
from __future__ import annotations

import struct
from collections.abc import Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from .compression import Decompressor
from .constants import RecordType as RT, USER_TYPE_START, record_type_name
from .decoder import Record
from .errors import CorruptError, PerfDataError, TruncatedError
from .plausibility import CAREFUL_ONLY, KNOWN_TYPES, MIN_BODY, NAME_OFFSETS, least_sizes, named_size
from .recovery import LOOKAHEAD, MOVED, NO_END, TAKE, WalkRecovery
from .records import event_header_struct
from .source import ByteSource

if TYPE_CHECKING:
    from .errors import InputName, WalkLog
    from .headerrecords import HeaderRecords

__all__ = ["KNOWN_TYPES", "MAX_TRACING_DATA", "RecordWalker", "WalkOptions", "WalkState",
           "least_sizes"]

# A TRACING_DATA payload larger than this is refused (no sane recording has one).
MAX_TRACING_DATA = 1 << 30
# The record types the walk tests, bound once as plain ints: RT.X costs
# ~100 ns a lookup on the enum class, and the slow path and plausible()
# ask several of every record they take.
_SAMPLE, _HEADER_ATTR = int(RT.SAMPLE), int(RT.HEADER_ATTR)
_COMPRESSED, _COMPRESSED2 = int(RT.COMPRESSED), int(RT.COMPRESSED2)
_FINISHED_ROUND, _FINISHED_INIT = int(RT.FINISHED_ROUND), int(RT.FINISHED_INIT)
_AUXTRACE, _TRACING_DATA = int(RT.AUXTRACE), int(RT.HEADER_TRACING_DATA)


@dataclass
class WalkState:
    """Where a walk of a data section stands between records, and what it
    knows there: enough for another walk (or compiled code that takes the
    same records the same way: perfdata/core/records.py) to go on from `at`
    exactly as this one would.  A walk given one with `pause` set stops at
    the first record boundary after a record its slow path took, unless
    it holds a zstd stream, and leaves its state here (`paused`)."""
    at: int                     # file offset of the next record
    prev: int | None = None     # offset of the last good record (recovery)
    nsamples: int = 0           # SAMPLE records seen, and the largest size
    max_sample: int = 0
    scanned: int = 0            # how far resync has scanned
    # resync steps by 1, not 8 (None: as a walk that starts at `at` would
    # decide; a walk that came here decided by what it met, not by `at`)
    unaligned: bool | None = None
    pause: bool = False
    paused: bool = False        # (set by the walk: False when it reached the end)


@dataclass(frozen=True, slots=True)
class WalkOptions:
    """How a walk reads its source."""
    strict: bool = False        # stop at the first damaged record (CorruptError)
    unaligned: bool = False     # records need not be 8-byte multiples (a COMPRESSED file)
    file_index: int = 0         # the records' `file` (N for a directory's data.N)
    path: InputName | None = None   # the source's name in messages (default: the recording's)


class RecordWalker(WalkRecovery):
    """The walk of one byte source, and its state.

    For a byte range [start, end) of a file give a `ByteSource(f, start, end)`
    whose start is a record boundary (what a parallel reader's worker needs:
    records at offsets within the range, resync never past `end`)."""

    def __init__(self, header_records: HeaderRecords, src: ByteSource, log: WalkLog,
                 options: WalkOptions = WalkOptions()) -> None:
        ctx = header_records.ctx
        self.header_records = header_records
        self.ctx = ctx
        self.src = src
        self.log = log
        self.file_index = options.file_index
        self.path = options.path or ctx.path
        self.little = ctx.little
        self.header = event_header_struct(ctx.little)
        # Recovery: file mode and --threads data files (seekable, bounded) and
        # pipe mode (a stream: resync scans a bounded look-ahead window held
        # in the source's buffer, going forward only).
        self.stream = src.end is None
        self.recover = not options.strict and (self.stream or src.seekable)
        # (src.end is an offset when the source is not a stream)
        self.data_end = NO_END if self.stream else src.end  # type: ignore[assignment]
        if self.recover and self.stream and not src.seekable:
            # The look-back into the record just read (its size may be what
            # is wrong) stays in the buffer.
            src.keep = LOOKAHEAD
        self.prev = None
        self.nsamples = self.max_sample = self.scanned = 0
        self.chain_hit_end = False
        # Records are 8-byte multiples in perf's files, except COMPRESSED ones
        # (and some other writers'): then resync tries every byte.
        self.step = 8
        self.align_mask = 7
        if options.unaligned or src.pos % 8:
            self._unaligned()
        self.decompressor: Decompressor | None = None
        self.least = self.fast_least = {}
        self.sample_min = 8
        self._refresh_rule()
        self.state: WalkState | None = None     # (resume_from)
        self.took_slow_path = False

    def resume_from(self, state: WalkState) -> None:
        """Go on as the walk that left `state` (at this source's start)
        would, and leave this walk's own state there when it stops."""
        self.prev, self.nsamples, self.max_sample = state.prev, state.nsamples, state.max_sample
        self.scanned = state.scanned
        if state.unaligned:
            self._unaligned()
        elif state.unaligned is not None:
            self.step, self.align_mask = 8, 7
        self.state = state
        state.paused = False

    def _pause(self) -> bool:
        """At a record boundary: whether to stop here, leaving the state."""
        state = self.state
        if state is None or not state.pause or not self.took_slow_path or \
                self.decompressor is not None:
            return False
        state.at, state.prev = self.src.offset, self.prev
        state.nsamples, state.max_sample = self.nsamples, self.max_sample
        state.scanned, state.unaligned = self.scanned, self.step == 1
        state.paused = True
        return True

    def _unaligned(self) -> None:
        self.step = 1
        self.align_mask = 0

    def _refresh_rule(self, fast: bool = True) -> None:
        """The least sizes follow the first attr's trailer: rebuilt when an
        attr is added.  `fast`: the fast path's copy too (the walk refreshes
        it where it applies a HEADER_ATTR itself, not inside compressed data,
        as the reader always has)."""
        self.least = least_sizes(self.ctx.trailer_size())
        if fast:
            self.fast_least = {t: s for t, s in self.least.items() if t not in CAREFUL_ONLY}
            self.sample_min = self.fast_least[RT.SAMPLE]

    # ------------------------------------------------------------- the walk
    def records(self) -> Iterator[Record]:
        """The records of the source in file order, COMPRESSED ones followed
        by what they hold.  Damaged stretches are skipped and noted in the
        log (recover), else raise CorruptError.

        The fast path, here: records wholly in the buffer, followed by a
        plausible header (`plausible` inlined on its table, bar the types it
        leaves to the slow path, which takes every other record and every
        anomaly: _slow_path_record).  The walk state the fast path changes
        lives in locals and goes back to the walker when it leaves."""
        ctx, src = self.ctx, self.src
        ctx.refresh_id_positions()
        self._refresh_rule()
        recover, file_index = self.recover, self.file_index
        unpack_header = self.header.unpack_from
        attr_for, make_record = ctx.attr_for, ctx.make_record
        # (locals for the fast path, the hottest loop)
        SAMPLE, FINISHED_ROUND, FINISHED_INIT = _SAMPLE, _FINISHED_ROUND, _FINISHED_INIT
        while True:
            if self.took_slow_path and self._pause():
                return
            buf, head, view, base = src.buf, src.head, src.view, src.pos
            stop = len(buf) - 8
            attrs = ctx.attrs
            single = attrs[0] if attrs and (len(attrs) == 1 or not ctx.id_to_attr) else None
            src_end = self.data_end if recover else None
            least_of, sample_min, align_mask = self.fast_least, self.sample_min, self.align_mask
            prev, nsamples, max_sample = self.prev, self.nsamples, self.max_sample
            while head < stop:
                rtype, misc, size = unpack_header(buf, head)
                if rtype == SAMPLE:
                    if size < sample_min or size & align_mask or head + size > stop or \
                            recover and nsamples >= 16 and size > 2 * max_sample + 64:
                        break
                elif not recover or not self._fast_path_takes(buf, head, rtype, size, stop):
                    break
                offset = base + head
                if recover:
                    t2, _, s2 = unpack_header(buf, head + size)
                    least = least_of.get(t2)
                    if least is None or least > s2 or s2 & align_mask or \
                            offset + size + s2 > src_end or \
                            (s2 != 8 and (t2 == FINISHED_ROUND or t2 == FINISHED_INIT)):
                        break
                    prev = offset
                body = view[head + 8:head + size]
                if rtype == SAMPLE:
                    if recover:
                        nsamples += 1
                        if size > max_sample:
                            max_sample = size
                    attr = single or attr_for(SAMPLE, body)
                    time = None
                    if attr is not None:
                        toff = attr.sample_time_offset
                        if toff is not None and toff + 8 <= size - 8:
                            time = attr.u64.unpack_from(body, toff)[0]
                    rec = Record(ctx, SAMPLE, misc, size, offset, body, attr, time)
                else:
                    # (its event and time as the slow path finds them)
                    rec = make_record(rtype, misc, size, offset, body)
                if file_index:
                    rec.file = file_index
                head += size
                yield rec
            # (Nothing reads the source while the walk is suspended in the
            # fast path: its position goes back once, here, not once a record.)
            src.head = head
            self.prev, self.nsamples, self.max_sample = prev, nsamples, max_sample
            got = src.next_record(self.header)
            if got is None:
                return
            self.took_slow_path = True
            if not (yield from self._slow_path_record(*got)):
                return

    def _fast_path_takes(self, buf: bytes, head: int, rtype: int, size: int, stop: int) -> bool:
        """Whether the fast path takes a kernel record other than a SAMPLE
        (FORK, COMM, MMAP2, EXIT: seven a process a shell starts) in recover
        mode: when the slow path would pass it as it is: a known type of
        at least its least size, aligned, wholly here, and for MMAP, MMAP2
        and COMM a size their name and trailer account for
        (_check_string_record).  The header after it is the fast path's to test."""
        least = self.fast_least.get(rtype)
        if rtype >= USER_TYPE_START or least is None or size < least or size & 7 or \
                size & self.align_mask or head + size > stop:
            return False
        if rtype in NAME_OFFSETS:
            named = named_size(buf, head, rtype, size, self.ctx.trailer_size())
            if named is None or size > named + 8:
                return False
        return True

    def _slow_path_record(self, offset: int, rtype: int | None, misc: int, size: int,
                        raw: memoryview) -> Generator[Record, None, bool]:
        """The record the fast path left at `offset` (as the source read it:
        `rtype` None where the input ends inside its header), taken with
        every check, and what it holds; False where the walk ends."""
        log, path = self.log, self.path
        if rtype is None:
            log.warnings.append("%s: offset %#x: file ends inside a record header"
                                % (path, offset))
            log.truncated_at = offset
            return False
        why = self._damage(offset, rtype, size, raw)
        if why is not None:
            return self.skip_damaged(offset, rtype, size, raw, why)
        recover = self.recover
        if recover and rtype != _AUXTRACE and rtype != _TRACING_DATA \
                and offset + size < self.data_end:
            seen = self.look_ahead(offset, rtype, size, raw)
            if seen is MOVED:
                return True
            if seen is TAKE:
                self.prev = offset
                rec = self._record(rtype, misc, size, offset, raw)
                if rtype >= USER_TYPE_START:
                    self.header_records.apply(rec, path)
                    if rtype == _HEADER_ATTR:
                        self._refresh_rule()
                yield rec
                return True
        self.prev = offset
        if size & 7:
            self._unaligned()
        rec = self._record(rtype, misc, size, offset, raw)
        if rtype < USER_TYPE_START:
            yield rec
        elif rtype == _AUXTRACE or rtype == _TRACING_DATA:
            return (yield from self._payload_record(rec))
        elif rtype == _COMPRESSED or rtype == _COMPRESSED2:
            yield rec
            yield from self._expand_compressed(rec)
        else:
            self.header_records.apply(rec, path)
            if recover and rtype == _HEADER_ATTR:
                self._refresh_rule()
            yield rec
        return True

    def _record(self, rtype: int, misc: int, size: int, offset: int, raw: memoryview) -> Record:
        rec = self.ctx.make_record(rtype, misc, size, offset, raw[8:])
        rec.file = self.file_index
        return rec

    def _damage(self, offset: int, rtype: int, size: int, raw: memoryview) -> str | None:
        """What is wrong with the header the source read at `offset`, or
        None; a size below the header's own raises CorruptError in strict
        mode."""
        recover = self.recover
        if size < 8:
            why = "record size %d is smaller than its header (type %d)" % (size, rtype)
            if not recover:
                raise CorruptError(why, path=self.path, offset=offset)
            return why
        if len(raw) < size:
            return "a %s record of %d bytes runs past the end of the data" % (
                record_type_name(rtype), size)
        if recover and (rtype == 0 or rtype > 0xFFFF):
            return "impossible record type %#x" % rtype
        if recover and rtype < USER_TYPE_START and size - 8 < MIN_BODY.get(rtype, 0) \
                and not (self.stream and len(self.src.peek(8)) < 8):
            # (A short record that ends a stream, or that only a cut header
            # follows, is delivered, as perf counts it: nothing after it
            # says it is damaged.)
            return "%s record of %d bytes is too short" % (record_type_name(rtype), size)
        return None

    def _payload_record(self, rec: Record) -> Generator[Record, None, bool]:
        """An AUXTRACE or HEADER_TRACING_DATA record and the payload that
        follows it; False where the walk ends."""
        src, rtype, stream = self.src, rec.type, self.stream
        try:
            self._read_payload(rec)
        except PerfDataError as exc:
            # A stream cannot come back from a payload read on a wrong
            # size: stop with the error.
            if not self.recover or (stream and rtype == _TRACING_DATA):
                raise
            self.log.note_skipped(self.path, rec.offset, rec.size, exc.message)
            src.goto(rec.offset + rec.size)
            return True
        if self.recover and stream and rtype == _TRACING_DATA:
            # Its payload was skipped by the size in its body: when no sane
            # record follows, that size was wrong and where the records go
            # on is unknown (resync could land inside the tracing data):
            # stop, as strict mode does.
            look = src.peek(8)
            if len(look) == 8:
                t2, _, s2 = self.header.unpack_from(look)
                if not self.plausible(t2, s2, src.offset, self.data_end):
                    yield rec
                    raise CorruptError(
                        "no sane record after the tracing data (%d bytes): its "
                        "size may be damaged" % rec.payload_size,
                        path=self.path, offset=src.offset)
        yield rec
        return True

    def _expand_compressed(self, rec: Record) -> Iterator[Record]:
        """What a COMPRESSED record holds; a damaged one is skipped, and the
        zstd stream starts afresh (perf ends a frame with every record)."""
        if self.decompressor is None:
            self.decompressor = Decompressor(self.header_records.decompress_limit)
        try:
            yield from self._expand(rec)
        except CorruptError as exc:
            if not self.recover:
                raise
            self.log.note_skipped(self.path, rec.offset, rec.size, exc.message)
            self.decompressor = None

    # ------------------------------------------------------ what records hold
    def _read_payload(self, rec: Record) -> None:
        """AUXTRACE data and pipe-mode tracing data follow their record."""
        src, path = self.src, self.path
        u = "<" if self.little else ">"
        if rec.type == RT.AUXTRACE:
            if len(rec.body) < 8:
                raise CorruptError("AUXTRACE record too short", path=path, offset=rec.offset)
            size = struct.unpack_from(u + "Q", rec.body)[0]
            rec.payload_offset = src.offset
            rec.payload_size = size
            if src.skip(size) < size:
                self.log.warnings.append("%s: offset %#x: AUXTRACE payload cut short"
                                           % (path, rec.offset))
            return
        if len(rec.body) < 4:
            raise CorruptError("TRACING_DATA record too short", path=path, offset=rec.offset)
        size = struct.unpack_from(u + "I", rec.body)[0]
        rec.payload_size = size
        if len(rec.body) >= 4 + size:
            # simpleperf puts the data inside the record; perf after it.
            rec.payload_offset = rec.offset + 12
            self.header_records.tracing_data_read(bytes(rec.body[4:4 + size]), True)
            return
        rec.payload_offset = src.offset
        if size > MAX_TRACING_DATA:
            raise CorruptError("tracing data of %d bytes" % size, path=path, offset=rec.offset)
        data = src.take(size)
        if len(data) < size:
            raise TruncatedError("file ends inside the tracing data", path=path,
                                 offset=rec.payload_offset)
        self.header_records.tracing_data_read(bytes(data), False)

    def _expand(self, rec: Record) -> Iterator[Record]:
        """The records inside a COMPRESSED/COMPRESSED2 record.  perf keeps one zstd
        stream for the whole file and lets a record straddle two chunks."""
        # (records() makes the decompressor before it expands a record)
        decompressor: Decompressor
        path, decompressor = self.path, self.decompressor  # type: ignore[assignment]
        body = rec.body
        if rec.type == RT.COMPRESSED2:
            if len(body) < 8:
                raise CorruptError("COMPRESSED2 record too short", path=path, offset=rec.offset)
            data_size = struct.unpack_from("<Q" if self.little else ">Q", body)[0]
            if data_size > len(body) - 8:
                raise CorruptError("COMPRESSED2 data_size %d exceeds the record" % data_size,
                                   path=path, offset=rec.offset)
            payload = body[8:8 + data_size]
        else:
            payload = body
        try:
            data = decompressor.feed(payload)
        except ValueError as exc:
            raise CorruptError("cannot decompress: %s" % exc, path=path, offset=rec.offset)
        unpack = self.header.unpack_from
        make_record = self.ctx.make_record
        pos = 0
        end = len(data)
        view = memoryview(data)
        while end - pos >= 8:
            rtype, misc, size = unpack(data, pos)
            if size < 8:
                raise CorruptError("record size %d inside compressed data (at %d of the "
                                   "decompressed stream)" % (size, decompressor.total_out - end + pos),
                                   path=path, offset=rec.offset)
            if end - pos < size:
                break
            inner = make_record(rtype, misc, size, rec.offset, view[pos + 8:pos + size])
            inner.compressed = True
            inner.file = rec.file
            if rtype >= USER_TYPE_START:
                self.header_records.apply(inner, path)
                if rtype == RT.HEADER_ATTR:
                    # The rule follows the new attr; the fast path's copy
                    # waits for a HEADER_ATTR outside compressed data (as it
                    # always has: kept so that the walk stays the same).
                    self._refresh_rule(fast=False)
            yield inner
            pos += size
        decompressor.keep(data[pos:])
