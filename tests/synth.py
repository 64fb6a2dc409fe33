"""Synthetic perf.data files, built FROM the reader's own construct schemas.

The schemas are the spec (perfdata/format/{header,attr,records,sample}.py);
building with them and reading back checks the reader's walk, ordering, byte
order and decoders against files whose every field we chose.
"""
import struct

import construct as cs

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
