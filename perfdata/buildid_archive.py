"""The archive of a profile's binaries: a .build-id tree in a zstd tar.

`perfdata archive` writes it; `--archive FILE` (any symbolizing command) and
`extract_archive` read it back, refusing any member outside the layout, any
path that climbs out of the directory, and sizes beyond the limits.
"""
from __future__ import annotations

import io
import os
import re
import tarfile
import tempfile
from typing import Sequence

from .format.errors import PerfDataError

MAX_MEMBER = 4 << 30
MAX_TOTAL = 32 << 30
_NAME_OK = re.compile(r"^(\.build-id/[0-9a-f]{2}/[0-9a-f]{6,126}(\.debug)?"
                      r"|\[kernel\.kallsyms\]/[0-9a-f]{8,128}/kallsyms|MANIFEST\.txt)$")


def safe_name(name: str) -> bool:
    """A relative path that stays inside the directory it is unpacked in."""
    if not name or "\0" in name or "\\" in name or name.startswith("/") or len(name) > 4096:
        return False
    parts = name.split("/")
    return all(p not in ("", ".", "..") for p in parts)


class ArchiveError(PerfDataError):
    """An archive that cannot be unpacked (a PerfDataError, so the CLI ends
    with `perfdata: error: ...` and status 2 wherever it is opened)."""


def write_archive(items: Sequence[tuple[str, str, str, str]], out_path: str,
                  level: int = 10) -> None:
    import zstandard
    manifest = "".join("%s %s %s\n" % (arc, kind, orig) for arc, _, kind, orig in items)
    tmp = out_path + ".tmp"
    cctx = zstandard.ZstdCompressor(level=level)
    with open(tmp, "wb") as raw, cctx.stream_writer(raw, closefd=False) as zout, \
            tarfile.open(fileobj=zout, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        data = manifest.encode()
        ti = tarfile.TarInfo("MANIFEST.txt")
        ti.size = len(data)
        ti.mode = 0o644
        tar.addfile(ti, io.BytesIO(data))
        for arc, path, _, _ in items:
            with open(path, "rb") as f:
                ti = tarfile.TarInfo(arc)
                ti.size = os.fstat(f.fileno()).st_size
                ti.mode = 0o644
                ti.mtime = int(os.fstat(f.fileno()).st_mtime)
                tar.addfile(ti, f)
    os.replace(tmp, out_path)


def extract_archive(archive: str, dest: str) -> str:
    """Unpack an archive made by write_archive into dest (created); returns
    dest.  Raises ArchiveError on anything outside the layout."""
    import zstandard
    os.makedirs(dest, exist_ok=True)
    total = 0
    try:
        with open(archive, "rb") as raw, \
                zstandard.ZstdDecompressor().stream_reader(raw) as zin, \
                tarfile.open(fileobj=zin, mode="r|") as tar:
            for ti in tar:
                name = ti.name
                if not ti.isreg() or not (_NAME_OK.match(name) or safe_name(name)):
                    raise ArchiveError("%s: member %r is not part of the archive layout"
                                       % (archive, name))
                if ti.size > MAX_MEMBER or total + ti.size > MAX_TOTAL:
                    raise ArchiveError("%s: member %r is too large" % (archive, name))
                total += ti.size
                target = os.path.join(dest, name)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                src = tar.extractfile(ti)
                fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".part")
                with os.fdopen(fd, "wb") as out:
                    left = ti.size
                    while left:
                        # (a regular member: extractfile gives its file)
                        chunk = src.read(min(left, 1 << 20))  # type: ignore[union-attr]
                        if not chunk:
                            raise ArchiveError("%s: %r is cut short" % (archive, name))
                        out.write(chunk)
                        left -= len(chunk)
                os.replace(tmp, target)
    except (tarfile.TarError, zstandard.ZstdError, EOFError) as exc:
        raise ArchiveError("%s: not a readable .tar.zst: %s" % (archive, exc))
    except OSError as exc:
        raise ArchiveError("%s: %s" % (archive, exc))
    return dest


def archived_vdso(directory: str) -> str | None:
    """The vdso image an unpacked archive holds (MANIFEST.txt's one member
    of kind vdso), or None: the recording machine's, which stands in for a
    profile that names no build-id for its vdso (`perfdata archive` took it
    there only where that machine ran the recorded kernel)."""
    try:
        with open(os.path.join(directory, "MANIFEST.txt"), encoding="utf-8",
                  errors="replace") as f:
            found = [line.split(" ", 2)[0] for line in f
                     if line.split(" ", 2)[1:2] == ["vdso"]]
    except OSError:
        return None
    if len(found) != 1 or not safe_name(found[0]):
        return None
    path = os.path.join(directory, found[0])
    return path if os.path.isfile(path) else None


def open_archive(archive: str) -> str:
    """Unpack into a new temporary directory (removed at exit); for an
    `--archive FILE` option: pass the result as a debug dir."""
    import atexit
    import shutil
    dest = tempfile.mkdtemp(prefix="perfdata-archive-")
    atexit.register(shutil.rmtree, dest, True)
    return extract_archive(archive, dest)
