"""Where the installed perf keeps its scripts: the folder perf exports as
PERF_EXEC_PATH to the scripts it runs, which append
`scripts/python/Perf-Trace-Util/lib/Perf/Trace` to sys.path for the Core,
Util and EventClass helpers.

Those helpers are perf's (GPL-2.0) and not shipped with perfdata: a script
that imports them runs where linux-perf (Debian, Ubuntu: linux-tools) is
installed, or where PERF_EXEC_PATH names a copy.
"""
from __future__ import annotations

import glob
import os

# Below an exec folder: where perf's Python helpers are.
HELPERS_DIR = os.path.join("scripts", "python", "Perf-Trace-Util", "lib", "Perf", "Trace")

# Exec folders of packaged perfs: Debian's linux-perf (/usr/lib/perf-core),
# perf's own `make install` (libexec), Ubuntu's linux-tools.
_CANDIDATES = ("/usr/lib/perf-core", "/usr/libexec/perf-core", "/usr/local/libexec/perf-core",
               "/usr/lib/linux-tools/*/perf-core", "/usr/lib/linux-tools-*/perf-core")


def has_helpers(exec_path: str) -> bool:
    return os.path.isfile(os.path.join(exec_path, HELPERS_DIR, "Core.py"))


def find_exec_path() -> str | None:
    """PERF_EXEC_PATH when it holds the helpers, else the first packaged
    perf's exec folder that does; None when no perf's scripts are here."""
    given = os.environ.get("PERF_EXEC_PATH")
    if given and has_helpers(given):
        return given
    for pattern in _CANDIDATES:
        for path in sorted(glob.glob(pattern)):
            if has_helpers(path):
                return path
    return None


def helpers_dir(exec_path: str) -> str:
    return os.path.join(exec_path, HELPERS_DIR)
