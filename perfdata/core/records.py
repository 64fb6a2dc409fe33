"""The compiled record walk of `perfdata stats` (perfdata.core._records).

`walk_counting(pf, ...)` reads the data section of a perf.data file in blocks
and has the C walker count the records it takes as they are: the ones the
Python walker's fast lane takes (perfdata/format/walker.py, recovery mode).
At a record it leaves (a size or type out of the ordinary, a record the walk
expands such as COMPRESSED, the last record of the data) it stops, and the
Python walker goes on from there with the walk state it would have had
(walker.WalkState), takes that record its careful way, and pauses at the
next record boundary, where the C goes on.  Records the walker expands
(zstd) keep the Python walk to the end.  The records are counted the same
either way, and `perfdata stats` prints the same bytes
(tests/core/test_core_records.py).

It does not apply (the caller walks in Python) to pipes, directories (`perf
record --threads`), strict walks, events that read counters
(PERF_SAMPLE_READ: their samples count by counter growth), files whose
events disagree on the sample_id trailer, and where the compiled module is
not built or PERFDATA_CORE=pure."""
from __future__ import annotations

import io
import os
import types
from array import array
from typing import TYPE_CHECKING, Callable, NamedTuple

from . import CORE_ENV, compiled_records
from .layout import header_layout, lost_samples_offset, name_offsets
from ..format import Feature, RecordType as RT, SampleType as ST, USER_TYPE_START
from ..format import event_header_struct, KNOWN_TYPES, WalkState, least_sizes

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..format import PerfFile, Record

# Bytes read at once (a record is at most 64 KiB: any block holds one whole).
BLOCK = 1 << 20
# The walker's SAMPLE size rule: after this many samples one larger than
# twice the largest (+64) is suspect (walker.RecordWalker.records).
BIG_SAMPLE_AFTER = 16
# Types the walker's fast lane leaves to its careful path even as the next
# header (walker._CAREFUL_ONLY): payloads after them, or unaligned sizes.
CAREFUL_ONLY = frozenset((int(RT.COMPRESSED), int(RT.COMPRESSED2), int(RT.AUXTRACE),
                          int(RT.HEADER_TRACING_DATA)))
# perf's own records the walk does something with (applies to the file's
# events and features, or expands, or reads a payload after): left to it ...
APPLIED = frozenset((int(RT.HEADER_ATTR), int(RT.HEADER_FEATURE), int(RT.HEADER_BUILD_ID),
                     int(RT.HEADER_EVENT_TYPE), int(RT.ID_INDEX))) | CAREFUL_ONLY
# ... but for these, which the C takes and counts, and the glue applies as
# the walk would (PerfFile.apply_user_record) before the C goes on: an
# ID_INDEX (events' ids) is among the first records of every perf 6 file.
APPLIED_HERE = frozenset((int(RT.ID_INDEX),))


def records_module() -> types.ModuleType | None:
    """The compiled walker, or None where it is not built or turned off."""
    return compiled_records()


class RecordCounts(NamedTuple):
    """What one stretch of the compiled walk counted."""
    total: int
    by_type: dict[int, int]           # record type -> records
    has_aux: bool                     # an AUXTRACE_INFO was counted
    samples: dict[int, int]           # EventAttr.index -> SAMPLE records
    lost: dict[int, int]              # EventAttr.index -> samples lost (a u32, as perf's)


def why_not(pf: PerfFile) -> str | None:
    """Why the compiled walk does not apply to `pf`, or None when it does."""
    if records_module() is None:
        return "not built" if os.environ.get(CORE_ENV, "").lower() != "pure" \
            else "%s=pure" % CORE_ENV
    if pf.is_pipe or pf.is_directory or pf.data_files:
        return "a pipe or a directory"
    if pf.strict:
        return "a strict walk"
    if not isinstance(pf.path_arg, (str, os.PathLike)) or not os.path.isfile(pf.path):
        return "not a regular file"
    if pf.data_range[1] is None:
        return "no end to the data"
    return _why_not_events(pf)


def _why_not_events(pf: PerfFile) -> str | None:
    attrs = pf.attrs
    if any(ea.sample_type & ST.READ for ea in attrs):
        return "an event reads counters"
    if attrs and len({(ea.sample_id_all, ea.trailer_size) for ea in attrs}) > 1:
        return "events disagree on the sample_id trailer"
    return None


def walk_tables(trailer: int, ntypes: int, applied_here: frozenset[int] = APPLIED_HERE
                ) -> array:
    """The walker's rules by record type: the least size of a record the C
    takes, of a header it trusts after one, where a name starts, and which
    records the glue applies (`applied_here`: those the C takes, the others
    of APPLIED it leaves to the Python walker)."""
    least = least_sizes(trailer)
    take = [0] * ntypes
    after = [0] * ntypes
    name_at = [-1] * ntypes
    apply = [0] * ntypes
    for rtype in KNOWN_TYPES:
        if rtype >= ntypes:
            continue
        if rtype not in CAREFUL_ONLY:
            after[rtype] = least[rtype]
        if rtype not in APPLIED or rtype in applied_here:
            take[rtype] = least[rtype]
        if rtype in applied_here:
            apply[rtype] = 1
    for rtype, offset in name_offsets().items():
        name_at[rtype] = offset
    return array("q", take + after + name_at + apply)


def walk_params(pf: PerfFile, walk: WalkState, names: Sequence[str]) -> array:
    """The C walk's params (perfdata/core/_framing.h) in the order of
    `names`, for a walk of pf's data section that goes on at walk.at with
    the Python walker's state there: the header's layout (from its schema),
    the walker's alignment rule, the events' sample_id layout, the record
    type numbers."""
    ctx = pf.ctx
    attrs = pf.attrs
    end = pf.data_range[1]
    little = pf.little
    head = header_layout(little)
    # (the walker's alignment rule: RecordWalker.__init__, _unaligned)
    if walk.unaligned is None:
        aligned = Feature.COMPRESSED not in pf.features and not walk.at % 8
    else:
        aligned = not walk.unaligned
    values = {
        "little": int(little), "type_off": head.type_off, "misc_off": head.misc_off,
        "size_off": head.size_off, "header_size": head.size,
        "align_mask": 7 if aligned else 0, "data_end": end,
        "trailer": ctx.trailer_size(),
        "sample_id_pos": -1 if ctx.sample_id_pos is None else ctx.sample_id_pos,
        "trailer_id_pos": -1 if ctx.trailer_id_pos is None else ctx.trailer_id_pos,
        "sample_id_all": int(bool(attrs and attrs[0].sample_id_all)),
        "single": 0 if attrs and (len(attrs) == 1 or not ctx.id_to_attr) else -1,
        "nattrs": len(attrs), "lost_off": lost_samples_offset(),
        "big_after": BIG_SAMPLE_AFTER,
        "SAMPLE": int(RT.SAMPLE), "LOST_SAMPLES": int(RT.LOST_SAMPLES),
        "AUXTRACE_INFO": int(RT.AUXTRACE_INFO), "FINISHED_ROUND": int(RT.FINISHED_ROUND),
        "FINISHED_INIT": int(RT.FINISHED_INIT), "USER_TYPE_START": USER_TYPE_START,
    }
    return array("q", [values[name] for name in names])


def walk_counting(pf: PerfFile, add_counts: Callable[[RecordCounts], None],
                  add_record: Callable[[Record], None]) -> bool:
    """Walk `pf`'s data section, the C counting what it takes (given to
    `add_counts` after each stretch) and the Python walker the rest (each
    record given to `add_record`).  False, having walked nothing, where the
    compiled walk does not apply (why_not)."""
    if why_not(pf) is not None:
        return False
    start, end = pf.data_range
    assert end is not None
    walk = WalkState(at=start)
    with open(pf.path, "rb", buffering=0) as f:
        buf = bytearray(min(BLOCK, end - start))
        while walk.at < end:
            if _why_not_events(pf) is None:     # (a HEADER_ATTR may have come)
                add_counts(_count_stretch(pf, f, buf, walk))
            if walk.at >= end:
                break
            # The record there by the Python walker, which pauses after it
            # (not where it walks on to the end: the events changed, or it
            # expands zstd).
            walk.pause = _why_not_events(pf) is None
            for rec in pf.walk_range(walk.at, end, resume=walk):
                add_record(rec)
            if not walk.paused:
                break
    return True


def _count_stretch(pf: PerfFile, f: io.RawIOBase, buf: bytearray,
                   walk: WalkState) -> RecordCounts:
    """The C walk from walk.at up to the first record it leaves (walk is
    moved there, with the state the Python walker would have)."""
    mod = records_module()
    assert mod is not None
    ctx = pf.ctx
    ctx.refresh_id_positions()
    attrs = pf.attrs
    end = pf.data_range[1]
    assert end is not None
    head = header_layout(pf.little)
    single_slot = mod.PARAM_NAMES.index("single")
    params = walk_params(pf, walk, mod.PARAM_NAMES)
    tables = walk_tables(ctx.trailer_size(), mod.NTYPES)
    names = mod.STATE_NAMES
    nfixed = len(names)
    state = array("Q", bytes(8 * (nfixed + mod.NTYPES + 2 * len(attrs))))
    state[names.index("prev")] = 0 if walk.prev is None else walk.prev + 1
    state[names.index("nsamples")] = walk.nsamples
    state[names.index("max_sample")] = walk.max_sample
    header = event_header_struct(pf.little)
    at = walk.at
    ids_changed = True
    while at < end:
        if ids_changed:
            # which event a record is of, by its id (DecodeContext.attr_for)
            id_array, id_attrs = _id_tables(pf)
            params[single_slot] = 0 if attrs and (len(attrs) == 1 or
                                                  not ctx.id_to_attr) else -1
            ids_changed = False
        want = min(len(buf), end - at)
        f.seek(at)
        got = f.readinto(memoryview(buf)[:want]) or 0
        used, why = mod.walk_block(memoryview(buf)[:got], at, params, tables,
                                   id_array, id_attrs, state)
        if why == mod.APPLY:
            # The record that ends at `used`, counted: applied as the walk does.
            rec_at = state[names.index("prev")] - 1 - at
            rtype, misc, size = header.unpack_from(buf, rec_at)
            body = bytes(buf[rec_at + head.size:rec_at + size])
            pf.apply_user_record(ctx.make_record(rtype, misc, size, at + rec_at, body),
                                 ctx.path)
            ids_changed = True
        at += used
        if why == mod.HANDBACK or (why == mod.MORE and used == 0):
            break
    named = dict(zip(names, state[:nfixed]))
    walk.at = at
    walk.prev = named["prev"] - 1 if named["prev"] else None
    walk.nsamples, walk.max_sample = named["nsamples"], named["max_sample"]
    by_type = {rtype: n for rtype, n in enumerate(state[nfixed:nfixed + mod.NTYPES]) if n}
    per = state[nfixed + mod.NTYPES:]
    n = len(attrs)
    return RecordCounts(named["total"], by_type, bool(named["has_aux"]),
                        {ea.index: per[k] for k, ea in enumerate(attrs) if per[k]},
                        {ea.index: per[n + k] for k, ea in enumerate(attrs) if per[n + k]})


def _id_tables(pf: PerfFile) -> tuple[array, array]:
    """The events' ids, sorted, and the position in pf.attrs of each one's event."""
    position = {id(ea): k for k, ea in enumerate(pf.attrs)}
    ids = sorted(pf.ctx.id_to_attr.items())
    return (array("Q", [ident for ident, _ in ids]),
            array("q", [position[id(ea)] for _, ea in ids]))
