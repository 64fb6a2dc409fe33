"""The binary behind a map: which file, by path and build-id, the frames of
a thread's map are looked up in (the recorded build-id, a path recorded
with several, the vdso's stand-in, a container's file through
/proc/PID/root), and whether the profiled kernel's symbols may be used
here.  A FrameResolver asks it for every map it meets."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..session.machine import KERNEL_DSO, KERNEL_PID

if TYPE_CHECKING:
    from collections.abc import Callable

    from symbolize import KernelSymbols, Symbolizer

    from ..session.machine import Machine
    from ..session.maps import Map

# Kernel addresses (x86_64, aarch64): the upper half.
KERNEL_HALF = 1 << 63


def _no_release() -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class RecordedBinaries:
    """What the recording says of its binaries and its kernel."""
    # binary path -> build-id, as recorded (the dict is updated as MMAP2
    # records naming build-ids stream by)
    build_ids: dict[str, str] = field(default_factory=dict)
    # binary path -> its build-ids, for the paths recorded with several
    build_id_choices: dict[str, list[str]] = field(default_factory=dict)
    # () -> the recording kernel's release (uname -r), or None
    release: Callable[[], str | None] = _no_release


class DsoResolver:
    """map -> (path to look its binary up by, build-id), cached; and the
    kernel's symbols where they are the profiled kernel's.  One per
    FrameResolver: it knows the session's Machine, and appends what it
    has to say to the run's warnings."""

    def __init__(self, machine: Machine, symbolizer: Symbolizer, recorded: RecordedBinaries,
                 warnings: list[str]) -> None:
        self.machine = machine
        self.symbolizer = symbolizer
        self.build_ids = recorded.build_ids
        self.build_id_choices = recorded.build_id_choices
        self._recorded_release = recorded.release
        self.warnings = warnings              # the run's warnings (a list to append to)
        self._dso_cache: dict[tuple[str, str | None], tuple[str, str | None]] = {}
        self._kernel_ok: bool | None = None

    def dso_of(self, m: Map) -> tuple[str, str | None]:
        """(path to look the binary up by, build-id) for a map.  The vdso has
        no file: perf's build-id cache may hold its image; else, as perf does,
        this machine's own vdso stands in, used silently only when its
        build-id is the recorded one.  A binary not found under its path
        here (nor by build-id, --symfs, --path-map) is looked for in the
        mount namespace of the process that mapped it, /proc/PID/root/PATH,
        while that process lives (a container's file): taken only with the
        recorded build-id, so a pid now another process's names nothing."""
        key: tuple = (m.path, m.build_id)
        several = m.build_id is None and m.path in self.build_id_choices
        if several:
            # (what is known of the path's other files grows as their maps come)
            key = (m.path, None, m.maj, m.min, m.ino, m.pid,
                   len(self.machine.file_ids.get(m.path, ())))
        hit = self._dso_cache.get(key)
        if hit is None:
            bid = m.build_id or (self._own_build_id(m) if several else
                                 self.build_ids.get(m.path))
            hit = (m.path, bid)
            # (without a build-id no file can be found for "[vdso]")
            if m.path == "[vdso]" and (
                    bid is None or self.symbolizer.binary_for(m.path, bid).status != "found"):
                hit = self._vdso_stand_in(bid) or hit
            elif bid is not None and m.path.startswith("/"):
                inside = in_process_root(m.pid, m.path)
                if inside is not None:
                    hit = (self.symbolizer.first_found((m.path, inside), bid), bid)
            self._dso_cache[key] = hit
        return hit

    def _own_build_id(self, m: Map) -> str:
        """Which of the build-ids recorded under the map's path is its file's
        (perf's header names them by path alone; the host's file and a
        container's have one path): that of the file with the map's device
        and inode, here or in its process's mount namespace; else, where
        the file here is another map's (its device and inode another's of
        this path) and so its build-id that map's, and as many files were
        mapped under the path as build-ids are listed, the one left; else
        the first listed, as perf's header is read for one build-id a path.
        (A stat that names another device than the kernel's records, as
        btrfs subvolumes and overlayfs do, proves nothing either way.)"""
        choices = self.build_id_choices[m.path]
        if not m.ino:
            return choices[0]
        own = (m.maj, m.min, m.ino)
        mapped = self.machine.file_ids.get(m.path, set())
        places = [m.path]
        inside = in_process_root(m.pid, m.path)
        if inside is not None:
            places.append(inside)
        others = list(choices)
        for place in places:
            try:
                st = os.stat(place)
            except OSError:
                continue
            ident = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
            if ident != own and ident not in mapped:
                continue
            bid = _file_build_id(place)
            if bid not in choices:
                continue
            if ident == own:
                return bid
            if bid in others:
                others.remove(bid)            # another map's file
        if len(others) == 1 and len(mapped) == len(choices):
            return others[0]
        return choices[0]

    def _vdso_stand_in(self, bid: str | None) -> tuple[str, str | None] | None:
        """The image that stands in for a vdso not found by its build-id:
        the one the caller gave (--vdso), else this machine's own, where it
        is the recorded one (by build-id; without one, where this machine
        runs the recorded kernel release: perf 6.1 takes its own vdso for any
        file, and names another kernel's vdso code wrongly)."""
        given = self.symbolizer.given_vdso
        if given is not None:
            choice = self.symbolizer.binary_for(given, None)
            given_bid = choice.binary.build_id if choice.binary is not None else None
            if choice.status != "found":
                self.warnings.append("--vdso %s: %s" % (given, choice.reason))
            elif not given_bid:
                self.warnings.append("--vdso %s: no build-id; not used" % given)
            elif bid is not None and given_bid != bid:
                self.warnings.append("--vdso %s: build-id %s, not the profile's vdso (%s); "
                                     "not used" % (given, given_bid, bid))
            else:
                return given, given_bid
        from symbolize.debuginfo.vdso import running_vdso
        own = running_vdso(self.symbolizer.cache)
        if own is None:
            return None
        if bid is not None:
            return own if bid == own[1] else None
        if self._runs_recorded_kernel():
            self.warnings.append("[vdso]: the profile has no build-id for it; assuming this "
                                 "machine's vdso (build-id %s), as perf does" % own[1])
            return own
        self.warnings.append(
            "[vdso]: the profile has no build-id for it and was recorded on kernel %s, whose "
            "vdso may differ: its frames are left unnamed; pass --vdso FILE, the recording "
            "machine's vdso image (perfdata keeps it in its cache directory as "
            "vdso-BUILDID.so)" % self.kernels_named())
        return None

    def kernel_symbols(self) -> KernelSymbols | None:
        """The kallsyms table of the profiled kernel, or None."""
        if not self.kernel_symbols_usable():
            return None
        return self.symbolizer.kernel_symbols(self.build_ids.get(KERNEL_DSO))

    def kernel_text_map(self, avma: int) -> Map | None:
        """The kernel's map for an address past its MMAP's end (_etext) that
        a kernel symbol covers (.init.text: start_kernel): perf's kernel map
        reaches the last kallsyms symbol."""
        if avma < KERNEL_HALF or not self.kernel_symbols_usable():
            return None
        main = next((x for x in self.machine.kernel_maps if x.path == KERNEL_DSO), None)
        if main is None or avma < main.start:
            return None
        try:
            table = self.symbolizer.kernel_symbols(self.build_ids.get(KERNEL_DSO))
            s = table.lookup(avma)
        except Exception:           # a symbolizer bug must not stop the listing
            return None
        return main if s is not None and s.module is None else None

    def kernel_symbols_usable(self) -> bool:
        """Kernel symbols are looked up only for the kernel that was profiled:
        by build-id when the file has one (the symbolizer checks it), else only
        if this machine runs the release the file names (perf 6.1 uses this
        machine's /proc/kallsyms for any file, and prints wrong names)."""
        if self._kernel_ok is None:
            bid = self.build_ids.get(KERNEL_DSO)
            if bid is not None or self.symbolizer.given_kernel_symbols is not None:
                self._kernel_ok = True
            else:
                self._kernel_ok = self._runs_recorded_kernel()
                if not self._kernel_ok:
                    self.warnings.append(
                        "kernel symbols: the file has no kernel build-id and was recorded on "
                        "kernel %s; pass --kallsyms FILE or --vmlinux" % self.kernels_named())
        return self._kernel_ok

    def _runs_recorded_kernel(self) -> bool:
        """Whether this machine runs the kernel release the file names (what
        stands for the kernel's identity where the file has no build-id: its
        symbols, its vdso)."""
        release = self._recorded_release()
        return bool(release) and release == os.uname().release

    def kernels_named(self) -> str:
        return "%s, not this one (%s)" % (self._recorded_release() or "unknown",
                                          os.uname().release)


def in_process_root(pid: int | None, path: str) -> str | None:
    """A path as a process's mount namespace sees it, /proc/PID/root/PATH,
    for a process's pid (not the kernel's, not none)."""
    if pid is None or not 0 < pid < KERNEL_PID:
        return None
    return "/proc/%d/root%s" % (pid, path)


def _file_build_id(path: str) -> str | None:
    from symbolize import Binary
    b = Binary(path)
    try:
        return b.build_id if b.ok else None
    finally:
        b.close()
