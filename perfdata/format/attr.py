"""perf_event_attr, in every size perf has written (64 to 144 bytes and beyond).

One field list describes the struct; the schema for a given `size` takes the
fields that fit and keeps the bytes after the last known field as
`unknown_tail`, so attrs of a newer perf than ours (perf 6.1 refuses anything
over 128 bytes) read without loss.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Mapping

import construct as cs

from .endian import ints

if TYPE_CHECKING:
    import struct

# (name, bits) of the u64 bitfield at offset 40, from bit 0 upwards.
ATTR_FLAG_BITS = (
    ("disabled", 1), ("inherit", 1), ("pinned", 1), ("exclusive", 1),
    ("exclude_user", 1), ("exclude_kernel", 1), ("exclude_hv", 1),
    ("exclude_idle", 1), ("mmap", 1), ("comm", 1), ("freq", 1),
    ("inherit_stat", 1), ("enable_on_exec", 1), ("task", 1), ("watermark", 1),
    ("precise_ip", 2), ("mmap_data", 1), ("sample_id_all", 1),
    ("exclude_host", 1), ("exclude_guest", 1), ("exclude_callchain_kernel", 1),
    ("exclude_callchain_user", 1), ("mmap2", 1), ("comm_exec", 1),
    ("use_clockid", 1), ("context_switch", 1), ("write_backward", 1),
    ("namespaces", 1), ("ksymbol", 1), ("bpf_event", 1), ("aux_output", 1),
    ("cgroup", 1), ("text_poke", 1), ("build_id", 1), ("inherit_thread", 1),
    ("remove_on_exec", 1), ("sigtrap", 1), ("reserved_1", 26),
)


def _flags_schema(little: bool) -> cs.Construct:
    fields = [name / cs.BitsInteger(bits) for name, bits in ATTR_FLAG_BITS]
    if little:
        # A little-endian C bitfield starts at the least significant bit of the
        # u64: read the 8 bytes swapped, so that BitStruct meets the fields from
        # the last one down.
        return cs.ByteSwapped(cs.BitStruct(*reversed(fields)))
    # A big-endian bitfield starts at the most significant bit of byte 0.
    return cs.BitStruct(*fields)


def _attr_fields(little: bool) -> tuple[tuple[str, cs.Construct, int], ...]:
    i = ints(little)
    return (
        ("type", i.u32, 0),
        ("size", i.u32, 4),
        ("config", i.u64, 8),
        ("sample_period", i.u64, 16),   # sample_freq when flags.freq
        ("sample_type", i.u64, 24),
        ("read_format", i.u64, 32),
        ("flags", _flags_schema(little), 40),
        ("wakeup_events", i.u32, 48),   # wakeup_watermark when flags.watermark
        ("bp_type", i.u32, 52),
        ("config1", i.u64, 56),         # bp_addr, kprobe_func, uprobe_path
        ("config2", i.u64, 64),         # VER1: bp_len, kprobe_addr, probe_offset
        ("branch_sample_type", i.u64, 72),   # VER2
        ("sample_regs_user", i.u64, 80),     # VER3
        ("sample_stack_user", i.u32, 88),
        ("clockid", i.s32, 92),
        ("sample_regs_intr", i.u64, 96),     # VER4
        ("aux_watermark", i.u32, 104),       # VER5
        ("sample_max_stack", i.u16, 108),
        ("reserved_2", i.u16, 110),
        ("aux_sample_size", i.u32, 112),     # VER6
        ("aux_action", i.u32, 116),
        ("sig_data", i.u64, 120),            # VER7
        ("config3", i.u64, 128),             # VER8
        ("config4", i.u64, 136),             # VER9
    )


#: Fields that a short attr lacks read as 0, as the kernel zero-extends them.
ATTR_DEFAULTS = {name: 0 for name, _, _ in _attr_fields(True) if name != "flags"}


@functools.lru_cache(maxsize=None)
def attr_schema(size: int, little: bool = True) -> cs.Struct:
    """The construct schema of a perf_event_attr of `size` bytes."""
    subcons = []
    end = 0
    for name, sub, offset in _attr_fields(little):
        width = sub.sizeof()
        if offset + width > size:
            break
        subcons.append(name / sub)
        end = offset + width
    if size > end:
        subcons.append("unknown_tail" / cs.Bytes(size - end))
    return cs.Struct(*subcons)


def complete_attr(parsed: Mapping[str, Any]) -> dict[str, Any]:
    """A dict of every attr field, with the zero defaults of fields too new for it."""
    out: dict[str, Any] = dict(ATTR_DEFAULTS)
    out.update({k: v for k, v in parsed.items() if not k.startswith("_")})
    flags = parsed.get("flags")
    if flags is not None:
        out["flags"] = {k: v for k, v in flags.items() if not k.startswith("_")}
    else:
        out["flags"] = {name: 0 for name, _ in ATTR_FLAG_BITS}
    return out


@functools.lru_cache(maxsize=None)
def _attr_head_struct(little: bool) -> struct.Struct:
    from .fastpath import derive_struct
    return derive_struct(attr_schema(8, little))       # type, size


def attr_size_at(buf: bytes | memoryview, offset: int = 0, little: bool = True) -> int:
    """Bytes of the perf_event_attr at `offset`, from its own `size` field
    (0 means VER0's 64, as perf reads it)."""
    return _attr_head_struct(little).unpack_from(buf, offset)[1] or 64
