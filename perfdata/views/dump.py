"""`perfdata dump`: every record with its offset, type, size and decoded fields."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable

from ..format import RecordType as RT, feature_name, PerfDataError

if TYPE_CHECKING:
    from ..format import PerfFile


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        return raw[:32].hex() + ("...(%d bytes)" % len(raw) if len(raw) > 32 else "")
    if isinstance(value, dict):
        return "{" + ", ".join("%s: %s" % (k, _text(v)) for k, v in value.items()) + "}"
    if isinstance(value, list):
        if len(value) > 64:
            return "[" + ", ".join(_text(v) for v in value[:64]) + ", ...(%d)]" % len(value)
        return "[" + ", ".join(_text(v) for v in value) + "]"
    if isinstance(value, int) and value > 0xffff:
        return "%#x" % value
    return str(value)


def describe_header(pf: PerfFile) -> list[str]:
    out = []
    mode = "pipe" if pf.is_pipe else ("directory" if pf.is_directory else "file")
    out.append("# %s (%s mode, %s-endian)" % (pf.path, mode, "little" if pf.little else "big"))
    if pf.header and not pf.is_pipe:
        h = pf.header
        out.append("# header: size %d attr_size %d attrs %#x+%d data %#x+%d"
                   % (h["size"], h["attr_size"], h["attrs"]["offset"], h["attrs"]["size"],
                      h["data"]["offset"], h["data"]["size"]))
    return out


def describe_attrs(pf: PerfFile) -> list[str]:
    out = []
    for ea in pf.attrs:
        out.append("# attr %d %s: %s ids=%s" % (ea.index, ea.name, _text(ea.attr), ea.ids[:16]))
        if ea.unknown_tail:
            out.append("#   unknown trailing attr bytes: %s" % bytes(ea.unknown_tail).hex())
    return out


def describe_features(pf: PerfFile) -> list[str]:
    out = []
    for fid in pf.feature_ids:
        offset = pf.feature_offset(fid)
        where = " at %#x" % offset if offset is not None else ""
        out.append("# feature %s%s" % (feature_name(fid), where))
    return out


def dump_records(pf: PerfFile, write: Callable[[str], object], as_json: bool = False,
                 order: str = "file", strict: bool = False) -> int:
    """Write every record; return how many."""
    count = 0
    for rec in pf.records(order=order, include_compressed=True):
        count += 1
        fields: dict[str, Any]
        if rec.type in (RT.COMPRESSED, RT.COMPRESSED2):
            fields = {"bytes": len(rec.body)}
        else:
            try:
                fields = rec.parse()
            except PerfDataError as exc:
                if strict:
                    raise
                # The record is shown undecoded, with why; the dump goes on.
                pf.warnings.append(str(exc))
                fields = {"error": exc.message, "raw": bytes(rec.body)}
        if as_json:
            obj = {"offset": rec.offset, "type": rec.name, "size": rec.size,
                   "misc": rec.misc}
            if rec.compressed:
                obj["in_compressed"] = True
            if rec.attr is not None and rec.type == RT.SAMPLE:
                obj["event"] = rec.attr.name
            obj["fields"] = _jsonable(fields)
            write(json.dumps(obj) + "\n")
        else:
            where = "%#x%s" % (rec.offset, "+z" if rec.compressed else "")
            event = " %s" % rec.attr.name if rec.type == RT.SAMPLE and rec.attr else ""
            write("%s [%#x]: PERF_RECORD_%s%s misc %#x: %s\n"
                  % (where, rec.size, rec.name, event, rec.misc, _text(fields)))
    return count
