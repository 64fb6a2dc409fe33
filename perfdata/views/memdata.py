"""The memory-access fields of a sample as `perf script` 6.1 prints them.

data_src is a `union perf_mem_data_src` (include/uapi/linux/perf_event.h): bit
fields of a u64, each a small mask of PERF_MEM_* flags.  perf decodes it with
perf_script__meminfo_scnprintf() and the perf_mem__{op,lvl,snp,tlb,lck,blk}_
scnprintf() helpers of tools/perf/util/mem-events.c, into
`|OP LOAD|LVL L1 or L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A`;
builtin-script.c's data_src__fprintf() puts the value in hex before it.  The
tables below are mem-events.c's, the layout perf_event.h's.

Also here: the weight and instruction latency of WEIGHT / WEIGHT_STRUCT
samples (arch/x86/util/event.c) and the page-size names (get_page_size_name()
in util/session.c).
"""
from __future__ import annotations

import functools
from collections import namedtuple
from typing import Iterable, Sequence

from .units import unit_number


class BitField(namedtuple("BitField", "shift width")):
    """One member of union perf_mem_data_src (little-endian bit-field order)."""
    __slots__ = ()

    def of(self, value: int) -> int:
        return (value >> self.shift) & ((1 << self.width) - 1)


# union perf_mem_data_src, in the order of its members.
MEM_OP = BitField(0, 5)
MEM_LVL = BitField(5, 14)
MEM_SNOOP = BitField(19, 5)
MEM_LOCK = BitField(24, 2)
MEM_DTLB = BitField(26, 7)
MEM_LVL_NUM = BitField(33, 4)
MEM_REMOTE = BitField(37, 1)
MEM_SNOOPX = BitField(38, 2)
MEM_BLK = BitField(40, 3)
MEM_HOPS = BitField(43, 3)

# The flags of each member (PERF_MEM_<member>_<flag>).
OP_NA, OP_LOAD, OP_STORE, OP_PFETCH, OP_EXEC = 0x01, 0x02, 0x04, 0x08, 0x10
LVL_NA, LVL_HIT, LVL_MISS = 0x01, 0x02, 0x04
SNOOP_NA = 0x01
LOCK_NA, LOCK_LOCKED = 0x01, 0x02
TLB_NA, TLB_HIT, TLB_MISS = 0x01, 0x02, 0x04
BLK_NA, BLK_DATA, BLK_ADDR = 0x01, 0x02, 0x04

# mem-events.c: one name per bit, from bit 0.
TLB_ACCESS = ("N/A", "HIT", "MISS", "L1", "L2", "Walker", "Fault")
MEM_LVL_NAMES = ("N/A", "HIT", "MISS", "L1", "LFB/MAB", "L2", "L3", "Local RAM",
                 "Remote RAM (1 hop)", "Remote RAM (2 hops)", "Remote Cache (1 hop)",
                 "Remote Cache (2 hops)", "I/O", "Uncached")
SNOOP_ACCESS = ("N/A", "None", "Hit", "Miss", "HitM")
SNOOPX_ACCESS = ("Fwd", "Peer")
# mem_lvl_num values with a name (PERF_MEM_LVLNUM_CXL..NA); the others print
# as L<n>.
MEM_LVLNUM_NAMES = {0x09: "CXL", 0x0a: "I/O", 0x0b: "Any cache", 0x0c: "LFB/MAB",
                    0x0d: "RAM", 0x0e: "PMEM", 0x0f: "N/A"}
# mem_hops 1..4 ("Remote " comes from mem_remote).  perf indexes this array
# with 5..7 too, past its end; those print as N/A here.
MEM_HOPS_NAMES = ("N/A", "core, same node", "node, same socket", "socket, same board",
                  "board")
# The first flag set names the op / the lock state; none: "No".
OP_NAMES = ((OP_NA, "N/A"), (OP_LOAD, "LOAD"), (OP_STORE, "STORE"), (OP_PFETCH, "PFETCH"),
            (OP_EXEC, "EXEC"))
LOCK_NAMES = ((LOCK_NA, "N/A"), (LOCK_LOCKED, "Yes"))

# data_src__fprintf() formats into char out[100] (scnprintf: 99 characters).
SCRIPT_TEXT_MAX = 99


def _bit_names(mask: int, names: Sequence[str]) -> list[str]:
    return [name for bit, name in enumerate(names) if mask >> bit & 1]


def _first_name(mask: int, table: Iterable[tuple[int, str]], default: str = "No") -> str:
    for flag, name in table:
        if mask & flag:
            return name
    return default


def _hit_miss(text: str, mask: int, hit: int, miss: int) -> str:
    return text + (" hit" if mask & hit else "") + (" miss" if mask & miss else "")


def op_text(src: int) -> str:
    """perf_mem__op_scnprintf"""
    return _first_name(MEM_OP.of(src), OP_NAMES)


def lvl_text(src: int) -> str:
    """perf_mem__lvl_scnprintf: 'Remote ', the hop or the level bits, the
    level number, then hit/miss from the level bits."""
    m = MEM_LVL.of(src)
    parts = []
    out = "Remote " if MEM_REMOTE.of(src) else ""
    hops = MEM_HOPS.of(src)
    if hops:
        name = MEM_HOPS_NAMES[hops] if hops < len(MEM_HOPS_NAMES) else "N/A"
        out += name + " "
    else:
        parts = _bit_names(m & ~(LVL_HIT | LVL_MISS), MEM_LVL_NAMES)
    lvl_num = MEM_LVL_NUM.of(src)
    if lvl_num:
        parts.append(MEM_LVLNUM_NAMES.get(lvl_num, "L%d" % lvl_num))
    out += " or ".join(parts)
    return _hit_miss(out or "N/A", m, LVL_HIT, LVL_MISS)


def snoop_text(src: int) -> str:
    """perf_mem__snp_scnprintf: the snoop bits, then the snoopx bits."""
    names = (_bit_names(MEM_SNOOP.of(src), SNOOP_ACCESS) +
             _bit_names(MEM_SNOOPX.of(src), SNOOPX_ACCESS))
    return " or ".join(names) or "N/A"


def tlb_text(src: int) -> str:
    """perf_mem__tlb_scnprintf"""
    m = MEM_DTLB.of(src)
    text = " or ".join(_bit_names(m & ~(TLB_HIT | TLB_MISS), TLB_ACCESS)) or "N/A"
    return _hit_miss(text, m, TLB_HIT, TLB_MISS)


def lock_text(src: int) -> str:
    """perf_mem__lck_scnprintf"""
    return _first_name(MEM_LOCK.of(src), LOCK_NAMES)


def blk_text(src: int) -> str:
    """perf_mem__blk_scnprintf: each name with a leading blank."""
    m = MEM_BLK.of(src)
    if not m or m & BLK_NA:
        return " N/A"
    return (" Data" if m & BLK_DATA else "") + (" Addr" if m & BLK_ADDR else "")


def meminfo_text(src: int) -> str:
    """perf_script__meminfo_scnprintf"""
    return "|OP %s|LVL %s|SNP %s|TLB %s|LCK %s|BLK %s" % (
        op_text(src), lvl_text(src), snoop_text(src), tlb_text(src), lock_text(src),
        blk_text(src))


@functools.lru_cache(maxsize=4096)
def data_src_text(src: int) -> str:
    """What data_src__fprintf() prints before padding: the value in 16 hex
    columns, a blank and the decoded text, cut to perf's buffer.  (perf pads it
    on the right to the widest text printed so far: ScriptFormatter does.)"""
    src &= (1 << 64) - 1
    return ("%16x %s" % (src, meminfo_text(src)))[:SCRIPT_TEXT_MAX]


def page_size_name(size: int) -> str:
    """get_page_size_name(): 4096 -> '4K'; 0 -> 'N/A'."""
    return unit_number(size) if size else "N/A"
