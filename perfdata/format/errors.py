"""Errors of the perf.data reader.

Truncated and invalid input are different things: a cut tail is what a killed
`perf record` leaves and ends the stream with a warning; a corrupt record is an
error at its offset.  Both carry the file name and the byte offset.  A
`WalkLog` keeps what walks skipped with recovery on.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # What names an input in messages: its path, or a stream's name (an int
    # for a file object made from a file descriptor, as os.fdopen makes).
    InputName = str | int


class PerfDataError(Exception):
    """Base of everything the reader raises on bad input."""

    def __init__(self, message: str, path: InputName | None = None,
                 offset: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.offset = offset

    def describe(self) -> str:
        parts = []
        if self.path is not None:
            parts.append(str(self.path))
        if self.offset is not None:
            parts.append("offset %#x" % self.offset)
        parts.append(self.message)
        return ": ".join(parts)

    def __str__(self) -> str:
        return self.describe()


class NotPerfDataError(PerfDataError):
    """The input is not a perf.data file at all (bad magic, no header)."""


class TruncatedError(PerfDataError):
    """The input ends in the middle of a structure."""


class CorruptError(PerfDataError):
    """A structure is present but its contents are impossible."""


class WalkLog:
    """What walks of a recording found wrong and went past: the warnings,
    the skipped stretches and where the input ends inside a record (the
    container shares its lists; each walk is handed this log)."""
    __slots__ = ("warnings", "skipped", "truncated_at")

    def __init__(self) -> None:
        self.warnings: list[str] = []
        # (path, offset, bytes, why) of skipped corrupt data
        self.skipped: list[tuple[InputName | None, int, int, str]] = []
        self.truncated_at: int | None = None

    def note_skipped(self, path: InputName | None, offset: int, count: int, why: str) -> None:
        """A walk skipped `count` corrupt bytes at `offset` of `path`."""
        self.skipped.append((path, offset, count, why))
        self.warnings.append("%s: offset %#x: skipped %d bytes (corrupt record)"
                             % (path, offset, count))
