"""The files a fleet command reads: paths, globs and directories.

A directory stands for the perf.data files under it (recursively): names
`perf.data*` or `*.data`, and `perf record --threads` directories (a
directory holding `data`) as one file; `perfdata archive` outputs
(`*.tar.zst`) are never inputs.  A glob (`hosts/*/perf.data`, `**` too)
expands to what it matches.  Paths are made absolute: the workers of a
remote cluster must see the same file system (or the same mount points).
"""
from __future__ import annotations

import fnmatch
import glob
import os
from typing import Iterable, Iterator

from . import FleetError

ARCHIVE_SUFFIX = ".tar.zst"


def is_threads_dir(path: str) -> bool:
    """A `perf record --threads` directory (perf's layout: data, data.N)."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, "data"))


def _looks_like_profile(name: str) -> bool:
    if name.endswith(ARCHIVE_SUFFIX):
        return False
    return name.startswith("perf.data") or fnmatch.fnmatch(name, "*.data")


def _walk(directory: str) -> Iterator[str]:
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        keep = []
        for d in dirs:
            full = os.path.join(root, d)
            if is_threads_dir(full):
                yield full
            else:
                keep.append(d)
        dirs[:] = keep
        for name in sorted(files):
            if _looks_like_profile(name):
                yield os.path.join(root, name)


def expand_paths(items: Iterable[str]) -> list[str]:
    """The absolute paths of the profiles `items` name, in order, each once."""
    out = []
    for item in items:
        if os.path.isdir(item) and not is_threads_dir(item):
            found = list(_walk(item))
            if not found:
                raise FleetError("%s: no perf.data files in this directory" % item)
            out.extend(found)
        elif os.path.exists(item):
            out.append(item)
        elif glob.has_magic(item):
            found = []
            for match in sorted(glob.glob(item, recursive=True)):
                if os.path.isdir(match) and not is_threads_dir(match):
                    found.extend(_walk(match))
                elif not match.endswith(ARCHIVE_SUFFIX):
                    found.append(match)
            if not found:
                raise FleetError("%s: no file matches" % item)
            out.extend(found)
        else:
            raise FleetError("%s: no such file or directory" % item)
    seen = set()
    unique = []
    for path in out:
        path = os.path.abspath(path)
        if path not in seen:
            seen.add(path)
            unique.append(path)
    return unique


def archive_beside(path: str) -> str | None:
    """FILE.tar.zst next to FILE (made by `perfdata archive`), or None."""
    candidate = path.rstrip("/") + ARCHIVE_SUFFIX
    return candidate if os.path.isfile(candidate) else None
