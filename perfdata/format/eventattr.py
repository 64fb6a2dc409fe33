"""One event of a recording: its perf_event_attr, ids, name and decoders."""
from __future__ import annotations

import struct
from typing import Any, Iterable, Mapping

from .attr import complete_attr
from .constants import (AttrType, BRANCH_SAMPLE_CALL_STACK, ReadFormat as RF,
                        SampleType as ST)
from .fastpath import derive_decoder
from .sample import (sample_id_schema, sample_schema, time_position_in_sample,
                     time_position_in_trailer)

# perf's names of the generic events (tools/perf/util/evsel.c).
HARDWARE_NAMES = ("cycles", "instructions", "cache-references", "cache-misses",
                  "branches", "branch-misses", "bus-cycles", "stalled-cycles-frontend",
                  "stalled-cycles-backend", "ref-cycles")
SOFTWARE_NAMES = ("cpu-clock", "task-clock", "page-faults", "context-switches",
                  "cpu-migrations", "minor-faults", "major-faults", "alignment-faults",
                  "emulation-faults", "dummy", "bpf-output", "cgroup-switches")


def default_event_name(attr: Mapping[str, Any]) -> str:
    """The name perf gives an event when the file does not say it."""
    etype, config = attr["type"], attr["config"]
    if etype == AttrType.HARDWARE and config < len(HARDWARE_NAMES):
        name = HARDWARE_NAMES[config]
    elif etype == AttrType.SOFTWARE and config < len(SOFTWARE_NAMES):
        name = SOFTWARE_NAMES[config]
    elif etype == AttrType.TRACEPOINT:
        name = "tracepoint %d" % config
    elif etype == AttrType.RAW:
        name = "raw %#x" % config          # evsel__raw_name (perf 6.1)
    else:
        return "unknown %d:%#x" % (etype, config)
    if etype in (AttrType.HARDWARE, AttrType.SOFTWARE, AttrType.HW_CACHE, AttrType.RAW):
        name += event_modifiers(attr)
    return name


def event_modifiers(attr: Mapping[str, Any]) -> str:
    """The ':ukppHG' suffix perf adds to generic event names (evsel__add_modifiers)."""
    flags = attr["flags"]
    mods = ""
    guest_default = False
    if flags["exclude_kernel"] or flags["exclude_user"] or flags["exclude_hv"]:
        mods += "".join(c for c, excl in (("k", "exclude_kernel"), ("u", "exclude_user"),
                                          ("h", "exclude_hv")) if not flags[excl])
        guest_default = True
    if flags["precise_ip"]:
        mods += "ppp"[:flags["precise_ip"]]
        guest_default = True
    if flags["exclude_host"] or bool(flags["exclude_guest"]) == guest_default:
        mods += "".join(c for c, excl in (("H", "exclude_host"), ("G", "exclude_guest"))
                        if not flags[excl])
    return ":" + mods if mods else ""


class EventAttr:
    """An event of the file, with the sample decoders derived once from its attr."""
    # what named it, where PerfFile.resolve_event_names did: "event_desc" or
    # "tracing_data" (unset otherwise)
    named_by: str

    def __init__(self, index: int, attr: Mapping[str, Any], ids: Iterable[int],
                 little: bool = True, name: str | None = None) -> None:
        self.index = index
        self.attr = complete_attr(attr)
        self.unknown_tail = attr.get("unknown_tail")
        self.ids = list(ids)
        self.little = little
        self.name = name or default_event_name(self.attr)
        a = self.attr
        self.sample_type = a["sample_type"]
        self.read_format = a["read_format"]
        self.sample_id_all = bool(a["flags"].get("sample_id_all"))
        # A sample that reads the whole group stands for one per member.
        self.reads_group = bool(self.sample_type & ST.READ and self.read_format & RF.GROUP)
        self.has_callchain = bool(self.sample_type & ST.CALLCHAIN)
        # LBR call stacks (--call-graph lbr) complete the user part of the chain.
        self.lbr_call_stack = bool(self.sample_type & ST.BRANCH_STACK and
                                   a["branch_sample_type"] & BRANCH_SAMPLE_CALL_STACK)
        self.schema = sample_schema(
            self.sample_type, self.read_format, a["branch_sample_type"],
            a["sample_regs_user"], a["sample_regs_intr"], little)
        self.trailer_schema = sample_id_schema(self.sample_type, little)
        self.trailer_size = self.trailer_schema.sizeof() if self.sample_id_all else 0
        self._decode_sample = derive_decoder(self.schema)
        self._decode_trailer = derive_decoder(self.trailer_schema)
        pos = time_position_in_sample(self.sample_type)
        self.sample_time_offset = None if pos is None else 8 * pos
        pos = time_position_in_trailer(self.sample_type)
        self.trailer_time_from_end = None if (pos is None or not self.sample_id_all) else 8 * pos
        self.u64 = struct.Struct("<Q" if little else ">Q")

    # Cheap reads used for ordering and counting, without a full decode.
    def sample_time(self, body: bytes | memoryview) -> int | None:
        off = self.sample_time_offset
        if off is None or off + 8 > len(body):
            return None
        return self.u64.unpack_from(body, off)[0]

    def trailer_time(self, body: bytes | memoryview) -> int | None:
        back = self.trailer_time_from_end
        if back is None or back > len(body):
            return None
        return self.u64.unpack_from(body, len(body) - back)[0]

    def decode_sample(self, body: bytes | memoryview) -> dict[str, Any]:
        out, _ = self._decode_sample(body, 0, len(body))
        return out

    def decode_trailer(self, body: bytes | memoryview) -> dict[str, Any] | None:
        """The sample_id trailer at the end of a non-sample kernel record body."""
        if not self.sample_id_all or self.trailer_size > len(body):
            return None
        out, _ = self._decode_trailer(body, len(body) - self.trailer_size, len(body))
        return out

    @property
    def regs_user_mask(self) -> int:
        return self.attr["sample_regs_user"]

    def __repr__(self) -> str:
        return "EventAttr(%d, %r, ids=%d)" % (self.index, self.name, len(self.ids))


__all__ = ["EventAttr", "default_event_name"]
