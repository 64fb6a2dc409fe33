"""The compiled sums of `perfdata offcpu` (perfdata.core._switches).

For a file without stacks whose records the byte scan reads
(perfdata/format/samplescan.py), `sum_switches` has the C walk the records,
sort the switches and wakeups by time and add up each thread's waits and
runs as SwitchTracker (perfdata/session/switches.py, the reference) does;
the tracker is then filled with those sums (SwitchTracker.add_sums).  It
does not apply (None: the caller runs the Python path) where the compiled
module is not built or PERFDATA_CORE=pure, where the scan does not apply, to
fields of other sizes than Linux's, and to a record the C cannot step over.
"""
from __future__ import annotations

import mmap
import os
from typing import TYPE_CHECKING, Any

from . import _extension
from ..format import id_offset, sample_offsets, why_not_scanned

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..format import EventAttr, PerfFile
    from ..session.switches import TracepointLayout

    # (tid, pid, comm, first, last, run, switches out, [(state, short, waker, ns, n)])
    ThreadSums = tuple[int, int, bytes, int, int, int, int, list[tuple[int, int, bytes, int, int]]]

# The switch fields the C reads, and their sizes there (Linux's since 2.6).
_SIZES = {"prev_comm": (16,), "next_comm": (16,), "prev_pid": (4,), "next_pid": (4,),
          "prev_state": (4, 8), "pid": (4,)}


def _layout(ea: EventAttr, layout: TracepointLayout, switch: bool) -> tuple[int, ...] | None:
    """The C's offsets of one event's fields from a record's start (its
    L_* order), or None for fields of other sizes."""
    at = sample_offsets(ea.sample_type)
    raw = at["raw_size"] + 4
    fields = {}
    for name, (_, offset, size) in layout.fields.items():
        if name in _SIZES and size not in _SIZES[name]:
            return None
        fields[name] = (raw + offset, size)
    need = max(offset + size for offset, size in fields.values())
    if switch:
        return (need, at["pid"], at["time"], at["cpu"], fields["prev_comm"][0],
                fields["prev_pid"][0], fields["prev_state"][0], fields["prev_state"][1],
                fields["next_comm"][0], fields["next_pid"][0], 0)
    return (need, at["pid"], at["time"], at["cpu"], 0, 0, 0, 0, 0, 0, fields["pid"][0])


def sum_switches(pf: PerfFile, switches: Mapping[EventAttr, TracepointLayout],
                 wakeups: Mapping[EventAttr, TracepointLayout], min_wait: int
                 ) -> tuple[list[ThreadSums], int, int, int, int] | None:
    """(threads' sums, switches, switch ins, inferred switch ins, records
    lost), or None where the compiled sums do not apply."""
    module = _extension("_switches")
    attrs = list(switches) + list(wakeups)
    if module is None or len(switches) != 1 or len(wakeups) > 1 or \
            why_not_scanned(pf, attrs) is not None:
        return None
    layouts: list[Any] = [_layout(ea, lay, True) for ea, lay in switches.items()]
    layouts += [_layout(ea, lay, False) for ea, lay in wakeups.items()] or [(0,) * 11]
    if None in layouts:
        return None
    id_at = id_offset(pf)
    ids: list[int] = []
    kinds: list[int] = []
    for kind, group in enumerate((switches, wakeups)):
        for ea in group:
            ids += ea.ids
            kinds += [kind] * len(ea.ids)
    if id_at is not None and not all(ea.ids for ea in attrs):
        return None
    start, end = pf.data_range
    with open(pf.path, "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            return None
        buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return module.sum_switches(buf, start, end or 0, -1 if id_at is None else id_at,
                                   tuple(ids), tuple(kinds), layouts[0], layouts[1], min_wait)
    finally:
        buf.close()
