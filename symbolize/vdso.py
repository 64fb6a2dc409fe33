"""This machine's own vdso image, for profiles that carry no copy of theirs.

perf records the vdso's build-id and, with the build-id cache on, a copy of
the image.  When neither is at hand, perf falls back to its own running vdso;
so does this module: it copies the [vdso] mapping of the current process into
a cache file once and reports its build-id, so the caller can check that it
is the image the profile saw (same build-id) or say that it assumed so.
"""
import functools
import os
import tempfile

from .cachedir import perfdata_cache_dir
from .elffile import Binary

MAX_VDSO = 1 << 20


@functools.lru_cache(maxsize=1)
def running_vdso(cache_dir=""):
    """(path of a file holding this process's vdso, its build-id) or None.
    The image is written to cache_dir (by default perfdata's cache
    directory; None: the temporary directory only)."""
    if cache_dir == "":
        cache_dir = perfdata_cache_dir()
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
    for directory in (cache_dir or tempfile.gettempdir(), tempfile.gettempdir()):
        try:
            os.makedirs(directory, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".vdso-", dir=directory)
            with os.fdopen(fd, "wb") as out:
                out.write(image)
            binary = Binary(tmp)
            build_id = binary.build_id if binary.ok else None
            binary.close()
            if not build_id:
                os.unlink(tmp)
                return None
            final = os.path.join(directory, "vdso-%s.so" % build_id)
            os.replace(tmp, final)
            return final, build_id
        except OSError:
            continue
    return None
