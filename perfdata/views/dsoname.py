"""A dso's short name, as perf prints it in its tables and in a missing
source line (tools/perf/util/dsos.c dso__set_basename)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..resolve.frames import StackFrame

_MODULE_EXT = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")
# perf's sscanf(name, "/tmp/perf-%d.map", &tid) == 1: the number is enough
_PERF_MAP = re.compile(r"/tmp/perf-\s*([+-]?[0-9]+)")


def dso_short_name(frame: StackFrame) -> str:
    """perf's dso short name: the file name, `[name]` for a kernel module,
    `[JIT] tid PID` for a JIT's /tmp/perf-PID.map (dso__set_basename)."""
    dso = frame.dso or "[unknown]"
    if dso.startswith("["):
        return dso
    jit = _PERF_MAP.match(dso)
    if jit is not None:
        return "[JIT] tid %d" % int(jit.group(1))
    base = dso.rsplit("/", 1)[-1]
    if frame.kernel and base.endswith(_MODULE_EXT):
        for ext in _MODULE_EXT[::-1]:
            if base.endswith(ext):
                base = base[:-len(ext)]
                break
        return "[%s]" % base.replace("-", "_")
    return base
