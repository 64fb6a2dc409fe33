"""perfdata: read Linux perf.data files.

    import perfdata
    with perfdata.open("perf.data") as pf:
        for rec in pf.records():          # time order, as perf delivers them
            if rec.name == "SAMPLE":
                print(rec.parse()["ip"])
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, BinaryIO

# (pyproject.toml's version: setuptools reads this line)
__version__ = "0.1.0"

from .format import Feature, RecordType, SampleType
from .format import CorruptError, NotPerfDataError, PerfDataError, TruncatedError

if TYPE_CHECKING:
    import os

    from .arrow import ArrowTables
    from .format import PerfFile, Record

__all__ = ["open", "to_arrow", "Feature", "RecordType", "SampleType", "PerfFile", "Record", "PerfDataError", "CorruptError",
           "NotPerfDataError", "TruncatedError"]


def open(path: str | os.PathLike[str] | BinaryIO, **options: Any) -> PerfFile:
    """Open a perf.data file, a `perf record --threads` directory, a binary
    stream, or '-' for standard input (pipe mode)."""
    from .format import PerfFile
    return PerfFile(path, **options)


# The names whose modules import construct, imported at their first use:
# the command line (perfdata.cli) must put its stand-ins for the standard
# modules construct imports and never uses (perfdata.cli.UNUSED_MODULES) in
# place before construct is imported, and `perfdata.cli` is imported after
# this package.  A program that imports perfdata gets the same names.
_LAZY = {"PerfFile": ".format.container", "Record": ".format.decoder"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError("module 'perfdata' has no attribute %r" % name)
    import importlib
    value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    globals()[name] = value
    return value


def to_arrow(path: str | os.PathLike[str], **options: Any) -> ArrowTables:
    """The symbolized samples of a file as two pyarrow Tables, (samples,
    stacks) (needs pyarrow; options: debug_dirs, symfs, archive).  Tables
    and columns, and the record-batch iterator for large files:
    perfdata.arrow."""
    from .arrow import to_arrow as tables
    return tables(path, **options)
