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


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# A file of `perf archive`'s tarball (perf's build-id cache, ~/.debug):
# <path>/<build-id>/elf|debug|vdso, [kernel.kallsyms]/<build-id>/kallsyms
_PERF_MEMBER = re.compile(r"^(?P<path>.+)/(?P<bid>[0-9a-f]{8,128})/"
                          r"(?P<kind>elf|debug|vdso|kallsyms)$")


def perf_member_name(name: str) -> str | None:
    """Where a member of perf archive's tarball goes in this archive's
    layout (`.build-id/xx/rest` for a binary or vdso image, `.build-id/xx/
    rest.debug` for a debug file, kallsyms as it is), or None for one to
    leave out: the .build-id symlinks, `probes`, directories."""
    m = _PERF_MEMBER.match(name)
    if m is None or not safe_name(name):
        return None
    bid, kind = m.group("bid"), m.group("kind")
    if kind == "kallsyms":
        return name if m.group("path") == "[kernel.kallsyms]" else None
    return ".build-id/%s/%s%s" % (bid[:2], bid[2:], ".debug" if kind == "debug" else "")


def extract_archive(archive: str, dest: str) -> str:
    """Unpack into dest (created) an archive made by write_archive, or the
    tarball `perf archive` makes (bzip2, gzip, xz or plain tar of perf's
    build-id cache: its files are put in write_archive's layout, its links
    left out); returns dest.  Raises ArchiveError on anything outside the
    layout."""
    os.makedirs(dest, exist_ok=True)
    try:
        with open(archive, "rb") as raw:
            if raw.read(4) == ZSTD_MAGIC:
                raw.seek(0)
                _extract_zstd(archive, raw, dest)
            else:
                raw.seek(0)
                _extract_perf_archive(archive, raw, dest)
    except OSError as exc:
        raise ArchiveError("%s: %s" % (archive, exc))
    return dest


def _extract_perf_archive(archive: str, raw: io.BufferedReader, dest: str) -> None:
    total = 0
    taken = 0
    try:
        with tarfile.open(fileobj=raw, mode="r|*") as tar:
            for ti in tar:
                target = perf_member_name(ti.name) if ti.isreg() else None
                if target is None:
                    continue
                total = _extract_member(archive, tar, ti, os.path.join(dest, target), total)
                taken += 1
    except (tarfile.TarError, EOFError) as exc:
        raise ArchiveError("%s: neither a .tar.zst of perfdata archive nor a tarball of "
                           "perf archive: %s" % (archive, exc))
    if not taken:
        raise ArchiveError("%s: a tarball with no file of perf archive's layout "
                           "(<path>/<build-id>/elf, debug, vdso or kallsyms)" % archive)


def _extract_zstd(archive: str, raw: io.BufferedReader, dest: str) -> None:
    import zstandard
    total = 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(raw) as zin, \
                tarfile.open(fileobj=zin, mode="r|") as tar:
            for ti in tar:
                name = ti.name
                if not ti.isreg() or not (_NAME_OK.match(name) or safe_name(name)):
                    raise ArchiveError("%s: member %r is not part of the archive layout"
                                       % (archive, name))
                total = _extract_member(archive, tar, ti, os.path.join(dest, name), total)
    except (tarfile.TarError, zstandard.ZstdError, EOFError) as exc:
        raise ArchiveError("%s: not a readable .tar.zst: %s" % (archive, exc))


def _extract_member(archive: str, tar: tarfile.TarFile, ti: tarfile.TarInfo, target: str,
                    total: int) -> int:
    """Write one regular member to target (through a temporary file);
    returns the total size unpacked so far."""
    name = ti.name
    if ti.size > MAX_MEMBER or total + ti.size > MAX_TOTAL:
        raise ArchiveError("%s: member %r is too large" % (archive, name))
    total += ti.size
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
    return total


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
