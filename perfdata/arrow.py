"""Symbolized samples as Apache Arrow record batches (needs pyarrow, of the
`fleet` extra: `pip install 'perfdata[fleet]'`): the tables of `perfdata export --format
parquet`.

Two tables, joined on `stack_id`:

samples, one row per sample (every event, in perf's time order):
    time      uint64   the sample's time, ns (perf's clock; 0 without PERF_SAMPLE_TIME)
    pid, tid  int32
    cpu       int32    null when the sample does not carry its cpu
    comm      string   the thread's name when the sample was taken
    event     string   the event's name, as perf prints it (cpu-clock:u)
    period    uint64   the sample's period (the attr's sample_period without PERIOD)
    weight    uint64   PERF_SAMPLE_WEIGHT(_STRUCT), null when not recorded
    stack_id  uint32   the sample's stack in `stacks`

stacks, one row per frame of each distinct stack:
    stack_id     uint32
    depth        uint16   0 is the leaf (the sample's own ip), callers after it
    symbol       string   the function (demangled), null when unknown
    dso          string   the binary as perf names it ([kernel.kallsyms], [vdso], path)
    address      uint64   the frame's address in the process
    dso_address  uint64   the address perf prints (relative to the dso for user maps)
    inlined      bool     a function inlined at this address (its caller follows)
    kernel       bool
    build_id     string   the dso's build-id (hex), null when unknown

A stack with no frame has no row.  Batches are bounded (`batch_size` rows),
so a file of any size is converted in bounded memory; only the distinct
stacks seen are remembered.
"""
from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

if TYPE_CHECKING:
    import os

    import pyarrow as pa

    from .format import PerfFile
    from .resolve.frames import StackFrame
    from .resolve.symbolized import SampleSymbolizer, SymbolizedSample

BATCH_ROWS = 65536

ArrowTables = collections.namedtuple("ArrowTables", "samples stacks")

SAMPLE_COLUMNS = ("time", "pid", "tid", "cpu", "comm", "event", "period", "weight", "stack_id")
STACK_COLUMNS = ("stack_id", "depth", "symbol", "dso", "address", "dso_address", "inlined",
                 "kernel", "build_id")


def require_pyarrow() -> None:
    """An ImportError that names the pip command of the extra bringing
    pyarrow (for how perfdata is installed) when pyarrow is missing."""
    try:
        import pyarrow  # noqa: F401
    except ImportError as exc:
        from .extras import install_hint
        raise ImportError("perfdata's Arrow tables need pyarrow (%s)"
                          % install_hint("fleet")) from exc


def schemas() -> tuple[pa.Schema, pa.Schema]:
    """(samples schema, stacks schema) as pyarrow Schemas."""
    require_pyarrow()
    import pyarrow as pa
    samples = pa.schema([
        ("time", pa.uint64()), ("pid", pa.int32()), ("tid", pa.int32()), ("cpu", pa.int32()),
        ("comm", pa.string()), ("event", pa.string()), ("period", pa.uint64()),
        ("weight", pa.uint64()), ("stack_id", pa.uint32()),
    ], metadata={"perfdata.table": "samples",
                 "perfdata.doc": "one row per sample; stack_id joins stacks.stack_id"})
    stacks = pa.schema([
        ("stack_id", pa.uint32()), ("depth", pa.uint16()), ("symbol", pa.string()),
        ("dso", pa.string()), ("address", pa.uint64()), ("dso_address", pa.uint64()),
        ("inlined", pa.bool_()), ("kernel", pa.bool_()), ("build_id", pa.string()),
    ], metadata={"perfdata.table": "stacks",
                 "perfdata.doc": "one row per frame, depth 0 = leaf (the sample's ip)"})
    return samples, stacks


def _weight(fields: dict[str, Any], sample_type: int) -> int | None:
    w = fields.get("weight")
    if w is None:
        return None
    if isinstance(w, dict):
        from .format import weight_and_ins_lat
        return weight_and_ins_lat(fields, sample_type)[0]
    return w


def _u64(value: int | None) -> int | None:
    return None if value is None else value & 0xffffffffffffffff


class _Columns:
    def __init__(self, names: Sequence[str]) -> None:
        self.names = names
        self.data: dict[str, list[Any]] = {n: [] for n in names}
        self.rows = 0

    def batch(self, schema: pa.Schema) -> pa.RecordBatch:
        import pyarrow as pa
        arrays = [pa.array(self.data[n], type=schema.field(n).type) for n in self.names]
        self.data = {n: [] for n in self.names}
        self.rows = 0
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def record_batches(samples: Iterable[SymbolizedSample],
                   batch_size: int = BATCH_ROWS) -> Iterator[tuple[str, pa.RecordBatch]]:
    """("samples" or "stacks", pyarrow.RecordBatch) pairs from an iterable of
    SymbolizedSamples (a SampleSymbolizer), each batch at most batch_size
    rows; a stack's rows come before or with the first samples batch that
    names it."""
    sample_schema, stack_schema = schemas()
    rows = _Columns(SAMPLE_COLUMNS)
    frames_out = _Columns(STACK_COLUMNS)
    s = rows.data
    stack_ids: dict[tuple[Any, ...], int] = {}      # frame key tuple -> id
    # id(frames) -> (frames, stack id): the symbolizer shares lists
    by_list: dict[int, tuple[Sequence[StackFrame], int]] = {}
    sid: int | None
    for sample in samples:
        frames = sample.frames
        hit = by_list.get(id(frames))
        if hit is not None and hit[0] is frames:
            sid = hit[1]
        else:
            key = tuple((f.symbol, f.dso, f.avma, f.address, f.inlined, f.kernel, f.build_id)
                        for f in frames)
            sid = stack_ids.get(key)
            if sid is None:
                sid = stack_ids[key] = len(stack_ids)
                st = frames_out.data
                for depth, f in enumerate(key):
                    st["stack_id"].append(sid)
                    st["depth"].append(depth)
                    st["symbol"].append(f[0])
                    st["dso"].append(f[1])
                    st["address"].append(_u64(f[2]))
                    st["dso_address"].append(_u64(f[3]))
                    st["inlined"].append(bool(f[4]))
                    st["kernel"].append(bool(f[5]))
                    st["build_id"].append(f[6])
                frames_out.rows += len(key)
                if frames_out.rows >= batch_size:
                    yield "stacks", frames_out.batch(stack_schema)
                    st = frames_out.data
            if len(by_list) > 100000:
                by_list.clear()
            by_list[id(frames)] = (frames, sid)
        event = sample.event
        s["time"].append(sample.time or 0)
        s["pid"].append(sample.pid)
        s["tid"].append(sample.tid)
        s["cpu"].append(sample.cpu)
        s["comm"].append(sample.comm)
        s["event"].append(event.name)
        s["period"].append(sample.period or 0)
        s["weight"].append(_weight(sample.fields, event.sample_type))
        s["stack_id"].append(sid)
        rows.rows += 1
        if rows.rows >= batch_size:
            if frames_out.rows:
                yield "stacks", frames_out.batch(stack_schema)
            yield "samples", rows.batch(sample_schema)
            s = rows.data
    if frames_out.rows:
        yield "stacks", frames_out.batch(stack_schema)
    if rows.rows:
        yield "samples", rows.batch(sample_schema)


def open_samples(path: str | os.PathLike[str], debug_dirs: Iterable[str] = (),
                 symfs: str | None = None,
                 archive: str | None = None) -> tuple[PerfFile, SampleSymbolizer]:
    """(PerfFile, SampleSymbolizer) of a file, with the library's defaults:
    the commands' (the symbol cache of `perfdata` commands included), but
    inlined frames shown and source files named by their whole paths."""
    from .format import PerfFile
    from .resolve import ResolveOptions, build_sample_symbolizer
    pf = PerfFile(path)
    return pf, build_sample_symbolizer(pf, ResolveOptions(
        debug_dirs=tuple(debug_dirs), symfs=symfs, archive=archive, inline=True,
        full_source_path=True))


def to_arrow(path: str | os.PathLike[str], debug_dirs: Iterable[str] = (),
             symfs: str | None = None, archive: str | None = None,
             batch_size: int = BATCH_ROWS) -> ArrowTables:
    """ArrowTables(samples, stacks) of a perf.data file (pyarrow Tables; the
    schemas are in this module's docstring).  For a large file iterate
    record_batches() instead."""
    require_pyarrow()
    import pyarrow as pa
    sample_schema, stack_schema = schemas()
    got: dict[str, list[pa.RecordBatch]] = {"samples": [], "stacks": []}
    pf, samples = open_samples(path, debug_dirs, symfs, archive)
    with pf:
        # (made without side events: its items are samples)
        for name, batch in record_batches(samples, batch_size):  # type: ignore[arg-type]
            got[name].append(batch)
    return ArrowTables(pa.Table.from_batches(got["samples"], sample_schema),
                       pa.Table.from_batches(got["stacks"], stack_schema))
