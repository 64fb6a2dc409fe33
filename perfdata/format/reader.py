"""PerfFile: the perf.data container (file, pipe and directory forms).

Layers: `source.py` gives bytes; this module finds the header, attrs and
feature sections, walks the records of the data section (expanding zstd
COMPRESSED records as it goes) and hands out `Record`s, in file order or in
perf's time order (ordering.py).  Record bodies are memoryviews of the read
chunks; `Record.parse()` decodes them on demand.
"""
import os
import re
import struct

import construct as cs

from . import ordering
from .attr import attr_schema, attr_size_at
from .compression import Decompressor
from .constants import (MAGIC_V1, MAGIC_V2, Feature, RecordType as RT, record_type_name)
from .errors import CorruptError, NotPerfDataError, PerfDataError, TruncatedError
from .eventattr import EventAttr
from .fastpath import DecodeError
from .header import (FILE_HEADER_SIZE, FILE_HEADER_SIZE_NO_FEATURES, PIPE_HEADER_SIZE,
                     feature_bits, feature_table_schema, file_header_schema,
                     pipe_header_schema)
from .records import body_schemas, event_header_struct, header_attr_schema, read_format_schema
from .source import ByteSource, file_size, open_input
from .plain import plain

# Records the kernel writes carry a sample_id trailer; perf's own (>= 64) do not.
USER_TYPE_START = 64
# Attr sizes perf knows, plus the 16-byte ids section: how perf tells the byte
# order of a file with the old PERFFILE magic from its attr_size.
_V1_FILE_ATTR_SIZES = tuple(s + 16 for s in (64, 72, 80, 96, 104, 112, 120, 128, 136, 144))
# No sane perf.data has an attr section entry or a feature section this large.
MAX_ATTRS = 1 << 16
MAX_IDS = 1 << 24
MAX_TRACING_DATA = 1 << 30
# Recovery (file mode, strict=False): what a plausible record header looks like.
KNOWN_TYPES = frozenset(int(t) for t in RT)
# Fixed body bytes of the kernel records (before strings and the trailer).
MIN_BODY = {RT.MMAP: 32, RT.LOST: 16, RT.COMM: 8, RT.EXIT: 24, RT.THROTTLE: 24,
            RT.UNTHROTTLE: 24, RT.FORK: 24, RT.READ: 16, RT.MMAP2: 64, RT.AUX: 24,
            RT.ITRACE_START: 8, RT.LOST_SAMPLES: 8, RT.SWITCH_CPU_WIDE: 8,
            RT.NAMESPACES: 16, RT.KSYMBOL: 16, RT.BPF_EVENT: 16, RT.CGROUP: 8,
            RT.TEXT_POKE: 12, RT.AUX_OUTPUT_HW_ID: 8}
# Where the name starts in the body of the records that end with one.
_STRING_AT = {RT.MMAP: 32, RT.MMAP2: 64, RT.COMM: 8}
# Resynchronisation reads the rest of the data section in blocks of this size
# (plus one largest record of look-ahead).
RESYNC_BLOCK = 1 << 20
_LOOKAHEAD = 2 * (1 << 16) + 16
# The end of a stream not yet read to its end (pipe mode): past any offset.
_NO_END = 1 << 62


def _type_pattern(little):
    """A regex matching the u32 type field of every known record type: resync
    tests only its matches (C speed over garbage; the same positions)."""
    types = sorted(KNOWN_TYPES)
    if types[-1] > 0xFF:
        return re.compile(b"(?s)....")
    cls = b"[" + b"".join(re.escape(bytes([t])) for t in types) + b"]"
    return re.compile(cls + b"\0\0\0" if little else b"\0\0\0" + cls)


_TYPE_PATTERNS = {True: _type_pattern(True), False: _type_pattern(False)}


class Record:
    """One record: header fields, where it was, its body, its event."""
    __slots__ = ("type", "misc", "size", "offset", "body", "attr", "time", "file",
                 "compressed", "payload_offset", "payload_size", "_pf")

    def __init__(self, pf, rtype, misc, size, offset, body, attr=None, time=None,
                 compressed=False, file=0):
        self._pf = pf
        self.type = rtype
        self.misc = misc
        self.size = size
        self.offset = offset
        self.body = body
        self.attr = attr
        self.time = time
        self.file = file
        self.compressed = compressed
        self.payload_offset = None
        self.payload_size = 0

    @property
    def name(self):
        return record_type_name(self.type)

    def parse(self):
        """Decode the body into a dict (SAMPLE: the sample fields; kernel records:
        their fields plus `sample_id` from the trailer)."""
        return self._pf.parse_record(self)

    def __repr__(self):
        return "<%s at %#x size %d>" % (self.name, self.offset, self.size)


class PerfFile:
    """An open perf.data.  Use `perfdata.open(path)`."""

    def __init__(self, path, max_decompressed=None, strict=False):
        """strict: stop with CorruptError at the first corrupt record of the
        data section.  By default (file mode) the reader skips it, finds the
        next plausible record header, notes the skipped range in `skipped`
        and `warnings`, and goes on."""
        self.path_arg = path
        self.strict = strict
        self.skipped = []           # (path, offset, bytes, why) of skipped corrupt data
        self.warnings = []
        self.attrs = []
        self.id_to_attr = {}
        self.features = {}          # fid -> (offset, size) in file mode
        self._feature_data = {}     # fid -> bytes (pipe mode, HEADER_FEATURE)
        self._feature_cache = {}
        # HEADER_BUILD_ID records of pipe mode, whole: together they have the
        # layout of the BUILD_ID feature section.
        self._build_id_records = []
        self.tracing_data = None    # bytes of HEADER_TRACING_DATA (pipe mode)
        self.event_types = []
        self.header = None
        self.is_pipe = False
        self.is_directory = False
        self.data_files = []
        self.stats = {}
        self.max_decompressed = max_decompressed
        self._dir_path = None
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
    def _error(self, cls, message, offset):
        return cls(message, path=self.path, offset=offset)

    def _read_at(self, offset, size):
        """Bytes [offset, offset+size) of a seekable file, bounded by its size."""
        if self.size is not None and (offset > self.size or size > self.size - offset):
            raise self._error(TruncatedError, "section of %d bytes runs past the end of "
                              "the file (%d bytes)" % (size, self.size), offset)
        self._f.seek(offset)
        data = self._f.read(size)
        if len(data) < size:
            raise self._error(TruncatedError, "file ends inside a section", offset + len(data))
        return data

    def _read_header(self):
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

    def _read_attrs(self, hdr):
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
            self._add_attr(attr, ids)

    def _add_attr(self, attr, ids, name=None):
        ea = EventAttr(len(self.attrs), attr, ids, self.little, name)
        self.attrs.append(ea)
        for i in ids:
            self.id_to_attr.setdefault(i, ea)
        return ea

    def _read_feature_table(self, feature_ids):
        if not feature_ids:
            return
        offset = self._data_end
        count = len(feature_ids)
        try:
            raw = self._read_at(offset, count * 16)
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

    def _find_data_files(self):
        names = sorted((n for n in os.listdir(self._dir_path)
                        if n.startswith("data.") and n[5:].isdigit()),
                       key=lambda n: int(n[5:]))
        self.data_files = [os.path.join(self._dir_path, n) for n in names]

    @property
    def input_paths(self):
        """The files the profile is read from: the file (for the directory
        format of `perf record --threads`, its `data` file with the header)
        and the directory's data.N files; empty for a stream."""
        if not self._seekable and not self.is_directory:
            return []
        return [self.path] + list(self.data_files)

    # -------------------------------------------------------------- features
    @property
    def feature_ids(self):
        return sorted(set(self.features) | set(self._feature_data))

    def has_feature(self, fid):
        return fid in self.features or fid in self._feature_data

    def feature_offset(self, fid):
        sec = self.features.get(fid)
        return sec[0] if sec else None

    def feature_bytes(self, fid):
        if fid in self._feature_data:
            return self._feature_data[fid]
        sec = self.features.get(fid)
        if sec is None:
            return None
        if fid == Feature.TRACING_DATA and sec[1] > MAX_TRACING_DATA:
            return None
        return self._read_at(*sec)

    def feature(self, fid):
        """The parsed feature section, or None when absent."""
        if fid in self._feature_cache:
            return self._feature_cache[fid]
        if self.is_pipe and not self._pipe_setup_done:
            self._pipe_setup()
        data = self.feature_bytes(fid)
        if data is None:
            return None
        from . import features
        result = features.parse_feature(fid, data, self.little, path=self.path,
                                         offset=self.feature_offset(fid))
        self._feature_cache[fid] = result
        return result

    def recorded_build_ids(self):
        """{file name: build-id in hex} the recording lists: its BUILD_ID
        feature, or in pipe mode the HEADER_BUILD_ID records read so far."""
        if self._build_id_records:
            data = b"".join(self._build_id_records)
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
        out = {}
        for entry in entries or ():
            name, bid = entry.get("filename"), entry.get("build_id")
            if name and bid:
                out.setdefault(name, bytes(bid).hex() if isinstance(bid, (bytes, bytearray))
                               else bid)
        return out

    def resolve_event_names(self, pipe_event_desc=True):
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
        for index, desc in enumerate(descs):
            name = desc.get("name") if isinstance(desc, dict) else None
            if not name:
                continue
            target = None
            for ident in desc.get("ids") or ():
                target = self.id_to_attr.get(ident)
                if target is not None:
                    break
            if target is None and not desc.get("ids") and index < len(self.attrs):
                target = self.attrs[index]
            if target is not None:
                target.name = name
                target.named_by = "event_desc"
        tracepoints = [ea for ea in self.attrs
                       if ea.attr["type"] == 2 and getattr(ea, "named_by", None) is None]
        if tracepoints:
            events = self.tracepoint_formats()
            for ea in tracepoints:
                fmt = events.get(ea.attr["config"])
                if fmt is not None:
                    ea.name = "%s:%s" % (fmt.system, fmt.name)
                    ea.named_by = "tracing_data"

    _tracing = None

    def tracing(self):
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

    def tracepoint_formats(self):
        """{tracepoint id: EventFormat} from the tracing data ({} if none)."""
        tracing = self.tracing()
        return tracing.events if tracing is not None else {}

    # --------------------------------------------------------------- records
    _pipe_setup_done = False

    def _pipe_setup(self):
        """Pipe mode: attrs and features arrive as records.  Read records until
        the first SAMPLE, so that `attrs` and `feature()` are usable before
        iteration; the records read are kept and replayed by `records()`."""
        self._pipe_setup_done = True
        self._pending = []
        it = self._walk_source(self._main_source(), 0)
        self._pipe_iter = it
        try:
            for rec in it:
                self._pending.append(rec)
                if rec.type < USER_TYPE_START or rec.type == RT.FINISHED_INIT:
                    break
        except PerfDataError as exc:
            self._pending_error = exc

    _pending = ()
    _pipe_iter = None
    _pending_error = None

    def _main_source(self):
        if self.is_pipe:
            return ByteSource(self._f, PIPE_HEADER_SIZE, None, self._seekable,
                              consumed=b"" if self._seekable else self._consumed[PIPE_HEADER_SIZE:])
        return ByteSource(self._f, self._data_start, self._data_end, True)

    def _file_order(self):
        if self.is_pipe:
            if not self._pipe_setup_done:
                self._pipe_setup()
            yield from self._pending
            self._pending = []
            if self._pending_error:
                raise self._pending_error
            yield from self._pipe_iter
            return
        yield from self._walk_source(self._main_source(), 0)
        for index, path in enumerate(self.data_files, 1):
            try:
                f = open(path, "rb")
            except OSError as exc:
                raise PerfDataError("cannot open: %s" % exc.strerror, path=path)
            with f:
                end = file_size(f)
                yield from self._walk_source(ByteSource(f, 0, end, True), index, path)

    def records(self, order="time", include_compressed=False):
        """Iterate over the records.

        order='file': as stored; 'time': as perf delivers them (default).
        COMPRESSED records are replaced by what they hold unless
        include_compressed is set, in which case they are yielded too, before
        their content.
        """
        source = self._file_order()
        if order == "file":
            for rec in source:
                if rec.type in (RT.COMPRESSED, RT.COMPRESSED2) and not include_compressed:
                    continue
                yield rec
            return
        queue = ordering.OrderedQueue()
        push = queue.push
        no_time = ordering.NO_TIME
        for rec in source:
            rtype = rec.type
            if rtype >= USER_TYPE_START:
                if rtype in (RT.COMPRESSED, RT.COMPRESSED2) and not include_compressed:
                    continue
                yield rec
                if rtype == RT.FINISHED_ROUND:
                    yield from queue.flush_round()
                continue
            time = rec.time
            if time in no_time:
                yield rec
            else:
                push(time, rec)
        yield from queue.flush_all()

    def __iter__(self):
        return self.records()

    def samples(self, order="time"):
        for rec in self.records(order):
            if rec.type == RT.SAMPLE:
                yield rec

    def _attr_for(self, rtype, body):
        attrs = self.attrs
        if not attrs:
            return None
        if len(attrs) == 1 or not self.id_to_attr:
            return attrs[0]
        first = attrs[0]
        u64 = first.u64
        if rtype == RT.SAMPLE:
            pos = self._sample_id_pos
            if pos is None or 8 * pos + 8 > len(body):
                return first
            ident = u64.unpack_from(body, 8 * pos)[0]
        else:
            pos = self._trailer_id_pos
            if pos is None or not first.sample_id_all or 8 * pos > len(body):
                return first
            ident = u64.unpack_from(body, len(body) - 8 * pos)[0]
        return self.id_to_attr.get(ident, first)

    def _refresh_id_positions(self):
        from .sample import id_position_in_sample, id_position_in_trailer
        st = self.attrs[0].sample_type if self.attrs else 0
        self._sample_id_pos = id_position_in_sample(st)
        self._trailer_id_pos = id_position_in_trailer(st)

    def _walk_source(self, src, file_index, path=None):
        """Records of one byte source in file order, COMPRESSED ones expanded."""
        path = path or self.path
        self._refresh_id_positions()
        little = self.little
        hdr = event_header_struct(little)
        decompressor = None
        next_record = src.next_record
        # Recovery: file mode and --threads data files (seekable, bounded) and
        # pipe mode (a stream: resync scans a bounded look-ahead window held
        # in the source's buffer, going forward only).
        stream = src.end is None
        recover = not self.strict and (stream or src.seekable)
        data_end = _NO_END if stream else src.end
        if recover and stream and not src.seekable:
            # The look-back into the record just read (its size may be what
            # is wrong) stays in the buffer.
            src.keep = _LOOKAHEAD
        prev = None         # offset of the last good record (recovery)
        nsamples = max_sample = 0
        min_size = self._min_sizes() if recover else {}
        scanned = 0         # resync scans never read a byte twice: time stays linear
        # Records are 8-byte multiples in perf's files, except COMPRESSED ones
        # (and some other writers'): then resync tries every byte.
        self._step = 1 if Feature.COMPRESSED in self.features or src.pos % 8 else 8
        align_mask = 7 if self._step == 8 else 0
        unpack_header = hdr.unpack_from
        sample_min = min_size.get(RT.SAMPLE, 8)
        SAMPLE, FINISHED_ROUND, FINISHED_INIT = (int(RT.SAMPLE), int(RT.FINISHED_ROUND),
                                                 int(RT.FINISHED_INIT))
        while True:
            # The fast lane: SAMPLE records wholly in the buffer, followed by
            # a plausible header (the same checks as the careful path below,
            # which takes every other record and every anomaly).
            buf, head, view, base = src.buf, src.head, src.view, src.pos
            stop = len(buf) - 8
            attrs = self.attrs
            single = attrs[0] if attrs and (len(attrs) == 1 or not self.id_to_attr) else None
            src_end = data_end if recover else None
            while head < stop:
                rtype, misc, size = unpack_header(buf, head)
                if rtype != SAMPLE or size < sample_min or size & align_mask or \
                        head + size > stop:
                    break
                if recover:
                    if nsamples >= 16 and size > 2 * max_sample + 64:
                        break
                    t2, _, s2 = unpack_header(buf, head + size)
                    least = min_size.get(t2)
                    offset = base + head
                    if least is None or least > s2 or s2 & align_mask or \
                            offset + size + s2 > src_end or \
                            (s2 != 8 and (t2 == FINISHED_ROUND or t2 == FINISHED_INIT)):
                        break
                    nsamples += 1
                    if size > max_sample:
                        max_sample = size
                    prev = offset
                else:
                    offset = base + head
                body = view[head + 8:head + size]
                attr = single or self._attr_for(SAMPLE, body)
                time = None
                if attr is not None:
                    toff = attr.sample_time_offset
                    if toff is not None and toff + 8 <= size - 8:
                        time = attr.u64.unpack_from(body, toff)[0]
                head += size
                src.head = head
                yield Record(self, rtype, misc, size, offset, body, attr, time,
                             file=file_index)
            got = next_record(hdr)
            if got is None:
                return
            offset, rtype, misc, size, raw = got
            if rtype is None:
                self.warnings.append("%s: offset %#x: file ends inside a record header"
                                     % (path, offset))
                self.truncated_at = offset
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
                resume = None
                back = max(prev + 8, scanned) if prev is not None else offset
                back += (prev - back) % self._step if prev is not None else 0
                if recover and back < offset and (src.seekable or back >= src.pos):
                    # The previous record's size may be what is wrong (too large,
                    # swallowing the records after it): look inside it first.
                    resume = self._resync(src, back, offset)
                    scanned = max(scanned, resume or offset)
                    if resume is not None:
                        self.warnings.append("%s: offset %#x: record size overlaps the next "
                                             "records (resumed at %#x)" % (path, prev, resume))
                        prev = None
                        src.goto(resume)
                        next_record = src.next_record
                        continue
                if recover:
                    start = max(offset + 8, scanned)
                    start += (offset - start) % self._step
                    resume = self._resync(src, start, data_end)
                    if resume is None:
                        data_end = src.known_end or src.offset
                    scanned = max(scanned, resume if resume is not None else data_end)
                if resume is None and size >= 8 and len(raw) < size:
                    # Nothing plausible follows: the tail was cut (a killed perf record).
                    self.warnings.append("%s: offset %#x: file ends inside a %s record "
                                         "(%d of %d bytes)" % (path, offset,
                                                               record_type_name(rtype),
                                                               len(raw), size))
                    self.truncated_at = offset
                    return
                stop = data_end if resume is None else resume
                self._note_skipped(path, offset, stop - offset, why)
                if resume is None:
                    return
                prev = None
                src.goto(resume)
                next_record = src.next_record
                continue
            if recover and rtype != RT.AUXTRACE and rtype != RT.HEADER_TRACING_DATA \
                    and offset + size < data_end:
                # fast path: the next header is one we know, of a sane size
                buf2, head2 = src.buf, src.head
                big = False
                if rtype == RT.SAMPLE:
                    # A SAMPLE far larger than every one before it may hide
                    # the next records (its size field damaged).
                    big = nsamples >= 16 and size > 2 * max_sample + 64
                    if not big:
                        nsamples += 1
                        if size > max_sample:
                            max_sample = size
                if not big and rtype not in _STRING_AT and rtype != RT.COMPRESSED and \
                        rtype != RT.COMPRESSED2 and len(buf2) - head2 >= 8:
                    t2, _, s2 = hdr.unpack_from(buf2, head2)
                    least = min_size.get(t2)
                    if least is not None and least <= s2 and not s2 & align_mask and \
                            offset + size + s2 <= data_end and \
                            (s2 == 8 or (t2 != RT.FINISHED_ROUND and t2 != RT.FINISHED_INIT)):
                        prev = offset
                        rec = self._make_record(rtype, misc, size, offset, raw[8:], path)
                        rec.file = file_index
                        if rtype < USER_TYPE_START:
                            yield rec
                            continue
                        self._user_record_side_effects(rec, path)
                        if rtype == RT.HEADER_ATTR:
                            min_size = self._min_sizes()
                            sample_min = min_size.get(RT.SAMPLE, 8)
                        yield rec
                        continue
                resume = None
                if rtype in _STRING_AT:
                    resume = self._check_string_record(src, rtype, raw, offset, size, scanned)
                elif big:
                    start = max(offset + 8, scanned)
                    start += (offset - start) % self._step
                    resume = self._resync(src, start, offset + size)
                    src.goto(offset + size)
                    scanned = max(scanned, resume or offset + size)
                    if resume is None:
                        nsamples += 1
                        max_sample = size
                if resume is None:
                    resume = self._check_next(src, hdr, offset, size, scanned, data_end)
                if resume is not None:
                    scanned = max(scanned, resume or offset + size)
                    if resume > 0:
                        # This record's size is too large: the records after it
                        # start inside it.
                        self._note_skipped(path, offset, resume - offset,
                                           "record size %d overlaps the next records" % size)
                        prev = None
                        src.goto(resume)
                        next_record = src.next_record
                        continue
            prev = offset
            if size & 7:
                self._step = 1
            rec = self._make_record(rtype, misc, size, offset, raw[8:], path)
            rec.file = file_index
            if rtype < USER_TYPE_START:
                yield rec
                continue
            if rtype == RT.AUXTRACE or rtype == RT.HEADER_TRACING_DATA:
                try:
                    self._read_payload(src, rec, path)
                except PerfDataError as exc:
                    # A stream cannot come back from a payload read on a
                    # wrong size: stop with the error.
                    if not recover or (stream and rtype == RT.HEADER_TRACING_DATA):
                        raise
                    self._note_skipped(path, offset, size, exc.message)
                    src.goto(offset + size)
                    continue
                if recover and stream and rtype == RT.HEADER_TRACING_DATA:
                    # Its payload was skipped by the size in its body: when
                    # no sane record follows, that size was wrong and where
                    # the records go on is unknown (resync could land inside
                    # the tracing data): stop, as strict mode does.
                    look = src.peek(8)
                    if len(look) == 8:
                        t2, _, s2 = hdr.unpack_from(look)
                        if not self._header_ok(t2, s2, src.offset, data_end):
                            yield rec
                            raise CorruptError(
                                "no sane record after the tracing data (%d bytes): its "
                                "size may be damaged" % rec.payload_size,
                                path=path, offset=src.offset)
            elif rtype == RT.COMPRESSED or rtype == RT.COMPRESSED2:
                yield rec
                if decompressor is None:
                    decompressor = Decompressor(self._decompress_limit())
                try:
                    yield from self._expand(decompressor, rec, path)
                except CorruptError as exc:
                    if not recover:
                        raise
                    # perf ends a zstd frame with every record: start afresh.
                    self._note_skipped(path, rec.offset, rec.size, exc.message)
                    decompressor = None
                continue
            else:
                self._user_record_side_effects(rec, path)
                if recover and rtype == RT.HEADER_ATTR:
                    min_size = self._min_sizes()
                    sample_min = min_size.get(RT.SAMPLE, 8)
            yield rec

    def _check_string_record(self, src, rtype, raw, offset, size, scanned):
        """MMAP, MMAP2 and COMM end with their name, padded to 8 bytes, and the
        sample_id trailer: a size well past that may hide the next records."""
        at = 8 + _STRING_AT[rtype]
        nul = bytes(raw[at:at + 4104]).find(b"\0")
        if nul < 0:
            return None
        ea = self.attrs[0] if self.attrs else None
        trailer = ea.trailer_size if ea is not None and ea.sample_id_all else 0
        expected = at + (nul + 8) // 8 * 8 + trailer
        if size <= expected + 8:
            return None
        start = max(offset + expected, scanned)
        start += (offset - start) % self._step
        found = self._resync(src, start, offset + size) if start < offset + size else None
        src.goto(offset + size)
        return found

    def _check_next(self, src, hdr, offset, size, scanned, end):
        """Recovery look-ahead: None when the header after this record looks
        sane; else where a plausible record starts inside this one (its size
        was too large), or 0 when none does (the next record is the bad one)."""
        buf, head = src.buf, src.head
        if len(buf) - head < 8:
            look = src.peek(8)
            if len(look) < 8:
                return None
            buf, head = look, 0
        rtype, _, nsize = hdr.unpack_from(buf, head)
        if self._header_ok(rtype, nsize, offset + size, end):
            return None
        # Not a header we know (maybe just a type newer than us): look for a
        # chain of sane headers inside this record before trusting its size.
        start = max(offset + 8, scanned)
        start += (offset - start) % self._step
        if start >= offset + size:
            return 0
        found = self._resync(src, start, offset + size)
        src.goto(offset + size)
        return found or 0

    def _note_skipped(self, path, offset, count, why):
        self.skipped.append((path, offset, count, why))
        self.warnings.append("%s: offset %#x: skipped %d bytes (corrupt record)"
                             % (path, offset, count))

    def _resync(self, src, start, stop):
        """File offset of the first plausible record header in [start, stop)
        (stepping by 8 from start, or by 1 in files with unaligned records),
        or None.  Scans through the source's own buffer, so that no byte is
        read from the file twice; the source is left somewhere in the range
        (the caller moves it with goto()).  Time linear in the bytes scanned."""
        hdr = event_header_struct(self.little)
        step = self._step
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
                if not j % step and self._plausible_at(hdr, buf, j, at + j, end):
                    return at + j
                i = j + 1
                i += -i % step
            src.goto(at + (limit + step - 1) // step * step)
        return None

    def _min_sizes(self):
        """{known type: least record size} as _header_ok() judges it, without
        the alignment of COMPRESSED records (the fast path leaves those to it)."""
        out = {}
        ea = self.attrs[0] if self.attrs else None
        trailer = ea.trailer_size if ea is not None and ea.sample_id_all else 0
        for rtype in KNOWN_TYPES:
            if rtype in (RT.COMPRESSED, RT.COMPRESSED2, RT.AUXTRACE, RT.HEADER_TRACING_DATA):
                continue
            least = 8
            if rtype < USER_TYPE_START:
                least += MIN_BODY.get(rtype, 0) + (trailer if rtype != RT.SAMPLE else 0)
            out[rtype] = least
        return out

    def _header_ok(self, rtype, size, at, end):
        if rtype not in KNOWN_TYPES or size < 8 or at + size > end:
            return False
        if size % self._step and rtype != RT.COMPRESSED and rtype != RT.COMPRESSED2:
            return False
        if rtype < USER_TYPE_START:
            need = MIN_BODY.get(rtype, 0)
            ea = self.attrs[0] if self.attrs else None
            if ea is not None and ea.sample_id_all and rtype != RT.SAMPLE:
                need += ea.trailer_size
            return size - 8 >= need
        if rtype == RT.FINISHED_ROUND or rtype == RT.FINISHED_INIT:
            return size == 8
        return True

    def _plausible_at(self, hdr, buf, i, at, end):
        """Whether a record starts at buf[i] (file offset `at`): a known type
        and a sane size, then the next header just as sane (or the end of the
        data); when the record carries no event id the attrs know, the one
        after that too."""
        rtype, _, size = hdr.unpack_from(buf, i)
        if not self._header_ok(rtype, size, at, end):
            return False
        if i + size > len(buf):
            return False
        depth = 2 if self._id_known(rtype, buf[i + 8:i + size]) else 3
        for _ in range(depth - 1):
            at += size
            i += size
            if at == end:
                return True
            if i + 8 > len(buf):
                return False
            rtype, _, size = hdr.unpack_from(buf, i)
            if not self._header_ok(rtype, size, at, end):
                return False
        return True

    def _id_known(self, rtype, body):
        """A kernel record whose event id (sample or trailer) the attrs know."""
        if rtype >= USER_TYPE_START or not self.id_to_attr:
            return False
        first = self.attrs[0]
        if rtype == RT.SAMPLE:
            pos = self._sample_id_pos
            if pos is None or 8 * pos + 8 > len(body):
                return False
            return first.u64.unpack_from(body, 8 * pos)[0] in self.id_to_attr
        pos = self._trailer_id_pos
        if pos is None or not first.sample_id_all or 8 * pos > len(body):
            return False
        return first.u64.unpack_from(body, len(body) - 8 * pos)[0] in self.id_to_attr

    def _decompress_limit(self):
        if self.max_decompressed:
            return self.max_decompressed
        limit = 64 << 20
        try:
            comp = self.feature(Feature.COMPRESSED)
            mmap_len = comp and comp.get("mmap_len")
            if mmap_len:
                limit = max(limit, 4 * mmap_len)
        except Exception:       # a broken feature section must not stop the data
            pass
        return limit

    def _make_record(self, rtype, misc, size, offset, body, path):
        attr = None
        time = None
        if rtype < USER_TYPE_START:
            attr = self._attr_for(rtype, body)
            if attr is not None:
                if rtype == RT.SAMPLE:
                    time = attr.sample_time(body)
                else:
                    time = attr.trailer_time(body)
        return Record(self, rtype, misc, size, offset, body, attr, time)

    def _read_payload(self, src, rec, path):
        """AUXTRACE data and pipe-mode tracing data follow their record."""
        u = "<" if self.little else ">"
        if rec.type == RT.AUXTRACE:
            if len(rec.body) < 8:
                raise CorruptError("AUXTRACE record too short", path=path, offset=rec.offset)
            size = struct.unpack_from(u + "Q", rec.body)[0]
            rec.payload_offset = src.offset
            rec.payload_size = size
            if src.skip(size) < size:
                self.warnings.append("%s: offset %#x: AUXTRACE payload cut short"
                                     % (path, rec.offset))
            return
        if len(rec.body) < 4:
            raise CorruptError("TRACING_DATA record too short", path=path, offset=rec.offset)
        size = struct.unpack_from(u + "I", rec.body)[0]
        rec.payload_size = size
        if len(rec.body) >= 4 + size:
            # simpleperf puts the data inside the record; perf after it.
            rec.payload_offset = rec.offset + 12
            data = rec.body[4:4 + size]
            self.tracing_data = bytes(data)
            self._feature_data.setdefault(Feature.TRACING_DATA, self.tracing_data)
            return
        rec.payload_offset = src.offset
        if size > MAX_TRACING_DATA:
            raise CorruptError("tracing data of %d bytes" % size, path=path, offset=rec.offset)
        data = src.take(size)
        if len(data) < size:
            raise TruncatedError("file ends inside the tracing data", path=path,
                                 offset=rec.payload_offset)
        self.tracing_data = bytes(data)
        self._feature_data[Feature.TRACING_DATA] = self.tracing_data

    def _user_record_side_effects(self, rec, path):
        """perf's own records that define the file's events and features."""
        rtype = rec.type
        try:
            if rtype == RT.HEADER_ATTR:
                attr_size = min(attr_size_at(rec.body, 0, self.little), len(rec.body))
                parsed = header_attr_schema(attr_size, self.little).parse(rec.body)
                self._add_attr(parsed.attr, list(parsed.ids))
                self._refresh_id_positions()
            elif rtype == RT.HEADER_FEATURE:
                parsed = body_schemas(self.little)[rtype].parse(rec.body)
                self._feature_data[parsed.feat_id] = bytes(parsed.data)
                self._feature_cache.pop(parsed.feat_id, None)
            elif rtype == RT.HEADER_BUILD_ID:
                self._build_id_records.append(
                    event_header_struct(self.little).pack(rec.type, rec.misc, rec.size)
                    + bytes(rec.body))
            elif rtype == RT.HEADER_EVENT_TYPE:
                self.event_types.append(body_schemas(self.little)[rtype].parse(rec.body))
            # EVENT_UPDATE names are not applied: perf 6.1 keeps the name it
            # computed from the attr (checked on the quipper pipe files).
            elif rtype == RT.ID_INDEX:
                parsed = body_schemas(self.little)[rtype].parse(rec.body)
                for entry in parsed.entries:
                    if entry.idx < len(self.attrs):
                        self.id_to_attr.setdefault(entry.id, self.attrs[entry.idx])
        except (cs.ConstructError, struct.error, UnicodeDecodeError) as exc:
            # perf counts the record and goes on; so do we, with a warning.
            self.warnings.append("%s: offset %#x: %s record: %s"
                                 % (path, rec.offset, rec.name, _short(exc)))

    def _expand(self, decompressor, rec, path):
        """The records inside a COMPRESSED/COMPRESSED2 record.  perf keeps one zstd
        stream for the whole file and lets a record straddle two chunks."""
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
        hdr = event_header_struct(self.little)
        pos = 0
        end = len(data)
        view = memoryview(data)
        while end - pos >= 8:
            rtype, misc, size = hdr.unpack_from(data, pos)
            if size < 8:
                raise CorruptError("record size %d inside compressed data (at %d of the "
                                   "decompressed stream)" % (size, decompressor.total_out - end + pos),
                                   path=path, offset=rec.offset)
            if end - pos < size:
                break
            inner = self._make_record(rtype, misc, size, rec.offset,
                                      view[pos + 8:pos + size], path)
            inner.compressed = True
            inner.file = rec.file
            if rtype >= USER_TYPE_START:
                self._user_record_side_effects(inner, path)
            yield inner
            pos += size
        decompressor.keep(data[pos:])

    # ---------------------------------------------------------------- parsing
    def parse_record(self, rec):
        rtype = rec.type
        body = rec.body
        try:
            if rtype == RT.SAMPLE:
                if rec.attr is None:
                    raise CorruptError("SAMPLE with no event attr", path=self.path,
                                       offset=rec.offset)
                return rec.attr.decode_sample(body)
            if rtype == RT.HEADER_ATTR:
                parsed = header_attr_schema(min(attr_size_at(body, 0, self.little), len(body)),
                                            self.little).parse(body)
                return plain(parsed)
            trailer = None
            if rtype < USER_TYPE_START and rec.attr is not None and rec.attr.sample_id_all:
                trailer = rec.attr.decode_trailer(body)
                body = body[:len(body) - rec.attr.trailer_size]
            if rtype == RT.READ:
                schema = cs.Struct("pid" / (cs.Int32ul if self.little else cs.Int32ub),
                                   "tid" / (cs.Int32ul if self.little else cs.Int32ub),
                                   "values" / read_format_schema(
                                       rec.attr.read_format if rec.attr else 0, self.little))
                out = plain(schema.parse(body))
            else:
                schemas = body_schemas(self.little)
                schema = schemas.get(rtype)
                if schema is None:
                    return {"raw": bytes(body)}
                if rtype == RT.MMAP2 and _mmap2_lacks_prot_flags(body):
                    schema = schemas["MMAP2_pre316"]
                out = plain(schema.parse(body))
            if rtype == RT.MMAP2:
                _split_mmap2(out, rec.misc)
            if trailer is not None:
                out["sample_id"] = trailer
            return out
        except DecodeError as exc:
            raise CorruptError("%s record: field %s: %s" % (rec.name, exc.field, exc),
                               path=self.path, offset=rec.offset)
        except (cs.ConstructError, struct.error, UnicodeDecodeError) as exc:
            raise CorruptError("%s record: %s" % (rec.name, _short(exc)),
                               path=self.path, offset=rec.offset)

    def close(self):
        try:
            self._f.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _mmap2_lacks_prot_flags(body):
    """Linux 3.12-3.15 wrote MMAP2 records without prot/flags: the file name
    starts where prot would be.  prot and flags are small numbers; a path's
    first characters are not."""
    head = bytes(body[56:64])
    return len(head) == 8 and head[:1] in (b"/", b"[") and \
        all(32 <= c < 127 for c in head[:4])


def _split_mmap2(out, misc):
    from .constants import MISC_MMAP_BUILD_ID
    raw = out.pop("id_union")
    inode = out.pop("inode")
    bid = out.pop("buildid")
    if misc & MISC_MMAP_BUILD_ID:
        size = min(bid["build_id_size"], 20)
        out["build_id"] = bytes(bid["build_id"][:size]).hex()
    else:
        out.update(inode)
    del raw


def _read_upto(f, n):
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




def _short(exc):
    text = str(exc).strip().splitlines()
    return text[-1] if text else type(exc).__name__


def _fname(fid):
    from .constants import feature_name
    return feature_name(fid)
