"""A progress bar on standard error for the long commands, stdlib only.

It shows how far into the file the reader is (bytes of records read / file
size) and how many samples went by, redrawn at most ten times a second, and
only when standard error is a terminal: in a pipe, a log or a test it prints
nothing at all.  Wrap an iterator of symbolized samples:

    for sample in sample_progress(samples, pf, "collapse"):
        ...
"""
from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Iterable, Iterator, Literal, TextIO

if TYPE_CHECKING:
    from typing import TypeVar

    from ..format import PerfFile

    # (a sample; or a side event: they go by too, as they are)
    T = TypeVar("T")

_REDRAW_SECONDS = 0.1


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False


def _mib(n: float) -> str:
    return "%.1f" % (n / 1048576.0)


class Progress:
    """A one-line bar: `label  42% [#####.....] 12.3/40.0 MiB  1234 samples`."""

    def __init__(self, total: int | None, label: str = "", stream: TextIO | None = None,
                 enabled: bool | None = None, unit: str = "samples") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self.total = total if total and total > 0 else None
        self.label = label
        self.unit = unit
        self.position = 0
        self.count = 0
        self._last = 0.0
        self._drawn = False

    def update(self, position: int | None = None, count: int = 1) -> None:
        self.count += count
        if position is not None and position > self.position:
            self.position = position
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last >= _REDRAW_SECONDS:
            self._last = now
            self._draw()

    def _draw(self) -> None:
        width = 30
        if self.total:
            frac = min(1.0, self.position / self.total)
            filled = int(frac * width)
            bar = "%3d%% [%s%s] %s/%s MiB" % (frac * 100, "#" * filled, "." * (width - filled),
                                              _mib(self.position), _mib(self.total))
        else:
            bar = "%s MiB" % _mib(self.position)
        text = "%s %s  %d %s" % (self.label, bar, self.count, self.unit)
        try:
            self.stream.write("\r" + text + "\x1b[K")
            self.stream.flush()
            self._drawn = True
        except (OSError, ValueError):
            self.enabled = False

    def close(self) -> None:
        if self.enabled and self._drawn:
            try:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            except (OSError, ValueError):
                pass
        self._drawn = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False


def input_size(pf: PerfFile) -> int | None:
    """Bytes of input to read: the file, or all the data files of a
    `perf record --threads` directory; None for a pipe."""
    if getattr(pf, "is_directory", False):
        total = 0
        for path in pf.input_paths:
            try:
                total += os.path.getsize(path)
            except OSError:
                pass
        return total or None
    return getattr(pf, "size", None)


def sample_progress(samples: Iterable[T], pf: PerfFile, label: str = "",
                    stream: TextIO | None = None,
                    enabled: bool | None = None) -> Iterator[T]:
    """The samples of `samples`, drawing the bar as they go by (without a
    bar, `samples` itself: no layer between the samples and the view)."""
    bar = Progress(input_size(pf), label, stream=stream, enabled=enabled)
    if not bar.enabled:
        return iter(samples)
    return _with_bar(samples, pf, bar)


def _with_bar(samples: Iterable[T], pf: PerfFile, bar: Progress) -> Iterator[T]:
    directory = getattr(pf, "is_directory", False)
    done_files: dict[int, int] = {}
    try:
        for sample in samples:
            rec = getattr(sample, "record", None)
            pos = None
            if rec is not None:
                pos = getattr(rec, "offset", None)
                if directory and pos is not None:
                    # Records of several data files: count each file's furthest offset.
                    index = getattr(rec, "file", 0)
                    if pos > done_files.get(index, 0):
                        done_files[index] = pos
                    pos = sum(done_files.values())
            bar.update(pos)
            yield sample
    finally:
        bar.close()
