"""Synthetic perf.data files, built FROM the reader's own construct schemas.

The schemas are the spec (perfdata/format/{header,attr,records,sample}.py);
building with them and reading back checks the reader's walk, ordering, byte
order and decoders against files whose every field we chose.
"""
import struct


from perfdata.format.attr import attr_schema, ATTR_FLAG_BITS
from perfdata.format.constants import MAGIC_V1, MAGIC_V2, RecordType as RT
from perfdata.format.header import file_header_schema, pipe_header_schema
from perfdata.format.records import body_schemas, event_header_schema, header_attr_schema
from perfdata.format.sample import sample_id_schema, sample_schema


def plain(obj):
    """construct Containers / ListContainers, memoryviews and bytes to plain
    dicts, lists and bytes ('_io' and other private keys dropped)."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items() if not str(k).startswith("_")}
    if isinstance(obj, (list, tuple)):
        return [plain(v) for v in obj]
    if isinstance(obj, (memoryview, bytearray)):
        return bytes(obj)
    return obj


ALL_FLAGS = tuple(name for name, _ in ATTR_FLAG_BITS)


def attr_value(size=128, **fields):
    """A perf_event_attr dict for attr_schema(size): every field that fits
    `size`, zero unless given; flags by name (flags={'sample_id_all': 1})."""
    schema = attr_schema(size)
    flags = {name: 0 for name in ALL_FLAGS}
    flags.update(fields.pop("flags", {}))
    value = {}
    for sub in schema.subcons:
        if sub.name == "flags":
            value["flags"] = flags
        elif sub.name == "unknown_tail":
            value["unknown_tail"] = fields.pop("unknown_tail", bytes(sub.subcon.length))
        else:
            value[sub.name] = fields.pop(sub.name, 0)
    value["size"] = size
    if fields:
        raise TypeError("fields that do not fit a %d-byte attr: %s" % (size, sorted(fields)))
    return value


class Attr:
    """An event of a synthetic file: its attr dict, ids and sample schema."""

    def __init__(self, value, ids=()):
        self.value = value
        self.ids = list(ids)

    @property
    def size(self):
        """Bytes of the attr: its size field, 0 meaning 64 (PERF_ATTR_SIZE_VER0)."""
        return self.value["size"] or 64

    def get(self, name):
        return self.value.get(name, 0)

    @property
    def sample_id_all(self):
        return bool(self.value["flags"]["sample_id_all"])

    def sample_schema(self, little):
        v = self.get
        return sample_schema(v("sample_type"), v("read_format"), v("branch_sample_type"),
                             v("sample_regs_user"), v("sample_regs_intr"), little)


class Builder:
    """Records and whole files in one byte order, from the reader's schemas."""

    def __init__(self, little=True):
        self.little = little
        self.u = "<" if little else ">"

    # -------------------------------------------------------------- records
    def record(self, rtype, body, misc=0):
        size = 8 + len(body)
        assert size < 1 << 16, size
        return event_header_schema(self.little).build(
            {"type": rtype, "misc": misc, "size": size}) + bytes(body)

    @staticmethod
    def pad8(body):
        return body + bytes(-len(body) % 8)

    def body(self, rtype, value):
        return body_schemas(self.little)[rtype].build(value)

    def trailer(self, attr, **values):
        schema = sample_id_schema(attr.get("sample_type"), self.little)
        if not attr.sample_id_all:
            return b""
        full = {sub.name: values.get(sub.name, 0) for sub in schema.subcons}
        return schema.build(full)

    def kernel_record(self, rtype, value, attr=None, misc=0, **trailer):
        """A kernel record (1..63) with its sample_id trailer when attr asks.
        The body is padded to 8 bytes, as the kernel pads it: perf finds the
        trailer by counting u64 words from the end."""
        body = self.pad8(self.body(rtype, value))
        if attr is not None:
            body += self.trailer(attr, **trailer)
        return self.record(rtype, body, misc)

    def sample(self, attr, value, misc=0):
        return self.record(RT.SAMPLE, attr.sample_schema(self.little).build(value), misc)

    def header_attr(self, attr):
        size = attr.size
        return self.record(RT.HEADER_ATTR, header_attr_schema(size, self.little).build(
            {"attr": attr.value, "ids": attr.ids}))

    def u64s(self, *values):
        return struct.pack(self.u + "%dQ" % len(values), *values)

    # ---------------------------------------------------------------- files
    def file(self, attrs, records, features=None, magic=MAGIC_V2, attr_size=None,
             data_size=None):
        """A file-mode perf.data: header, ids, attrs, data, feature table and
        sections.  features: {feature id: bytes}."""
        features = dict(features or {})
        stride = attr_size or (max(a.size for a in attrs) + 16 if attrs else 144)
        data = b"".join(records)
        header_size = 104
        out = bytearray(header_size)
        # ids arrays first, as perf writes them
        id_sections = []
        for a in attrs:
            id_sections.append((len(out), 8 * len(a.ids)))
            out += self.u64s(*a.ids)
        attrs_offset = len(out)
        for a, (ids_off, ids_size) in zip(attrs, id_sections):
            raw = attr_schema(a.size, self.little).build(a.value)
            raw += bytes(stride - 16 - len(raw))
            out += raw + self.u64s(ids_off if ids_size else 0, ids_size)
        data_offset = len(out)
        out += data
        fids = sorted(features)
        table_at = len(out)
        out += bytes(16 * len(fids))
        table = []
        for fid in fids:
            table.append((len(out), len(features[fid])))
            out += features[fid]
        for i, (off, size) in enumerate(table):
            out[table_at + 16 * i:table_at + 16 * i + 16] = self.u64s(off, size)
        bitmap = [0, 0, 0, 0]
        for fid in fids:
            bitmap[fid // 64] |= 1 << (fid % 64)
        header = file_header_schema(self.little).build({
            "magic": magic if self.little or magic == MAGIC_V1 else magic[::-1],
            "size": header_size,
            "attr_size": stride,
            "attrs": {"offset": attrs_offset, "size": stride * len(attrs)},
            "data": {"offset": data_offset,
                     "size": len(data) if data_size is None else data_size},
            "event_types": {"offset": 0, "size": 0},
            "adds_features": self.u64s(*bitmap),
        })
        out[:header_size] = header
        return bytes(out)

    def pipe(self, attrs, records, magic=MAGIC_V2):
        """A pipe-mode perf.data: 16-byte header, HEADER_ATTR records, records."""
        head = pipe_header_schema(self.little).build({
            "magic": magic if self.little or magic == MAGIC_V1 else magic[::-1], "size": 16})
        return head + b"".join(self.header_attr(a) for a in attrs) + b"".join(records)


def split_records(data, little=True):
    """(type, bytes) of the records of a flat record stream."""
    out = []
    pos = 0
    fmt = "<IHH" if little else ">IHH"
    while pos + 8 <= len(data):
        rtype, misc, size = struct.unpack_from(fmt, data, pos)
        out.append((rtype, data[pos:pos + size]))
        pos += size
    return out
