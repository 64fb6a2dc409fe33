"""The SAMPLE record and the sample_id trailer, as construct schemas built per attr.

The layout of a sample depends on its attr (sample_type, read_format,
branch_sample_type, the register masks), so the schema is built once per attr
from the field table below, in the kernel's order (perf_output_sample()).
Fields are flat where the kernel writes plain numbers (pid, tid, cpu ...), so
that the schema and the decoder derived from it (fastpath.py) give one dict.
"""
from __future__ import annotations

import functools
from typing import Any, Mapping

import construct as cs

from .constants import BRANCH_SAMPLE_HW_INDEX, SampleType as ST
from .endian import ints
from .records import read_format_schema


def _regs(u64: cs.Construct, mask: int) -> cs.Struct:
    count = bin(mask).count("1")
    return cs.Struct("abi" / u64, "regs" / cs.If(cs.this.abi != 0, cs.Array(count, u64)))


def _callchain(u64: cs.Construct) -> cs.Struct:
    return cs.Struct("nr" / u64, "ips" / cs.Array(cs.this.nr, u64))


@functools.lru_cache(maxsize=None)
def offcpu_raw_schema(little: bool = True) -> cs.Struct:
    """The raw data of an `offcpu-time` sample of perf 6.14 on (util/evsel.c,
    __set_offcpu_sample): two thread ids in a u64, the period, the callchain
    (its first ip PERF_CONTEXT_USER), then the cgroup id, not read here."""
    i = ints(little)
    return cs.Struct("pid" / i.u32, "tid" / i.u32, "period" / i.u64,
                     "callchain" / _callchain(i.u64))


def read_offcpu_raw(data: bytes, little: bool = True) -> Any:
    """offcpu_raw_schema's fields of `data`, or None where the data is too
    short for what it claims."""
    try:
        return offcpu_raw_schema(little).parse(data)
    except cs.ConstructError:
        return None


@functools.lru_cache(maxsize=None)
def sample_schema(sample_type: int, read_format: int = 0, branch_sample_type: int = 0,
                  regs_user_mask: int = 0, regs_intr_mask: int = 0,
                  little: bool = True) -> cs.Struct:
    """The schema of a SAMPLE body for one attr."""
    i = ints(little)
    u16, u32, u64 = i.u16, i.u32, i.u64
    f = []
    if sample_type & ST.IDENTIFIER:
        f.append("identifier" / u64)
    if sample_type & ST.IP:
        f.append("ip" / u64)
    if sample_type & ST.TID:
        f += ["pid" / u32, "tid" / u32]
    if sample_type & ST.TIME:
        f.append("time" / u64)
    if sample_type & ST.ADDR:
        f.append("addr" / u64)
    if sample_type & ST.ID:
        f.append("id" / u64)
    if sample_type & ST.STREAM_ID:
        f.append("stream_id" / u64)
    if sample_type & ST.CPU:
        f += ["cpu" / u32, "cpu_res" / u32]
    if sample_type & ST.PERIOD:
        f.append("period" / u64)
    if sample_type & ST.READ:
        f.append("read" / read_format_schema(read_format, little))
    if sample_type & ST.CALLCHAIN:
        # Return addresses and PERF_CONTEXT_* markers, leaf first.
        f.append("callchain" / _callchain(u64))
    if sample_type & ST.RAW:
        # The kernel pads size+data to 8 bytes and counts the padding in size.
        f.append("raw" / cs.Struct("size" / u32, "data" / cs.Bytes(cs.this.size)))
    if sample_type & ST.BRANCH_STACK:
        fields = ["nr" / u64]
        if branch_sample_type & BRANCH_SAMPLE_HW_INDEX:
            fields.append("hw_idx" / u64)
        fields.append("entries" / cs.Array(cs.this.nr, cs.Struct(
            "from_ip" / u64, "to_ip" / u64, "flags" / u64)))
        f.append("branch_stack" / cs.Struct(*fields))
    if sample_type & ST.REGS_USER:
        f.append("regs_user" / _regs(u64, regs_user_mask))
    if sample_type & ST.STACK_USER:
        # size is what was reserved; dyn_size what the kernel really copied.
        f.append("stack_user" / cs.Struct(
            "size" / u64, "data" / cs.Bytes(cs.this.size),
            "dyn_size" / cs.If(cs.this.size != 0, u64)))
    if sample_type & ST.WEIGHT_STRUCT:
        # union perf_sample_weight: the members of the u64 in the order of
        # the writer's bitfields (reversed on big-endian machines).
        members = ["var1_dw" / u32, "var2_w" / u16, "var3_w" / u16]
        f.append("weight" / cs.Struct(*(members if little else members[::-1])))
    elif sample_type & ST.WEIGHT:
        f.append("weight" / u64)
    if sample_type & ST.DATA_SRC:
        f.append("data_src" / u64)
    if sample_type & ST.TRANSACTION:
        f.append("transaction" / u64)
    if sample_type & ST.REGS_INTR:
        f.append("regs_intr" / _regs(u64, regs_intr_mask))
    if sample_type & ST.PHYS_ADDR:
        f.append("phys_addr" / u64)
    if sample_type & ST.CGROUP:
        f.append("cgroup" / u64)
    if sample_type & ST.DATA_PAGE_SIZE:
        f.append("data_page_size" / u64)
    if sample_type & ST.CODE_PAGE_SIZE:
        f.append("code_page_size" / u64)
    if sample_type & ST.AUX:
        f.append("aux" / cs.Struct("size" / u64, "data" / cs.Bytes(cs.this.size)))
    return cs.Struct(*f)


@functools.lru_cache(maxsize=None)
def sample_id_schema(sample_type: int, little: bool = True) -> cs.Struct:
    """The sample_id trailer that ends non-SAMPLE kernel records (sample_id_all)."""
    i = ints(little)
    f = []
    if sample_type & ST.TID:
        f += ["pid" / i.u32, "tid" / i.u32]
    if sample_type & ST.TIME:
        f.append("time" / i.u64)
    if sample_type & ST.ID:
        f.append("id" / i.u64)
    if sample_type & ST.STREAM_ID:
        f.append("stream_id" / i.u64)
    if sample_type & ST.CPU:
        f += ["cpu" / i.u32, "cpu_res" / i.u32]
    if sample_type & ST.IDENTIFIER:
        f.append("identifier" / i.u64)
    return cs.Struct(*f)


def id_position_in_sample(sample_type: int) -> int | None:
    """Index (in u64 words) of the event id in a SAMPLE body, or None.

    As perf's evsel__calc_id_pos(): IDENTIFIER is always first; else ID comes
    after IP, TID, TIME and ADDR.
    """
    if sample_type & ST.IDENTIFIER:
        return 0
    if not sample_type & ST.ID:
        return None
    return sum(1 for bit in (ST.IP, ST.TID, ST.TIME, ST.ADDR) if sample_type & bit)


def id_position_in_trailer(sample_type: int) -> int | None:
    """Index from the END (1 = last u64) of the event id in a sample_id trailer."""
    if sample_type & ST.IDENTIFIER:
        return 1
    if not sample_type & ST.ID:
        return None
    return 1 + sum(1 for bit in (ST.CPU, ST.STREAM_ID) if sample_type & bit)


def time_position_in_sample(sample_type: int) -> int | None:
    """Index in u64 words of TIME in a SAMPLE body, or None."""
    if not sample_type & ST.TIME:
        return None
    return sum(1 for bit in (ST.IDENTIFIER, ST.IP, ST.TID) if sample_type & bit)


def time_position_in_trailer(sample_type: int) -> int | None:
    """Index from the end of TIME in the sample_id trailer, or None."""
    if not sample_type & ST.TIME:
        return None
    return 1 + sum(1 for bit in (ST.IDENTIFIER, ST.CPU, ST.STREAM_ID, ST.ID)
                   if sample_type & bit)


def weight_and_ins_lat(fields: Mapping[str, Any],
                       sample_type: int) -> tuple[int | None, int | None]:
    """(weight, ins_lat) as perf 6.1 on x86 reads them: WEIGHT is the whole
    u64; WEIGHT_STRUCT gives var1_dw and var2_w.  None for what the sample
    lacks (ins_lat without WEIGHT_STRUCT)."""
    w = fields.get("weight")
    if w is None:
        return None, None
    if isinstance(w, dict):
        if sample_type & ST.WEIGHT:
            # Both bits: perf reads the u64 (the reader decoded the struct).
            return (w["var1_dw"] | w["var2_w"] << 32 | w["var3_w"] << 48), 0
        return w["var1_dw"], w["var2_w"]
    return w, None
