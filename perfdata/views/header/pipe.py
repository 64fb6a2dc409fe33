"""A pipe's header: its features come as HEADER_FEATURE records in the
stream, which perf prints as it meets them (perf_event__process_feature)."""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Mapping

from ...format import Feature, PerfDataError
from .features import (CONSTANT_LINES, FULL_ONLY, HEADER_LAST_FEATURE, NO_PRINT, FeatureState,
                       error_line, parse_section, safe_lines)

if TYPE_CHECKING:
    from ...format import PerfFile


#: Pipe mode: the HEADER_FEATURE records of a PerfFile, read once (a stream
#: cannot be read twice).
_PIPE_FEATURES: weakref.WeakKeyDictionary[PerfFile, list[tuple[int | None, bytes | str]]]
_PIPE_FEATURES = weakref.WeakKeyDictionary()


def _pipe_feature_records(pf: PerfFile) -> list[tuple[int | None, bytes | str]]:
    """[(fid, bytes) or (None, error message)] in stream order."""
    try:
        return _PIPE_FEATURES[pf]
    except (KeyError, TypeError):
        pass
    from ...format import RecordType
    out: list[tuple[int | None, bytes | str]] = []
    try:
        for rec in pf.records(order="file"):
            if rec.type != RecordType.HEADER_FEATURE:
                continue
            try:
                body = rec.parse()
                out.append((body["feat_id"], bytes(body["data"])))
            except PerfDataError as exc:
                out.append((None, exc.message))
    except PerfDataError:
        pass        # perf prints the features it met before the bad record
    try:
        _PIPE_FEATURES[pf] = out
    except TypeError:
        pass
    return out


def pipe_features(pf: PerfFile, full: bool) -> list[str]:
    """Pipe mode: perf prints each HEADER_FEATURE record as it meets it."""
    printer = PipeFeaturePrinter(pf, full)
    lines = []
    for fid, data in _pipe_feature_records(pf):
        lines += printer.feed(fid, data)
        if printer.stopped:
            break
    return lines + printer.finish()


class PipeFeaturePrinter:
    """The lines perf prints for the HEADER_FEATURE records of a pipe, one
    record at a time (perf_event__process_feature())."""
    record_type: int        # the record type it prints (script.py sets it)

    def __init__(self, pf: PerfFile, full: bool = False) -> None:
        self.state = FeatureState(pf)
        self.full = full
        self.pending = ""       # perf's printf("# %s") without a newline
        self.stopped = False

    def feed(self, fid: int | None, data: bytes | str) -> list[str]:
        """fid None: data is the record's decoding error."""
        if self.stopped:
            return []
        # (data is the error message when fid is None, the section's bytes else)
        if fid is None:
            out = ["# FEATURE: %s" % data]  # type: ignore[str-bytes-safe]
        elif fid == 0 or fid >= HEADER_LAST_FEATURE:
            self.stopped = True     # perf stops at an invalid feature record
            return []
        else:
            out = _pipefeature_lines(Feature(fid), data, self.state,  # type: ignore[arg-type]
                                      self.full)
        if fid in NO_PRINT:
            self.pending += "# %s" % Feature(fid).name
            return []
        if self.pending and out:
            out[0] = self.pending + out[0]
            self.pending = ""
        return out

    def feed_record(self, fields: Mapping[str, Any]) -> str:
        """A parsed HEADER_FEATURE record's lines, as text."""
        lines = self.feed(fields["feat_id"], bytes(fields["data"]))
        return "".join(line + "\n" for line in lines)

    def finish(self) -> list[str]:
        pending, self.pending = self.pending, ""
        return [pending] if pending else []


def _pipefeature_lines(fid: Feature, data: bytes, state: FeatureState, full: bool) -> list[str]:
    if fid in FULL_ONLY and not full:
        try:
            parse_section(state.pf, fid, data, state)
        except PerfDataError:
            pass
        return ["# %s info available, use -I to display" % fid.name]
    if fid in NO_PRINT:
        return []
    if fid in CONSTANT_LINES:
        return [CONSTANT_LINES[fid]]
    try:
        value = parse_section(state.pf, fid, data, state)
    except PerfDataError as exc:
        return [error_line(fid, exc)]
    return safe_lines(fid, value, state, full)
