"""`Profile.annotate()`'s data: `perfdata annotate`'s functions, each with
the samples and period of every instruction and of every source line, as
frozen data."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..views.annotate import Annotation as ViewAnnotation


@dataclass(frozen=True, slots=True)
class AnnotatedInstruction:
    """One instruction: its address (the binary's own, as objdump's), its
    text (capstone's), the samples whose ip it is and their period, its
    share in the annotation's percent type, its source line or None."""
    address: int
    text: str
    samples: int
    period: int
    percent: float
    srcline: str | None


@dataclass(frozen=True, slots=True)
class AnnotatedLine:
    """One source line ('path:line') of a function: the samples and period
    of its instructions, and their share summed."""
    srcline: str
    samples: int
    period: int
    percent: float


@dataclass(frozen=True, slots=True)
class Annotation:
    """One function annotated, as `perfdata annotate` prints it:
    instructions in address order; lines hottest first (every line with an
    instruction, not only perf's -l summary, which is `summary`: perf's
    hot lines, (percent, 'file:line')); problem: why there are no
    instructions (the binary not found), or None."""
    event: str
    function: str
    dso: str
    build_id: str | None
    start: int
    samples: int
    period: int
    percent_type: str
    instructions: tuple[AnnotatedInstruction, ...]
    lines: tuple[AnnotatedLine, ...]
    summary: tuple[tuple[float, str], ...]
    problem: str | None


def annotation(a: ViewAnnotation) -> Annotation:
    """The view's annotation as the library's."""
    fs = a.function
    instructions = tuple(AnnotatedInstruction(i.address, i.text, i.hits, i.period, i.percent,
                                              i.srcline) for i in a.instructions)
    by_line: dict[str, list[float]] = {}
    for i in a.instructions:
        if i.srcline:
            got = by_line.setdefault(i.srcline, [0, 0, 0.0])
            got[0] += i.hits
            got[1] += i.period
            got[2] += i.percent
    lines = tuple(sorted((AnnotatedLine(s, int(n), int(p), pct)
                          for s, (n, p, pct) in by_line.items()),
                         key=lambda line: (-line.percent, line.srcline)))
    return Annotation(fs.event, fs.name, fs.dso, fs.build_id, fs.start, fs.total_hits,
                      fs.total_period, a.percent_type, instructions, lines,
                      tuple(a.line_summary()), a.problem)
