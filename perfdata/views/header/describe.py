"""The header's text as `perf report --header-only` prints it: the file's
own lines, then each feature's (features.py), or a pipe's start before its
HEADER_FEATURE records (pipe.py)."""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from ...format import Feature, PerfDataError, feature_bits
from .event_desc import U64
from .features import (CONSTANT_LINES, FULL_ONLY, HEADER_LAST_FEATURE, NO_PRINT, FeatureState,
                       error_line, noted, safe_lines)
from .pipe import pipe_features

if TYPE_CHECKING:
    from ...format import PerfFile


def _captured_on(pf: PerfFile) -> str:
    try:
        mtime = os.stat(pf.path).st_mtime      # a directory's `data` file
    except (OSError, TypeError):
        mtime = time.time()
    return "# captured on    : %s" % time.ctime(mtime)


_PIPE_HEAD = ["# data offset    : 0", "# data size      : 0", "# feat offset    : 0",
              "# ========", "#"]


def describe_pipe_header_start(pf: PerfFile) -> str:
    """Pipe mode: what perf prints of the header before it reads the stream
    (perf script --header then prints each HEADER_FEATURE record as it meets
    it: PipeFeaturePrinter)."""
    lines = ["# ========", _captured_on(pf),
             "# header version : %d" % (getattr(pf, "header_version", 2) - 1)] + _PIPE_HEAD
    return "\n".join(lines) + "\n"


def describe_header(pf: PerfFile, full: bool = False) -> str:
    """The text `perf report --header-only` prints for `pf` (`-I` with full),
    ending with a newline."""
    lines = ["# ========", _captured_on(pf),
             "# header version : %d" % (getattr(pf, "header_version", 2) - 1)]
    if pf.is_pipe:
        lines += _PIPE_HEAD
        lines += pipe_features(pf, full)
        return "\n".join(lines) + "\n"
    hdr = pf.header
    data_offset, data_size = hdr["data"]["offset"], hdr["data"]["size"]
    lines += ["# data offset    : %d" % data_offset, "# data size      : %d" % data_size,
              "# feat offset    : %d" % ((data_offset + data_size) & U64)]
    bits = set(feature_bits(hdr["adds_features"], pf.little))
    state = FeatureState(pf)
    values = {}
    # perf processes every section before printing any: parse them all first,
    # in bit order, so NRCPUS and BPF_BTF are known to those that use them.
    for fid in sorted(bits):
        if fid >= HEADER_LAST_FEATURE or fid == 0:
            continue
        fid = Feature(fid)
        if fid in NO_PRINT:
            continue
        if not pf.has_feature(fid) and data_size == 0:
            # perf record did not finish: no feature section table was written.
            continue
        try:
            # (parsed by the file, as every other reader gets it)
            value = pf.feature(fid)
            if value is None:
                raise PerfDataError("section outside the file")
            values[fid] = noted(fid, value, pf.feature_size(fid) or 0, state)
        except PerfDataError as exc:
            values[fid] = exc
    for fid in sorted(values):
        value = values[fid]
        if fid in FULL_ONLY and not full:
            lines.append("# %s info available, use -I to display" % fid.name)
        elif fid in CONSTANT_LINES:
            lines.append(CONSTANT_LINES[fid])
        elif isinstance(value, PerfDataError):
            lines.append(error_line(fid, value))
        else:
            lines += safe_lines(fid, value, state, full)
    missing = [Feature(b).name for b in range(1, HEADER_LAST_FEATURE) if b not in bits]
    lines.append("# missing features: " + "".join(name + " " for name in missing))
    lines += ["# ========", "#"]
    return "\n".join(lines) + "\n"
