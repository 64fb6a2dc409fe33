"""The record walk of one byte source: file order, recovery, zstd expansion.

A `RecordWalker` walks the records of one `ByteSource` (the data section of a
file, a range of it, a `perf record --threads` data file, or a pipe) and
holds the state of that walk: where it is, the last good record, how far
resync has scanned, the step of a scan, the plausibility table, the zstd
stream.  It knows the recording only through its owner (`WalkOwner`: the
container, which keeps the events, features and warnings) and a
`DecodeContext` (attrs and id map) for the `Record`s it makes.

"Is a record header plausible here?" is one rule, `RecordWalker.plausible`,
over one table of least sizes (`least_sizes`).  Resync, the look-ahead after
a suspect record and the check after a stream's tracing data call it; the
fast lane for SAMPLE records, and the careful path's first look at the next
header, inline the same test on a copy of that table without the types they
leave to `plausible` (a failed inline test only sends the record on to it),
because a call per record costs the hot loop a fifth of its time (measured:
2.07 s -> 2.49 s of CPU for 1.76 M records).
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Protocol

import construct as cs

from .compression import Decompressor
from .constants import Feature, RecordType as RT, USER_TYPE_START, record_type_name
from .decoder import DecodeContext, Record
from .errors import CorruptError, PerfDataError, TruncatedError
from .records import body_schemas, event_header_struct
from .source import ByteSource

if TYPE_CHECKING:
    from .errors import InputName

# A TRACING_DATA payload larger than this is refused (no sane recording has one).
MAX_TRACING_DATA = 1 << 30
# Recovery (strict=False): what a plausible record header looks like.
KNOWN_TYPES = frozenset(int(t) for t in RT)
# Fixed body bytes of the kernel records (before strings and the trailer).
MIN_BODY: dict[int, int] = {RT.MMAP: 32, RT.LOST: 16, RT.COMM: 8, RT.EXIT: 24, RT.THROTTLE: 24,
                            RT.UNTHROTTLE: 24, RT.FORK: 24, RT.READ: 16, RT.MMAP2: 64, RT.AUX: 24,
                            RT.ITRACE_START: 8, RT.LOST_SAMPLES: 8, RT.SWITCH_CPU_WIDE: 8,
                            RT.NAMESPACES: 16, RT.KSYMBOL: 16, RT.BPF_EVENT: 16, RT.CGROUP: 8,
                            RT.TEXT_POKE: 12, RT.AUX_OUTPUT_HW_ID: 8}
# The record types the walk tests, bound once as plain ints: RT.X costs
# ~100 ns a lookup on the enum class, and the careful path and plausible()
# ask several of every record they take.
_SAMPLE, _HEADER_ATTR = int(RT.SAMPLE), int(RT.HEADER_ATTR)
_COMPRESSED, _COMPRESSED2 = int(RT.COMPRESSED), int(RT.COMPRESSED2)
_FINISHED_ROUND, _FINISHED_INIT = int(RT.FINISHED_ROUND), int(RT.FINISHED_INIT)
_AUXTRACE, _TRACING_DATA = int(RT.AUXTRACE), int(RT.HEADER_TRACING_DATA)


def _name_offsets() -> dict[int, int]:
    """Where the name starts in the body of the records that end with one
    (MMAP, MMAP2, COMM): the size of the fields before it, by their schemas."""
    schemas = body_schemas(True)
    out = {}
    for rtype, name in ((RT.MMAP, "filename"), (RT.MMAP2, "filename"), (RT.COMM, "comm")):
        fields = schemas[rtype].subcons
        before = next(i for i, sub in enumerate(fields) if sub.name == name)
        out[int(rtype)] = cs.Struct(*fields[:before]).sizeof()
    return out


_STRING_AT: dict[int, int] = _name_offsets()
# Types the inlined checks leave to the careful path, which asks `plausible`:
# COMPRESSED records may have any size (the inlined checks test the 8-byte
# alignment of every size), AUXTRACE and HEADER_TRACING_DATA carry a payload
# after them.
_CAREFUL_ONLY = frozenset((RT.COMPRESSED, RT.COMPRESSED2, RT.AUXTRACE,
                           RT.HEADER_TRACING_DATA))
# Resynchronisation reads the rest of the data section in blocks of this size
# (plus one largest record of look-ahead).
RESYNC_BLOCK = 1 << 20
_LOOKAHEAD = 2 * (1 << 16) + 16
# The end of a stream not yet read to its end (pipe mode): past any offset.
_NO_END = 1 << 62


def _type_pattern(little: bool) -> re.Pattern[bytes]:
    """A regex matching the u32 type field of every known record type: resync
    tests only its matches (C speed over garbage; the same positions)."""
    types = sorted(KNOWN_TYPES)
    if types[-1] > 0xFF:
        return re.compile(b"(?s)....")
    cls = b"[" + b"".join(re.escape(bytes([t])) for t in types) + b"]"
    return re.compile(cls + b"\0\0\0" if little else b"\0\0\0" + cls)


_TYPE_PATTERNS = {True: _type_pattern(True), False: _type_pattern(False)}


def named_size(buf: bytes, start: int, rtype: int, size: int, trailer: int) -> int | None:
    """The size an MMAP, MMAP2 or COMM record of `size` bytes at buf[start]
    accounts for: its header and body up to its name, the name padded to 8
    bytes, and the sample_id trailer of `trailer` bytes; None when the name
    has no terminator in the record (a size well past it may hide the next
    records: see _check_string_record)."""
    at = 8 + _STRING_AT[rtype]
    nul = buf.find(b"\0", start + at, start + min(size, at + 4104))
    if nul < 0:
        return None
    return at + (nul - start - at + 8) // 8 * 8 + trailer


def least_sizes(trailer: int) -> dict[int, int]:
    """{known type: least plausible record size}: the header, plus for kernel
    records their fixed body and (but for SAMPLE) the sample_id trailer of
    `trailer` bytes."""
    out = {}
    for rtype in KNOWN_TYPES:
        least = 8
        if rtype < USER_TYPE_START:
            least += MIN_BODY.get(rtype, 0) + (trailer if rtype != RT.SAMPLE else 0)
        out[rtype] = least
    return out


@dataclass
class WalkState:
    """Where a walk of a data section stands between records, and what it
    knows there: enough for another walk (or compiled code that takes the
    same records the same way: perfdata/core/records.py) to go on from `at`
    exactly as this one would.  A walk given one with `pause` set stops at
    the first record boundary after a record its careful path took, unless
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


class WalkOwner(Protocol):
    """What a walker needs from the recording it walks (PerfFile is one)."""
    strict: bool
    # the file's feature table: COMPRESSED there means unaligned records
    features: dict[int, tuple[int, int]]
    warnings: list[str]
    truncated_at: int       # set where the input ends inside a record

    def note_skipped(self, path: InputName | None, offset: int, count: int,
                     why: str) -> None: ...

    def decompress_limit(self) -> int: ...

    def apply_user_record(self, rec: Record, path: InputName | None) -> None: ...

    def tracing_data_read(self, data: bytes, in_record: bool) -> None: ...


class RecordWalker:
    """The walk of one byte source, and its state.

    For a byte range [start, end) of a file give a `ByteSource(f, start, end)`
    whose start is a record boundary (what a parallel reader's worker needs:
    records at offsets within the range, resync never past `end`)."""
    # {record type: least plausible size}, and the fast lane's copy
    least: dict[int, int]
    fast_least: dict[int, int]

    def __init__(self, owner: WalkOwner, ctx: DecodeContext, src: ByteSource,
                 file_index: int = 0, path: InputName | None = None) -> None:
        self.owner = owner
        self.ctx = ctx
        self.src = src
        self.file_index = file_index
        self.path = path or ctx.path
        self.little = ctx.little
        self.header = event_header_struct(ctx.little)
        # Recovery: file mode and --threads data files (seekable, bounded) and
        # pipe mode (a stream: resync scans a bounded look-ahead window held
        # in the source's buffer, going forward only).
        self.stream = src.end is None
        self.recover = not owner.strict and (self.stream or src.seekable)
        # (src.end is an offset when the source is not a stream)
        self.data_end: int = _NO_END if self.stream else src.end  # type: ignore[assignment]
        if self.recover and self.stream and not src.seekable:
            # The look-back into the record just read (its size may be what
            # is wrong) stays in the buffer.
            src.keep = _LOOKAHEAD
        self.prev: int | None = None    # offset of the last good record (recovery)
        # SAMPLE sizes seen: a SAMPLE far larger than every one before it may
        # hide the next records (its size field damaged).
        self.nsamples = self.max_sample = 0
        self.scanned = 0        # resync scans never read a byte twice: time stays linear
        # whether the last chain _plausible_at accepted held by reaching the end
        self.chain_hit_end = False
        # Records are 8-byte multiples in perf's files, except COMPRESSED ones
        # (and some other writers'): then resync tries every byte.
        self.step = 8
        self.align_mask = 7
        if Feature.COMPRESSED in owner.features or src.pos % 8:
            self._unaligned()
        self.decompressor: Decompressor | None = None
        self.least = self.fast_least = {}
        self.sample_min = 8
        self._refresh_rule()
        self.state: WalkState | None = None     # (resume_from)
        self.took_careful = False

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
        if state is None or not state.pause or not self.took_careful or \
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
        attr is added.  `fast`: the fast lane's copy too (the walk refreshes
        it where it applies a HEADER_ATTR itself, not inside compressed data,
        as the reader always has)."""
        self.least = least_sizes(self.ctx.trailer_size())
        if fast:
            self.fast_least = {t: s for t, s in self.least.items() if t not in _CAREFUL_ONLY}
            self.sample_min = self.fast_least[RT.SAMPLE]

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
            look = src.peek(_LOOKAHEAD)
            end = src.known_end
            if len(look) >= 8 and self._plausible_at(look, 0, offset + size,
                                                     _NO_END if end is None else end):
                return None
        return found

    # ------------------------------------------------------------- the walk
    def records(self) -> Iterator[Record]:
        """The records of the source in file order, COMPRESSED ones followed
        by what they hold.  Damaged stretches are skipped and noted with the
        owner (recover), else raise CorruptError."""
        owner, ctx, src, path = self.owner, self.ctx, self.src, self.path
        ctx.refresh_id_positions()
        self._refresh_rule()
        recover, stream = self.recover, self.stream
        file_index = self.file_index
        hdr = self.header
        unpack_header = hdr.unpack_from
        next_record = src.next_record
        attr_for = ctx.attr_for
        # (locals for the lane, its hottest loop)
        SAMPLE, FINISHED_ROUND, FINISHED_INIT = _SAMPLE, _FINISHED_ROUND, _FINISHED_INIT
        make_record = ctx.make_record
        while True:
            if self.took_careful and self._pause():
                return
            # The fast lane: SAMPLE records wholly in the buffer, followed by
            # a plausible header: `plausible` inlined on its table (bar the
            # types it leaves to the careful path below, which takes every
            # other record and every anomaly).  The walk state it changes
            # lives in locals here and goes back to the walker when it leaves.
            buf, head, view, base = src.buf, src.head, src.view, src.pos
            stop = len(buf) - 8
            attrs = ctx.attrs
            single = attrs[0] if attrs and (len(attrs) == 1 or not ctx.id_to_attr) else None
            src_end = self.data_end if recover else None
            least_of = self.fast_least
            sample_min = self.sample_min
            align_mask = self.align_mask
            prev, nsamples, max_sample = self.prev, self.nsamples, self.max_sample
            # (what the careful path's string check wants: see below)
            trailer = ctx.trailer_size()
            while head < stop:
                rtype, misc, size = unpack_header(buf, head)
                if rtype == SAMPLE:
                    if size < sample_min or size & align_mask or head + size > stop or \
                            recover and nsamples >= 16 and size > 2 * max_sample + 64:
                        break
                else:
                    # The other kernel records (FORK, COMM, MMAP2, EXIT: seven a
                    # process a shell starts) take the lane in recover mode
                    # when the careful path would pass them as they are: a
                    # known type of at least its least size, aligned, wholly
                    # here, a sane header after it, and for MMAP, MMAP2 and
                    # COMM a size their name and trailer account for
                    # (_check_string_record).  Anything else goes there.
                    least = least_of.get(rtype)
                    if not recover or rtype >= USER_TYPE_START or \
                            least is None or size < least or size & 7 or \
                            size & align_mask or head + size > stop:
                        break
                    if rtype in _STRING_AT:
                        named = named_size(buf, head, rtype, size, trailer)
                        if named is None or size > named + 8:
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
                    rec = Record(ctx, SAMPLE, misc, size, offset, body, attr, time,
                                 file=file_index)
                else:
                    # (its event and time as the careful path finds them)
                    rec = make_record(rtype, misc, size, offset, body)
                    rec.file = file_index
                head += size
                yield rec
            # (Nothing reads the source while the walk is suspended in the
            # lane: its position goes back once, here, not once a record.)
            src.head = head
            self.prev, self.nsamples, self.max_sample = prev, nsamples, max_sample
            got = next_record(hdr)
            if got is None:
                return
            self.took_careful = True
            offset, rtype, misc, size, raw = got
            if rtype is None:
                owner.warnings.append("%s: offset %#x: file ends inside a record header"
                                      % (path, offset))
                owner.truncated_at = offset
                return
            why = None
            if size < 8:
                why = "record size %d is smaller than its header (type %d)" % (size, rtype)
                if not recover:
                    raise CorruptError(why, path=path, offset=offset)
            elif len(raw) < size:
                why = "a %s record of %d bytes runs past the end of the data" % (
                    record_type_name(rtype), size)
            elif recover and (rtype == 0 or rtype > 0xFFFF):
                why = "impossible record type %#x" % rtype
            elif recover and rtype < USER_TYPE_START and size - 8 < MIN_BODY.get(rtype, 0) \
                    and not (stream and len(src.peek(8)) < 8):
                # (A short record that ends a stream, or that only a cut
                # header follows, is delivered, as perf counts it: nothing
                # after it says it is damaged.)
                why = "%s record of %d bytes is too short" % (record_type_name(rtype), size)
            if why is not None:
                if self._skip_damaged(offset, rtype, size, raw, why):
                    continue
                return
            if recover and rtype != _AUXTRACE and rtype != _TRACING_DATA \
                    and offset + size < self.data_end:
                # The careful path's own fast check: the next header is one
                # we know, of a sane size (`plausible` inlined, as above).
                buf2, head2 = src.buf, src.head
                big = False
                if rtype == SAMPLE:
                    big = self.nsamples >= 16 and size > 2 * self.max_sample + 64
                    if not big:
                        self.nsamples += 1
                        if size > self.max_sample:
                            self.max_sample = size
                if not big and rtype not in _STRING_AT and rtype != _COMPRESSED and \
                        rtype != _COMPRESSED2 and len(buf2) - head2 >= 8:
                    t2, _, s2 = unpack_header(buf2, head2)
                    least = self.fast_least.get(t2)
                    if least is not None and least <= s2 and not s2 & self.align_mask and \
                            offset + size + s2 <= self.data_end and \
                            (s2 == 8 or (t2 != FINISHED_ROUND and t2 != FINISHED_INIT)):
                        self.prev = offset
                        rec = ctx.make_record(rtype, misc, size, offset, raw[8:])
                        rec.file = file_index
                        if rtype < USER_TYPE_START:
                            yield rec
                            continue
                        owner.apply_user_record(rec, path)
                        if rtype == _HEADER_ATTR:
                            self._refresh_rule()
                        yield rec
                        continue
                resume = None
                if rtype in _STRING_AT:
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
                if resume is not None:
                    self.scanned = max(self.scanned, resume or offset + size)
                    if resume > 0:
                        # This record's size is too large: the records after it
                        # start inside it.
                        owner.note_skipped(path, offset, resume - offset,
                                           "record size %d overlaps the next records" % size)
                        self.prev = None
                        src.goto(resume)
                        continue
            self.prev = offset
            if size & 7:
                self._unaligned()
            rec = ctx.make_record(rtype, misc, size, offset, raw[8:])
            rec.file = file_index
            if rtype < USER_TYPE_START:
                yield rec
                continue
            if rtype == _AUXTRACE or rtype == _TRACING_DATA:
                try:
                    self._read_payload(rec)
                except PerfDataError as exc:
                    # A stream cannot come back from a payload read on a
                    # wrong size: stop with the error.
                    if not recover or (stream and rtype == _TRACING_DATA):
                        raise
                    owner.note_skipped(path, offset, size, exc.message)
                    src.goto(offset + size)
                    continue
                if recover and stream and rtype == _TRACING_DATA:
                    # Its payload was skipped by the size in its body: when
                    # no sane record follows, that size was wrong and where
                    # the records go on is unknown (resync could land inside
                    # the tracing data): stop, as strict mode does.
                    look = src.peek(8)
                    if len(look) == 8:
                        t2, _, s2 = unpack_header(look)
                        if not self.plausible(t2, s2, src.offset, self.data_end):
                            yield rec
                            raise CorruptError(
                                "no sane record after the tracing data (%d bytes): its "
                                "size may be damaged" % rec.payload_size,
                                path=path, offset=src.offset)
            elif rtype == _COMPRESSED or rtype == _COMPRESSED2:
                yield rec
                if self.decompressor is None:
                    self.decompressor = Decompressor(owner.decompress_limit())
                try:
                    yield from self._expand(rec)
                except CorruptError as exc:
                    if not recover:
                        raise
                    # perf ends a zstd frame with every record: start afresh.
                    owner.note_skipped(path, rec.offset, rec.size, exc.message)
                    self.decompressor = None
                continue
            else:
                owner.apply_user_record(rec, path)
                if recover and rtype == _HEADER_ATTR:
                    self._refresh_rule()
            yield rec

    # ------------------------------------------------------------- recovery
    def _skip_damaged(self, offset: int, rtype: int, size: int, raw: memoryview, why: str) -> bool:
        """A damaged record at `offset`: note it and move the source to where
        the records go on.  False when they do not (the walk ends)."""
        src, path, owner = self.src, self.path, self.owner
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
                owner.warnings.append("%s: offset %#x: record size overlaps the next "
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
            owner.warnings.append("%s: offset %#x: file ends inside a %s record "
                                  "(%d of %d bytes)" % (path, offset, record_type_name(rtype),
                                                        len(raw), size))
            owner.truncated_at = offset
            return False
        stop = self.data_end if resume is None else resume
        owner.note_skipped(path, offset, stop - offset, why)
        if resume is None:
            return False
        self.prev = None
        src.goto(resume)
        return True

    def _check_string_record(self, rtype: int, raw: memoryview, offset: int,
                             size: int) -> int | None:
        """MMAP, MMAP2 and COMM end with their name, padded to 8 bytes, and the
        sample_id trailer: a size well past that may hide the next records."""
        expected = named_size(bytes(raw[:8 + _STRING_AT[rtype] + 4104]), 0, rtype, size,
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
        find = _TYPE_PATTERNS[self.little].search
        src.goto(start)
        while src.offset + 8 <= stop:
            at = src.offset
            # A stream holds only this window (the block plus look-ahead).
            buf = src.peek(RESYNC_BLOCK + _LOOKAHEAD)
            if len(buf) < 8:
                return None
            end = src.known_end
            if end is None:
                end = _NO_END
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
                self.owner.warnings.append("%s: offset %#x: AUXTRACE payload cut short"
                                           % (path, rec.offset))
            return
        if len(rec.body) < 4:
            raise CorruptError("TRACING_DATA record too short", path=path, offset=rec.offset)
        size = struct.unpack_from(u + "I", rec.body)[0]
        rec.payload_size = size
        if len(rec.body) >= 4 + size:
            # simpleperf puts the data inside the record; perf after it.
            rec.payload_offset = rec.offset + 12
            self.owner.tracing_data_read(bytes(rec.body[4:4 + size]), True)
            return
        rec.payload_offset = src.offset
        if size > MAX_TRACING_DATA:
            raise CorruptError("tracing data of %d bytes" % size, path=path, offset=rec.offset)
        data = src.take(size)
        if len(data) < size:
            raise TruncatedError("file ends inside the tracing data", path=path,
                                 offset=rec.payload_offset)
        self.owner.tracing_data_read(bytes(data), False)

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
                self.owner.apply_user_record(inner, path)
                if rtype == RT.HEADER_ATTR:
                    # The rule follows the new attr; the fast lane's copy
                    # waits for a HEADER_ATTR outside compressed data (as it
                    # always has: kept so that the walk stays the same).
                    self._refresh_rule(fast=False)
            yield inner
            pos += size
        decompressor.keep(data[pos:])
