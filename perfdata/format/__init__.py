"""perf.data's bytes -> records: the construct schemas and the readers.

The names the layers above use, importable from here (each module is
imported at the first use of one of its names: the command line puts its
stand-ins for the standard modules construct imports in place first, and
`perfdata stats` must not pay for the schemas it never reads):

    PerfFile                 a file, directory or pipe, and its records
    Record                   one record, decoded on demand
    EventAttr                an event's attributes and its name
    the constants            RecordType, SampleType, Feature, ReadFormat, ...
    the errors               PerfDataError and its kinds, InputName
    the tracing data         TracingData, EventFormat, FieldFormat
    the header's features    parse_feature, feature_bits, ...
    the walk's facts         KNOWN_TYPES, least_sizes, WalkState (dump -D)

The modules (records, features, attr, ...) hold the schemas, one per
layout.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..faces import import_at_first_use

if TYPE_CHECKING:
    from .attr import attr_schema
    from .constants import (MISC_COMM_EXEC, MISC_CPUMODE_MASK, MISC_GUEST_KERNEL,
                            MISC_GUEST_USER, MISC_HYPERVISOR, MISC_KERNEL, MISC_MMAP_BUILD_ID,
                            MISC_MMAP_DATA, MISC_SWITCH_OUT, MISC_SWITCH_OUT_PREEMPT, MISC_USER, STATS_NAMES,
                            USER_TYPE_START, AttrType, CallchainContext, Feature, ReadFormat,
                            RecordType, SampleType, feature_name, record_type_name)
    from .container import PerfFile
    from .decoder import Record
    from .errors import (CorruptError, InputName, NotPerfDataError, PerfDataError,
                         TruncatedError)
    from .eventattr import HARDWARE_NAMES, SOFTWARE_NAMES, EventAttr
    from .features import COMP_ZSTD, NAME_ALIGN, parse_bpf_prog_info, parse_feature
    from .header import feature_bits
    from .layout import Field, LayoutError, field
    from .records import body_schemas, event_header_schema, event_header_struct
    from .sample import read_offcpu_raw, sample_schema, weight_and_ins_lat
    from .samplescan import id_offset, sample_offsets, scan_samples, why_not_scanned
    from .tracing import (EventFormat, FieldFormat, TracingData, parse_tracing_data,
                          tracing_data_schema)
    from .plausibility import KNOWN_TYPES, least_sizes
    from .walker import WalkState

_MODULE_OF = {
    "attr_schema": "attr",
    **dict.fromkeys(("AttrType", "CallchainContext", "Feature", "MISC_COMM_EXEC",
                     "MISC_CPUMODE_MASK", "MISC_GUEST_KERNEL", "MISC_GUEST_USER",
                     "MISC_HYPERVISOR", "MISC_KERNEL", "MISC_MMAP_BUILD_ID", "MISC_MMAP_DATA",
                     "MISC_SWITCH_OUT",
                     "MISC_SWITCH_OUT_PREEMPT", "MISC_USER", "ReadFormat", "RecordType",
                     "STATS_NAMES", "SampleType", "USER_TYPE_START", "feature_name",
                     "record_type_name"), "constants"),
    "PerfFile": "container",
    "Record": "decoder",
    # (InputName, the type of a file's name in messages, is for annotations:
    # import it under TYPE_CHECKING)
    **dict.fromkeys(("CorruptError", "NotPerfDataError", "PerfDataError", "TruncatedError"),
                    "errors"),
    **dict.fromkeys(("EventAttr", "HARDWARE_NAMES", "SOFTWARE_NAMES"), "eventattr"),
    **dict.fromkeys(("COMP_ZSTD", "NAME_ALIGN", "parse_bpf_prog_info", "parse_feature"),
                    "features"),
    "feature_bits": "header",
    **dict.fromkeys(("Field", "LayoutError", "field"), "layout"),
    **dict.fromkeys(("body_schemas", "event_header_schema", "event_header_struct"), "records"),
    **dict.fromkeys(("read_offcpu_raw", "sample_schema", "weight_and_ins_lat"), "sample"),
    **dict.fromkeys(("id_offset", "sample_offsets", "scan_samples", "why_not_scanned"),
                    "samplescan"),
    **dict.fromkeys(("EventFormat", "FieldFormat", "TracingData", "parse_tracing_data",
                     "tracing_data_schema"), "tracing"),
    **dict.fromkeys(("KNOWN_TYPES", "least_sizes"), "plausibility"),
    "WalkState": "walker",
}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    return import_at_first_use(__name__, _MODULE_OF, name)
