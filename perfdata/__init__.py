"""perfdata: read Linux perf.data files, their samples symbolized.

The face: a profile read with the commands' options, names and defaults.

    import perfdata
    prof = perfdata.profile("perf.data", debug_dirs=["debug"])
    for row in prof.report()[:5]:         # perfdata report's table, as rows
        print("%6.2f%%  %s  %s" % (row.overhead, row.shared_object, row.symbol))
    for sample in prof:                   # frozen Samples, frames leaf first
        print(sample.comm, sample.time, [f.function for f in sample.frames])
    prof.folded()                         # perfdata collapse: {stack: count}
    prof.flamegraph()                     # perfdata flamegraph's tree; .svg()
    prof.to_arrow()                       # pyarrow Tables (samples, stacks)

The lower layers stay public: perfdata.open() (records, decoded on
demand), perfdata.session (threads and maps), perfdata.resolve (the
symbolized samples), the `symbolize` package (binaries by build-id).

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
from .faces import import_at_first_use

if TYPE_CHECKING:
    import os

    from .arrow import ArrowTables
    from .format import PerfFile, Record
    from .library.annotations import AnnotatedInstruction, AnnotatedLine, Annotation
    from .library.profile import Profile, profile
    from .library.samples import Frame, Sample
    from .library.tables import DiffRow, DiffTable, FlameGraph, FlameNode, ReportRow, ReportTable
    from .resolve.pipeline import ResolveOptions

__all__ = ["profile", "Profile", "ResolveOptions", "Sample", "Frame", "ReportTable", "ReportRow",
           "DiffTable", "DiffRow", "FlameGraph", "FlameNode", "Annotation",
           "AnnotatedInstruction", "AnnotatedLine", "open", "to_arrow", "Feature",
           "RecordType", "SampleType", "PerfFile", "Record", "PerfDataError", "CorruptError",
           "NotPerfDataError", "TruncatedError", "__version__"]


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
# The library's face (perfdata/library/) is imported at first use too.
_LAZY = {"PerfFile": "format.container", "Record": "format.decoder",
         "profile": "library.profile", "Profile": "library.profile",
         "Sample": "library.samples", "Frame": "library.samples",
         "ReportTable": "library.tables", "ReportRow": "library.tables",
         "DiffTable": "library.tables", "DiffRow": "library.tables",
         "FlameGraph": "library.tables", "FlameNode": "library.tables",
         "Annotation": "library.annotations",
         "AnnotatedInstruction": "library.annotations",
         "AnnotatedLine": "library.annotations",
         "ResolveOptions": "resolve.pipeline"}


def __getattr__(name: str) -> Any:
    return import_at_first_use(__name__, _LAZY, name)


def to_arrow(path: str | os.PathLike[str], **options: Any) -> ArrowTables:
    """The symbolized samples of a file as two pyarrow Tables, (samples,
    stacks) (needs pyarrow; options: debug_dirs, symfs, archive).  Tables
    and columns, and the record-batch iterator for large files:
    perfdata.arrow."""
    from .arrow import to_arrow as tables
    return tables(path, **options)
