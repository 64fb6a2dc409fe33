"""PerfFile: the perf.data container (file, pipe and directory forms).

What a recording holds about itself: the header, the event attrs and their
ids, the feature sections and where the data is (the data section, the
data.N files of a `perf record --threads` directory, or a stream).  The
records are walked by `walker.RecordWalker` (one per byte source) and decoded
by `decoder` (which needs no file); this module puts them together:
`records()` in file order or in perf's time order (ordering.py).  In pipe
mode attrs and features arrive as records: each walk is handed the
recording's `HeaderRecords` (headerrecords.py), which keeps what they define,
and its `WalkLog`, which keeps what it skipped.
"""
from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING, Any, BinaryIO, Iterator, Literal

import construct as cs

from . import ordering
from .attr import attr_schema, attr_size_at
from .constants import (MAGIC_V1, MAGIC_V2, Feature, RecordType as RT, USER_TYPE_START)
from .decoder import DecodeContext, Record, decode_record
from .errors import CorruptError, NotPerfDataError, PerfDataError, TruncatedError, WalkLog
from .eventattr import EventAttr
from .header import (FILE_HEADER_SIZE, FILE_HEADER_SIZE_NO_FEATURES, PIPE_HEADER_SIZE,
                     feature_bits, feature_table_schema, file_header_schema,
                     pipe_header_schema)
from .headerrecords import HeaderRecords, decompress_limit
from .source import ByteSource, file_size, open_input
from .walker import MAX_TRACING_DATA, RecordWalker, WalkOptions, WalkState

if TYPE_CHECKING:
    from .errors import InputName
    from .tracing import EventFormat, TracingData

# Attr sizes perf knows, plus the 16-byte ids section: how perf tells the byte
# order of a file with the old PERFFILE magic from its attr_size.
_V1_FILE_ATTR_SIZES = tuple(s + 16 for s in (64, 72, 80, 96, 104, 112, 120, 128, 136, 144))
# No sane perf.data has an attr section entry or a feature section this large.
MAX_ATTRS = 1 << 16
MAX_IDS = 1 << 24


class PerfFile:
    """An open perf.data.  Use `perfdata.open(path)`."""
    header_records: HeaderRecords   # the events and what perf's own records defined
    _data_start: int
    _data_end: int | None   # None: a stream's

    def __init__(self, path: str | os.PathLike[str] | BinaryIO | None,
                 max_decompressed: int | None = None, strict: bool = False) -> None:
        """strict: stop with CorruptError at the first corrupt record of the
        data section.  By default (file mode) the reader skips it, finds the
        next plausible record header, notes the skipped range in `skipped`
        and `warnings`, and goes on."""
        self.path_arg = path
        self.strict = strict
        # What the walks skipped: (path, offset, bytes, why) of corrupt
        # data, and the warnings
        self.log = WalkLog()
        self.skipped = self.log.skipped
        self.warnings = self.log.warnings
        self.attrs: list[EventAttr] = []
        self.id_to_attr: dict[int, EventAttr] = {}
        self.features: dict[int, tuple[int, int]] = {}  # fid -> (offset, size) in file mode
        # (never None once made: _read_header, below, sets it or raises)
        self.header: dict[str, Any] = None  # type: ignore[assignment]
        self.is_pipe = False
        self.is_directory = False
        self.data_files: list[str] = []
        self.stats: dict[str, Any] = {}
        self.max_decompressed = max_decompressed
        self._dir_path: str | os.PathLike[str] | None = None
        if not hasattr(path, "read") and path not in ("-", None) and os.path.isdir(path):
            self.is_directory = True
            self._dir_path = path
            path = os.path.join(path, "data")
        try:
            self._f, self._seekable, self.path = open_input(path)
        except OSError as exc:
            raise NotPerfDataError("cannot open: %s" % (exc.strerror or exc), path=str(path))
        self.size = file_size(self._f) if self._seekable else None
        self._read_header()

    # ----------------------------------------------------------------- header
    def _error(self, cls: type[PerfDataError], message: str, offset: int) -> PerfDataError:
        return cls(message, path=self.path, offset=offset)

    def _read_at(self, offset: int, size: int) -> bytes:
        """Bytes [offset, offset+size) of a seekable file, bounded by its size."""
        if self.size is not None and (offset > self.size or size > self.size - offset):
            raise self._error(TruncatedError, "section of %d bytes runs past the end of "
                              "the file (%d bytes)" % (size, self.size), offset)
        self._f.seek(offset)
        data = self._f.read(size)
        if len(data) < size:
            raise self._error(TruncatedError, "file ends inside a section", offset + len(data))
        return data

    def _read_header(self) -> None:
        if self._seekable:
            self._f.seek(0)
        head = _read_upto(self._f, 16)
        self._consumed = head
        if len(head) < 16:
            raise self._error(NotPerfDataError if len(head) < 8 else TruncatedError,
                              "file too short for a perf.data header (%d bytes)" % len(head), 0)
        magic = head[:8]
        le_size, be_size = struct.unpack("<Q", head[8:16])[0], struct.unpack(">Q", head[8:16])[0]
        if magic == MAGIC_V2:
            self.little = True
        elif magic == MAGIC_V2[::-1]:
            self.little = False
        elif magic == MAGIC_V1:
            # The old magic is byte-order neutral: perf guesses the order from the
            # sizes it knows (check_magic_endian / try_all_*_abis).
            if le_size == PIPE_HEADER_SIZE:
                self.little = True
            elif be_size == PIPE_HEADER_SIZE:
                self.little = False
            else:
                rest = _read_upto(self._f, 8)
                self._consumed += rest
                attr_size = struct.unpack("<Q", rest)[0] if len(rest) == 8 else 0
                self.little = attr_size in _V1_FILE_ATTR_SIZES or \
                    struct.unpack(">Q", rest)[0] not in _V1_FILE_ATTR_SIZES
            self.warnings.append("legacy PERFFILE magic")
        else:
            raise self._error(NotPerfDataError, "not a perf.data file (magic %r)" % bytes(magic), 0)
        self.header_version = 1 if magic == MAGIC_V1 else 2
        # What decoding a record needs: shares `attrs` and `id_to_attr`, which
        # grow as pipe-mode attrs arrive.
        self.ctx = DecodeContext(self.little, self.path, self.attrs, self.id_to_attr)
        self.header_records = HeaderRecords(self.ctx, self.warnings, self.max_decompressed)
        size = le_size if self.little else be_size
        if size == PIPE_HEADER_SIZE:
            self.is_pipe = True
            self.header = dict(pipe_header_schema(self.little).parse(head))
            self._data_start, self._data_end = PIPE_HEADER_SIZE, None
            # Attrs and features arrive as records: read them now, so that
            # `attrs` and `feature()` answer before iteration.
            self._pipe_setup()
            return
        if size not in (FILE_HEADER_SIZE, FILE_HEADER_SIZE_NO_FEATURES):
            raise self._error(NotPerfDataError, "unexpected header size %d" % size, 8)
        if not self._seekable:
            raise self._error(PerfDataError, "a perf.data in file mode must be seekable "
                              "(record with -o - for pipe mode)", 0)
        raw = self._read_at(0, size)
        if size == FILE_HEADER_SIZE_NO_FEATURES:
            raw = raw + bytes(32)
        hdr = file_header_schema(self.little).parse(raw)
        self.header = {k: v for k, v in hdr.items() if not k.startswith("_")}
        for key in ("attrs", "data", "event_types"):
            self.header[key] = {"offset": hdr[key].offset, "size": hdr[key].size}
        feature_ids = feature_bits(hdr.adds_features, self.little)
        data = hdr.data
        if self.size is not None and data.offset > self.size:
            raise self._error(CorruptError, "data section offset %#x is past the end of the "
                              "file (%d bytes)" % (data.offset, self.size), 40)
        self._data_start = data.offset
        self._data_end = data.offset + data.size
        if data.size == 0:
            self.warnings.append("%s: the data size field is 0: perf record was not terminated "
                                 "properly; reading records up to the end of the file"
                                 % self.path)
            self._data_end = self.size
            feature_ids = []
        elif self.size is not None and self._data_end > self.size:
            self.warnings.append("%s: data section (%d bytes at %#x) runs past the end of the "
                                 "file: truncated recording" % (self.path, data.size, data.offset))
            self._data_end = self.size
            feature_ids = []
        self._read_attrs(hdr)
        self._read_feature_table(feature_ids)
        if self.is_directory:
            self._find_data_files()

    def _read_attrs(self, hdr: cs.Container) -> None:
        stride = hdr.attr_size
        if hdr.attrs.size == 0:
            return
        if stride < 64 + 16:
            raise self._error(CorruptError, "attr_size %d is too small" % stride, 16)
        count = hdr.attrs.size // stride
        if count > MAX_ATTRS:
            raise self._error(CorruptError, "%d attrs" % count, 24)
        table = self._read_at(hdr.attrs.offset, count * stride)
        section = cs.Struct("offset" / (cs.Int64ul if self.little else cs.Int64ub),
                            "size" / (cs.Int64ul if self.little else cs.Int64ub))
        for index in range(count):
            base = index * stride
            attr_size = attr_size_at(table, base, self.little)
            if attr_size + 16 > stride:
                # perf refuses attrs larger than it knows; we read what fits in
                # the stride and keep going.
                self.warnings.append("attr %d: size %d does not fit the attr_size %d"
                                     % (index, attr_size, stride))
                attr_size = stride - 16
            try:
                attr = attr_schema(attr_size, self.little).parse(table[base:base + attr_size])
                ids_sec = section.parse(table[base + attr_size:base + attr_size + 16])
            except cs.ConstructError as exc:
                raise self._error(CorruptError, "attr %d: %s" % (index, exc),
                                  hdr.attrs.offset + base)
            ids = []
            if ids_sec.size:
                if ids_sec.size % 8 or ids_sec.size // 8 > MAX_IDS:
                    raise self._error(CorruptError, "attr %d: ids section of %d bytes"
                                      % (index, ids_sec.size), hdr.attrs.offset + base + attr_size)
                raw = self._read_at(ids_sec.offset, ids_sec.size)
                ids = list(struct.unpack(("<" if self.little else ">") + "%dQ"
                                         % (ids_sec.size // 8), raw))
            self.header_records.add_attr(attr, ids)

    def _read_feature_table(self, feature_ids: list[int]) -> None:
        if not feature_ids:
            return
        offset = self._data_end
        count = len(feature_ids)
        try:
            raw = self._read_at(offset, count * 16)  # type: ignore[arg-type]  # (file mode: an end)
        except TruncatedError as exc:
            self.warnings.append("feature section table: %s" % exc)
            return
        table = feature_table_schema(count, self.little).parse(raw)
        for fid, sec in zip(feature_ids, table):
            if self.size is not None and (sec.offset > self.size or
                                          sec.size > self.size - sec.offset):
                self.warnings.append("feature %s: section at %#x (%d bytes) is outside "
                                     "the file" % (_fname(fid), sec.offset, sec.size))
                continue
            self.features[fid] = (sec.offset, sec.size)
        unknown = [fid for fid in feature_ids if fid > max(Feature)]
        if unknown:
            self.warnings.append("unknown feature bits: %s" % ", ".join(map(str, unknown)))

    def _find_data_files(self) -> None:
        names = sorted((n for n in os.listdir(self._dir_path)
                        if n.startswith("data.") and n[5:].isdigit()),
                       key=lambda n: int(n[5:]))
        # (a directory's: _dir_path is set)
        self.data_files = [os.path.join(self._dir_path, n) for n in names]  # type: ignore[arg-type]

    @property
    def input_paths(self) -> list[InputName]:
        """The files the profile is read from: the file (for the directory
        format of `perf record --threads`, its `data` file with the header)
        and the directory's data.N files; empty for a stream."""
        if not self._seekable and not self.is_directory:
            return []
        return [self.path] + list(self.data_files)

    # -------------------------------------------------------------- features
    @property
    def data_range(self) -> tuple[int, int | None]:
        """(start, end): the byte offsets of the data section the records are
        read from, as walk_range() takes them.  The header's, except that the
        end is the file's size where the header's size is 0 (perf record was
        not terminated) or runs past the end (a truncated file); for a stream
        (pipe mode), (the header's size, None)."""
        return self._data_start, self._data_end

    @property
    def feature_ids(self) -> list[int]:
        return sorted(set(self.features) | set(self.header_records.feature_data))

    def has_feature(self, fid: int) -> bool:
        return fid in self.features or fid in self.header_records.feature_data

    def feature_offset(self, fid: int) -> int | None:
        sec = self.features.get(fid)
        return sec[0] if sec else None

    def feature_size(self, fid: int) -> int | None:
        """The size of a feature section, as its table entry says (no read)."""
        if fid in self.header_records.feature_data:
            return len(self.header_records.feature_data[fid])
        sec = self.features.get(fid)
        return sec[1] if sec else None

    def feature_bytes(self, fid: int) -> bytes | None:
        if fid in self.header_records.feature_data:
            return self.header_records.feature_data[fid]
        sec = self.features.get(fid)
        if sec is None:
            return None
        if fid == Feature.TRACING_DATA and sec[1] > MAX_TRACING_DATA:
            return None
        return self._read_at(*sec)

    def feature(self, fid: int) -> Any:
        """The parsed feature section, or None when absent."""
        if fid in self.header_records.feature_cache:
            return self.header_records.feature_cache[fid]
        if self.is_pipe and not self._pipe_setup_done:
            self._pipe_setup()
        data = self.feature_bytes(fid)
        if data is None:
            return None
        from . import features
        nr_cpus = None
        if fid == Feature.CPU_TOPOLOGY:
            # Its per-cpu arrays are as long as NRCPUS says (perf's
            # process_cpu_topology()): the one parse every reader shares.
            try:
                nrcpus = self.feature(Feature.NRCPUS)
            except PerfDataError:
                nrcpus = None
            nr_cpus = nrcpus["nr_cpus_available"] if nrcpus else None
        result = features.parse_feature(fid, data, self.little, path=self.path,
                                         offset=self.feature_offset(fid), nr_cpus_avail=nr_cpus)
        self.header_records.feature_cache[fid] = result
        return result

    def recorded_build_ids(self) -> dict[str, str]:
        """{file name: build-id in hex} the recording lists: its BUILD_ID
        feature, or in pipe mode the HEADER_BUILD_ID records read so far
        (the first one listed of a name that has several)."""
        return {name: bids[0] for name, bids in self.recorded_build_id_lists().items()}

    def recorded_build_id_lists(self) -> dict[str, list[str]]:
        """{file name: its distinct build-ids in hex, in the order listed}:
        perf lists one entry per binary it knew, by name alone, so one name
        has several where several files had it (a container's and the
        host's, each read through its process's mount namespace)."""
        if self.header_records.build_id_records:
            data: bytes | None = b"".join(self.header_records.build_id_records)
        else:
            data = self.feature_bytes(Feature.BUILD_ID)
        if not data:
            return {}
        from . import features
        try:
            entries = features.parse_feature(Feature.BUILD_ID, data, self.little,
                                             path=self.path,
                                             offset=self.feature_offset(Feature.BUILD_ID))
        except PerfDataError as exc:
            self.warnings.append("BUILD_ID: %s" % exc)
            return {}
        out: dict[str, list[str]] = {}
        for entry in entries or ():
            name, bid = entry.get("filename"), entry.get("build_id")
            if name and bid:
                text = bytes(bid).hex() if isinstance(bid, (bytes, bytearray)) else bid
                known = out.setdefault(name, [])
                if text not in known:
                    known.append(text)
        return out

    def resolve_event_names(self, pipe_event_desc: bool = True) -> None:
        """Name events as perf does: EVENT_DESC names (by id), then tracepoints
        from the tracing data formats, else the name computed from the attr.

        In pipe mode `perf script` takes the EVENT_DESC names but `perf report
        --stats` keeps the computed ones (seen on our pipe recording and the
        quipper pipe files): pipe_event_desc=False gives the latter."""
        try:
            use_desc = pipe_event_desc or not self.is_pipe
            descs = (self.feature(Feature.EVENT_DESC) or []) if use_desc else []
        except PerfDataError as exc:
            self.warnings.append("EVENT_DESC: %s" % exc)
            descs = []
        needs_format = self.header_records.name_events(descs)
        if needs_format:
            self.header_records.name_tracepoints(needs_format, self.tracepoint_formats())

    _tracing: TracingData | Literal[False] | None = None

    def tracing(self) -> TracingData | None:
        """The parsed TRACING_DATA (event formats, kernel sizes), or None."""
        if self._tracing is None:
            self._tracing = False
            if self.is_pipe and not self._pipe_setup_done:
                self._pipe_setup()
            data = self.feature_bytes(Feature.TRACING_DATA)
            if data:
                from .tracing import parse_tracing_data
                try:
                    self._tracing = parse_tracing_data(data, path=self.path)
                except PerfDataError as exc:
                    self.warnings.append("tracing data: %s" % exc)
        return self._tracing or None

    def tracepoint_formats(self) -> dict[int, EventFormat]:
        """{tracepoint id: EventFormat} from the tracing data ({} if none)."""
        tracing = self.tracing()
        return tracing.events if tracing is not None else {}

    # --------------------------------------------------------------- records
    _pipe_setup_done = False

    def _pipe_setup(self) -> None:
        """Pipe mode: attrs and features arrive as records.  Read records until
        the first SAMPLE, so that `attrs` and `feature()` are usable before
        iteration; the records read are kept and replayed by `records()`."""
        self._pipe_setup_done = True
        self._pending = []
        it = self._walk(self._main_source(), 0)
        self._pipe_iter = it
        try:
            for rec in it:
                self._pending.append(rec)
                if rec.type < USER_TYPE_START or rec.type == RT.FINISHED_INIT:
                    break
        except PerfDataError as exc:
            self._pending_error = exc

    _pending: list[Record] | tuple[()] = ()
    _pipe_iter: Iterator[Record] | None = None
    _pending_error: PerfDataError | None = None

    def _main_source(self) -> ByteSource:
        if self.is_pipe:
            return ByteSource(self._f, PIPE_HEADER_SIZE, None, self._seekable,
                              consumed=b"" if self._seekable else self._consumed[PIPE_HEADER_SIZE:])
        return ByteSource(self._f, self._data_start, self._data_end, True)

    def _file_order(self) -> Iterator[Record]:
        if self.is_pipe:
            if not self._pipe_setup_done:
                self._pipe_setup()
            yield from self._pending
            self._pending = []
            if self._pending_error:
                raise self._pending_error
            yield from self._pipe_iter  # type: ignore[misc]  # (set by _pipe_setup)
            return
        yield from self._walk(self._main_source(), 0)
        for index, path in enumerate(self.data_files, 1):
            try:
                f = open(path, "rb")
            except OSError as exc:
                raise PerfDataError("cannot open: %s" % exc.strerror, path=path)
            with f:
                end = file_size(f)
                yield from self._walk(ByteSource(f, 0, end, True), index, path)

    def _walk(self, src: ByteSource, file_index: int, path: InputName | None = None
              ) -> Iterator[Record]:
        return self._walker(src, file_index, path).records()

    def _walker(self, src: ByteSource, file_index: int, path: InputName | None = None
                ) -> RecordWalker:
        """A walk of `src`, handed what it needs of the recording."""
        if not self.is_pipe:
            # (a stream's HEADER_FEATURE sets it as it arrives)
            self.header_records.decompress_limit = self.decompress_limit()
        return RecordWalker(self.header_records, src, self.log, WalkOptions(
            strict=self.strict, unaligned=Feature.COMPRESSED in self.features,
            file_index=file_index, path=path))

    def walk_range(self, start: int, end: int,
                   resume: WalkState | None = None) -> Iterator[Record]:
        """The records in bytes [start, end) of the data section (file mode),
        in file order, COMPRESSED ones followed by what they hold, read
        through a file handle of their own: the seam for a parallel reader
        whose workers each walk a range that starts at a record boundary
        (inside data_range).
        Recovery stays inside the range, unless `resume` gives the state of
        a walk that came to `start` from the data's start: then the walk
        goes on exactly as that one would, and leaves its own state there
        where it stops (perfdata.core counts the records between such walks
        in C)."""
        if self.is_pipe:
            raise PerfDataError("a stream has no byte ranges", path=self.path)
        # (file mode: the data section has an end)
        if not self._data_start <= start <= end <= self._data_end:  # type: ignore[operator]
            raise ValueError("[%#x, %#x) is not inside the data section [%#x, %#x)"
                             # (that end)
                             % (start, end, self._data_start, self._data_end))  # type: ignore[str-format]
        try:
            f = open(self.path, "rb")
        except OSError as exc:
            raise PerfDataError("cannot open: %s" % exc.strerror, path=self.path)
        with f:
            walker = self._walker(ByteSource(f, start, end, True), 0)
            if resume is not None:
                walker.resume_from(resume)
            yield from walker.records()

    def records(self, order: str = "time", include_compressed: bool = False
                ) -> Iterator[Record]:
        """Iterate over the records.

        order='file': as stored; 'time': as perf delivers them (default).
        COMPRESSED records are replaced by what they hold unless
        include_compressed is set, in which case they are yielded too, before
        their content.
        """
        source = self._file_order()
        # Looked up once: an enum member read is a type-cache probe a record.
        left_out = () if include_compressed else (int(RT.COMPRESSED), int(RT.COMPRESSED2))
        if order == "file":
            for rec in source:
                if rec.type in left_out:
                    continue
                yield rec
            return
        finished_round = int(RT.FINISHED_ROUND)
        queue = ordering.OrderedQueue()
        push = queue.push
        no_time = ordering.NO_TIME
        for rec in source:
            rtype = rec.type
            if rtype >= USER_TYPE_START:
                if rtype in left_out:
                    continue
                yield rec
                if rtype == finished_round:
                    yield from queue.flush_round()
                continue
            time = rec.time
            if time in no_time:
                yield rec
            else:
                push(time, rec)
        yield from queue.flush_all()
        if queue.out_of_order:
            # perf's sentence (perf_session__warn_about_errors): records
            # timed before ones a round already delivered come after them.
            warning = "%d out of order events recorded." % queue.out_of_order
            if warning not in self.warnings:
                self.warnings.append(warning)

    def __iter__(self) -> Iterator[Record]:
        return self.records()

    def samples(self, order: str = "time") -> Iterator[Record]:
        for rec in self.records(order):
            if rec.type == RT.SAMPLE:
                yield rec

    def decompress_limit(self) -> int:
        """Most bytes one COMPRESSED record may expand to."""
        if self.max_decompressed:
            return self.max_decompressed
        try:
            return decompress_limit(self.feature(Feature.COMPRESSED))
        except Exception:       # a broken feature section must not stop the data
            return decompress_limit(None)

    def apply_user_record(self, rec: Record, path: InputName | None) -> None:
        """perf's own records that define the file's events and features, as
        a walk hands them over (the compiled walk hands them here)."""
        self.header_records.apply(rec, path)

    @property
    def tracing_data(self) -> bytes | None:
        """The bytes of a stream's HEADER_TRACING_DATA."""
        return self.header_records.tracing_data

    @property
    def truncated_at(self) -> int | None:
        """Where the input ends inside a record, as a walk found (or None)."""
        return self.log.truncated_at

    def parse_record(self, rec: Record) -> dict:
        """rec.parse(): the record's fields (decoder.decode_record)."""
        return decode_record(rec.type, rec.misc, rec.body, rec.attr, self.little,
                             self.path, rec.offset)

    def close(self) -> None:
        try:
            self._f.close()
        except OSError:
            pass

    def __enter__(self) -> PerfFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _read_upto(f: BinaryIO, n: int) -> bytes:
    """n bytes, or fewer only at the end of input (a pipe may return less)."""
    parts = []
    got = 0
    while got < n:
        chunk = f.read(n - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _fname(fid: int) -> str:
    from .constants import feature_name
    return feature_name(fid)
