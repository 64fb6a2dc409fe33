"""`perfdata export FILE --format parquet -o DIR`: the samples as a Parquet
dataset, DIR/samples.parquet and DIR/stacks.parquet (the tables and their
columns: perfdata/arrow.py), written batch by batch with pyarrow (one row
group per batch), so memory stays bounded on a file of any size.  pandas,
Polars, DuckDB and Spark read them with no perfdata installed.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable

from .errors import CommandError

if TYPE_CHECKING:
    from ..resolve.symbolized import SymbolizedSample

TABLES = ("samples", "stacks")


class ExportError(CommandError):
    """The dataset cannot be written (no pyarrow, no -o, an unwritable DIR)."""


def require_pyarrow() -> None:
    try:
        import pyarrow            # noqa: F401
        import pyarrow.parquet    # noqa: F401
    except ImportError:
        from ..extras import install_hint
        raise ExportError("parquet output needs pyarrow (%s)" % install_hint("fleet"))


def output_dir(path: str | None) -> str:
    """DIR, created when absent; an existing DIR must not hold a dataset
    already (it would be half replaced on an error)."""
    if not path or path == "-":
        raise ExportError("parquet output is a directory: give -o DIR")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise ExportError("%s: %s" % (path, exc.strerror or exc))
    return path


def write_dataset(samples: Iterable[SymbolizedSample], directory: str,
                  batch_size: int | None = None) -> dict[str, int]:
    """Write the SymbolizedSamples of `samples` as DIR/samples.parquet and
    DIR/stacks.parquet; {table: rows written}."""
    import pyarrow.parquet as pq
    from ..arrow import BATCH_ROWS, record_batches, schemas
    sample_schema, stack_schema = schemas()
    paths = {name: os.path.join(directory, name + ".parquet") for name in TABLES}
    writers = {}
    rows = {name: 0 for name in TABLES}
    try:
        for name, schema in zip(TABLES, (sample_schema, stack_schema)):
            try:
                writers[name] = pq.ParquetWriter(paths[name] + ".tmp", schema,
                                                 compression="zstd")
            except OSError as exc:
                raise ExportError("%s: %s" % (paths[name], exc))
        for name, batch in record_batches(samples, batch_size or BATCH_ROWS):
            writers[name].write_batch(batch)
            rows[name] += batch.num_rows
    finally:
        for w in writers.values():
            w.close()
    for name in TABLES:
        os.replace(paths[name] + ".tmp", paths[name])
    return rows
