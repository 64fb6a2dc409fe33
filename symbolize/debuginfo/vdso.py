"""This machine's own vdso image, for profiles that carry no copy of theirs.

perf records the vdso's build-id and, with the build-id cache on, a copy of
the image.  When neither is at hand, perf falls back to its own running vdso;
so does this module: it copies the [vdso] mapping of the current process into
a cache file once and reports its build-id, so the caller can check that it
is the image the profile saw (same build-id) or say that it assumed so.
"""
from __future__ import annotations

import functools
import os
import tempfile
from typing import TYPE_CHECKING

from ..cachedir import DEFAULT, CacheDir
from ..elffile import Binary

if TYPE_CHECKING:
    from ..cachedir import CacheWhere

MAX_VDSO = 1 << 20


def running_vdso(cache: CacheWhere = DEFAULT) -> tuple[str, str] | None:
    """(path of a file holding this process's vdso, its build-id) or None.
    The image is kept in `cache` (a CacheDir or a directory's path; by
    default perfdata's cache directory) as vdso-BUILDID.so.  The symbolizer
    needs a file to open: without a cache (None, or a disabled or unwritable
    one) the image is written to the temporary directory instead, afresh
    each time and never read back as a cache."""
    return _running_vdso(CacheDir.of(cache))


@functools.lru_cache(maxsize=1)
def _running_vdso(cache: CacheDir) -> tuple[str, str] | None:
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                if line.rstrip().endswith("[vdso]"):
                    lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                    break
            else:
                return None
        if not 0 < hi - lo <= MAX_VDSO:
            return None
        with open("/proc/self/mem", "rb", buffering=0) as mem:
            mem.seek(lo)
            image = mem.read(hi - lo)
    except (OSError, ValueError, OverflowError):
        return None
    binary = Binary("[vdso]", data=image)
    build_id = binary.build_id if binary.ok else None
    binary.close()
    if not build_id:
        return None
    name = "vdso-%s.so" % build_id
    kept = cache.file(name)
    # An intact copy from an earlier run is used as is (no write: a run that
    # writes nothing never has to apply the cache's bound); a damaged one is
    # replaced.
    if cache.read(kept, MAX_VDSO) == image or cache.write(kept, image):
        return kept, build_id  # type: ignore[return-value]  # (kept: a path)
    from ..cachedir import write_atomic
    scratch = os.path.join(tempfile.gettempdir(), name)
    return (scratch, build_id) if write_atomic(scratch, image) else None
