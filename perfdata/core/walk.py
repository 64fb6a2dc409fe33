"""The compiled record walk of `perfdata script` (perfdata.core._core
RecordWalk), the session stream's records in perf's delivery order.

Where it applies (why_not), the session stream (perfdata.session.stream)
takes its records from here rather than from PerfFile.records: the C frames
the records of the data section by the rules of the Python walker's fast
lane (perfdata/core/_framing.h, as the `perfdata stats` walk:
perfdata/core/records.py), orders them as perf delivers them (ordering.
OrderedQueue, step for step), and gives every SAMPLE to the SampleText of
the run (perfdata/core/script.py) without making a Python object of it.
What the stream does something with (side records, samples the core hands
back, lost counts, build-ids, the side events asked for) comes out as a
Record, in delivery order, after the texts of the samples before it.

At a record its rules leave (a size or type out of the ordinary, one the
walk applies or expands, the last of the data), the Python walker takes
it: it goes on from there with the walk state it would have had
(walker.WalkState), pauses at the next record boundary, and the records it
makes are ordered and delivered by the C the same way; then the C frames
again.  A file whose records the walker expands (zstd) keeps the Python
walk to the end, the C ordering and taking its samples all the same.
"""
from __future__ import annotations

import functools
import os
from array import array
from typing import TYPE_CHECKING, Any

import construct as cs

from .records import _id_tables, _why_not_events, walk_params, walk_tables
from ..format import MISC_MMAP_BUILD_ID, Record, RecordType as RT, WalkState, body_schemas, field
from ..session.stream import SESSION_TYPES

if TYPE_CHECKING:
    import types
    from collections.abc import Iterator

    from ..format import PerfFile
    from ..session.stream import SessionStream

# COMPRESSED records are left out of the delivery (PerfFile.records), their
# records delivered in their place.
_LEFT_OUT = frozenset((int(RT.COMPRESSED), int(RT.COMPRESSED2)))
# What the stream reads of the other records (SessionStream.__iter__).
_READ = SESSION_TYPES | {RT.LOST, RT.LOST_SAMPLES, RT.HEADER_BUILD_ID}
# The side records the C applies to the machine itself where the stream
# would do nothing else with them (not shown, no after_apply).
_APPLIED = frozenset((RT.COMM, RT.FORK, RT.EXIT, RT.MMAP, RT.MMAP2))
# The Machine's method taking each one's fields in its schema's order
# (Machine.apply_mmap2 etc.), called in place of apply(type, {fields}).
_APPLIED_BY_FIELDS: dict[int, str] = {
    RT.COMM: "apply_comm", RT.FORK: "apply_fork", RT.EXIT: "apply_exit", RT.MMAP: "apply_mmap",
    RT.MMAP2: "apply_mmap2"}


def side_layouts(little: bool, types: frozenset[int]) -> dict[int, tuple[tuple[tuple[str, int,
                                                                            int], ...], int, int]]:
    """{record type: (fields, misc mask, guard)} of the side records the C
    applies to the machine (RecordWalk.set_apply): every field of the body's
    construct schema as (name, offset, width: 4 or 8 for a u32 or u64, 0 for
    the NUL-terminated name that ends it), so that the C decodes what the
    schema's decoder does and hands back what it would refuse; the header's
    misc bits of another form (MMAP2's build-id form), and the byte where a
    path's first character means another (MMAP2 of Linux 3.12-3.15: see
    decoder.mmap2_form).  A schema of another shape leaves its type out."""
    schemas = body_schemas(little)
    out = {}
    for rtype in sorted(types):
        schema = schemas[rtype]
        fields = []
        for sub in schema.subcons:
            if isinstance(sub.subcon, cs.StringEncoded) and sub.subcon.encoding == "utf8" and \
                    isinstance(sub.subcon.subcon, cs.NullTerminated) and \
                    sub is schema.subcons[-1]:
                fields.append((sub.name, field(schema, sub.name).offset, 0))
                continue
            # (unsigned numbers of the file's byte order, as the C reads them)
            fmt = getattr(sub.subcon, "fmtstr", "")
            if fmt[1:] not in ("I", "L", "Q") or fmt[:1] != ("<" if little else ">"):
                break
            fields.append((sub.name, field(schema, sub.name).offset, sub.sizeof()))
        else:
            mmap2 = rtype == RT.MMAP2
            out[int(rtype)] = (tuple(fields), MISC_MMAP_BUILD_ID if mmap2 else 0,
                               field(schema, "prot").offset if mmap2 else -1)
    return out


def by_fields(machine: object, layouts: dict[int, tuple[Any, ...]]) -> dict[int, tuple[Any, ...]]:
    """side_layouts' layouts, each with the machine's method that takes the
    record's fields positionally (misc, the record's time, then the fields)
    where its parameters are named as the schema's fields, in their order:
    else None (apply(type, {name: value}, misc, time) is called)."""
    out = {}
    for rtype, layout in layouts.items():
        call = getattr(machine, _APPLIED_BY_FIELDS.get(rtype, ""), None)
        if _parameters(call)[2:] != tuple(name for name, _, _ in layout[0]):
            call = None
        out[rtype] = layout + (call,)
    return out


def _parameters(call: Any) -> tuple[str, ...]:
    """The names of a method's positional parameters (after self; through
    functools.wraps), read off its code (inspect costs 10 ms to import)."""
    fn = getattr(call, "__wrapped__", call)
    method = getattr(fn, "__func__", None)
    code = getattr(method or fn, "__code__", None)
    if code is None:
        return ()
    return tuple(code.co_varnames[1 if method else 0:code.co_argcount])


def why_not(pf: PerfFile, stream: SessionStream,
            module: types.ModuleType | None = None) -> str | None:
    """Why the compiled walk does not take a stream's records, or None.
    module: the compiled core the run uses (one built before the walk was,
    as a checkout's in-place build can be, has none)."""
    if module is not None and not hasattr(module, "RecordWalk"):
        return "the compiled core was built without the record walk"
    if pf.is_pipe or pf.is_directory or pf.data_files:
        return "a pipe or a directory"
    if pf.strict:
        return "a strict walk"
    if stream.order != "time":
        return "file order"
    if not isinstance(pf.path_arg, (str, os.PathLike)) or not os.path.isfile(pf.path):
        return "not a regular file"
    if pf.data_range[1] is None:
        return "no end to the data"
    return _why_not_events(pf)


def deliver_all(module: types.ModuleType, stream: SessionStream) -> bool:
    """The stream's records from the compiled walk with no core (every
    sample of the run, or of the worker's blocks, delivered as a Record),
    where it applies (why_not): a run whose samples the Python path makes,
    a DWARF one, reads its records in C all the same.  Whether it does."""
    if why_not(stream.pf, stream, module) is not None:
        return False
    stream.records = RecordDelivery(module, None, stream)
    return True


class RecordDelivery:
    """The records of a stream in delivery order, the core taking the
    samples it makes (the stream's `records`; core None: every sample
    delivered as a Record); sets the stream's ordinal before each record to
    the SAMPLE records delivered before it.  In a worker of a sharded run
    (stream.shard) only the samples of its blocks go on: the C asks the
    stream's block_taken once a block and drops the others' samples
    without a Python object each."""

    def __init__(self, module: types.ModuleType, core: Any, stream: SessionStream) -> None:
        """core: the SampleText or LeafCounter the samples go to, or None."""
        self.module = module
        self.core = core
        self.stream = stream
        self.pf = stream.pf
        self.walk = WalkState(at=stream.pf.data_range[0])

    def __iter__(self) -> Iterator[Record | list[Any]]:
        pf, stream, module = self.pf, self.stream, self.module
        deliver = bytearray(module.NTYPES)
        for rtype in _READ | stream.side_events:
            if rtype < module.NTYPES:
                deliver[rtype] = 1
        with open(pf.path, "rb", buffering=0) as f:
            walk = module.RecordWalk(self.core, functools.partial(Record, pf.ctx), f.fileno(),
                                     bytes(deliver))
            self._set_rules(walk)
            if stream.shard is not None:
                assert stream.block_taken is not None   # (set as the stream's walk begins)
                walk.set_shard(stream.shard[0], stream.block_taken)
            if stream.after_apply is None:
                # (the side records the stream only applies: applied by the C)
                walk.set_apply(stream.machine.apply, by_fields(
                    stream.machine, side_layouts(pf.little, _APPLIED - stream.side_events)))
            step = walk.next
            while True:
                item = step()
                if item is None:
                    break
                if type(item) is int:       # (HANDBACK: the Python walker's record)
                    yield from self._python_stretch(walk)
                    continue
                stream.ordinal = walk.seen
                yield item
        stream.ordinal = walk.ordinal
        if walk.out_of_order:
            # (PerfFile.records' sentence)
            warning = "%d out of order events recorded." % walk.out_of_order
            if warning not in pf.warnings:
                pf.warnings.append(warning)

    def _set_rules(self, walk: Any) -> None:
        """The C frames on from self.walk.at, with the rules of the events
        as they are now and the Python walker's state there."""
        pf, module, state = self.pf, self.module, self.walk
        ctx = pf.ctx
        ctx.refresh_id_positions()
        attrs = tuple(pf.attrs)
        ids, id_attrs = _id_tables(pf)
        walk.set_rules(state.at, walk_params(pf, state, module.PARAM_NAMES),
                       walk_tables(ctx.trailer_size(), module.NTYPES, frozenset()),
                       ids, id_attrs, attrs,
                       array("q", [-1 if ea.sample_time_offset is None else ea.sample_time_offset
                                   for ea in attrs]),
                       array("q", [-1 if ea.trailer_time_from_end is None
                                   else ea.trailer_time_from_end for ea in attrs]),
                       0 if state.prev is None else state.prev + 1, state.nsamples,
                       state.max_sample)

    def _python_stretch(self, walk: Any) -> Iterator[Record | list[Any]]:
        """The Python walker from where the C stopped framing, up to the
        record boundary it pauses at (or the end): its records ordered and
        delivered by the C as they come."""
        pf, stream, state = self.pf, self.stream, self.walk
        end = pf.data_range[1]
        assert end is not None
        at, prev, state.nsamples, state.max_sample = walk.state()
        state.at, state.prev = at, prev - 1 if prev else None
        state.pause = _why_not_events(pf) is None
        deliver = walk.deliver
        for rec in pf.walk_range(state.at, end, resume=state):
            if rec.type in _LEFT_OUT:
                continue
            walk.push(rec)
            item = deliver()
            while item is not None:
                stream.ordinal = walk.seen
                yield item
                item = deliver()
        if state.paused and state.at < end:
            self._set_rules(walk)
        else:
            walk.finish()
