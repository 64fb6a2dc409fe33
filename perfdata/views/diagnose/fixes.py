"""The fix texts that depend on what the diagnosis found: the stack size a
DWARF recording needs, what stands where a binary was looked for, the
package a binary comes from, where to point perfdata for a missing file."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from symbolize import injected_jit_group, is_jitdump_path

if TYPE_CHECKING:
    from symbolize import Symbolizer

    from .classes import ClassStats

MAX_DWARF_STACK = 65528          # perf's limit: u16, multiple of 8


def class_fix(name: str, st: ClassStats, stretched_frames: int) -> str | None:
    """The fix of a class that depends on what was measured (None: the
    class's general one), noted in its detail."""
    if name == "resolved-dynsym":
        # said only where measured: frames named by a .dynsym symbol of
        # size 0 stretched over the code after it
        if not stretched_frames:
            return ""
        st.detail["past-symbol-size"] = stretched_frames
        return ("%d frames lie past their .dynsym symbol's size: static functions "
                "there are named after the nearest exported one; install the "
                "binary's debug info for exact names" % stretched_frames)
    if name == "dwarf-stack-exhausted":
        d = st.detail
        need = d.get("needed")
        rec = d.get("recorded") or 0
        if need is None:
            return ("the stack is deeper than the %d bytes recorded and its end is not "
                    "known: try --call-graph=dwarf,%d, or frame pointers (-g)"
                    % (rec, MAX_DWARF_STACK))
        size = min(MAX_DWARF_STACK, (need + 1023) // 1024 * 1024)
        if need > MAX_DWARF_STACK:
            return ("the stack needs %d bytes, more than perf's limit of %d: build with "
                    "-fno-omit-frame-pointer and record with -g (frame pointers)"
                    % (need, MAX_DWARF_STACK))
        d["suggested"] = size
        return ("perf record --call-graph=dwarf,%d (the deepest stack needs %d bytes, "
                "%d were recorded)" % (size, need, rec))
    return None

def found_instead(symbolizer: Symbolizer, name: str, path: str, bid: str | None) -> list[str]:
    """What the files looked at for a binary of these classes hold
    instead of it: another build-id (and where perf's build-id cache
    entry is the same file as the binary: overwritten in place), or
    damage."""
    if name not in ("buildid-mismatch", "binary-missing") or not path:
        return []
    tried = symbolizer.binary_for(path, bid).tried
    recorded = os.path.normpath(path)
    out = []
    linked = []
    for p, outcome, detail in tried:
        if outcome == "buildid-mismatch":
            if p != recorded and _same_file(p, recorded):
                linked.append(p)
                continue
            out.append("%s has build-id %s%s" % (
                p, detail or "none", ", not the recorded %s" % bid if bid else ""))
        elif outcome in ("not-elf", "no-code", "no-debug-sections") and detail:
            out.append("%s is damaged: %s" % (p, detail))
    if linked:
        # perf record (and perf buildid-cache -a) link the binary into
        # the cache where they can: one file under two names
        out.append("%s: perf's build-id cache copy is the same file as %s (a hard link "
                   "perf made), so writing over the binary in place (cp onto it) changed "
                   "the copy too; a new file (install, mv, a linker's output) leaves it"
                   % (", ".join(linked), recorded))
    return out

def binary_fix(name: str, path: str, bid: str | None) -> str | None:
    """The fix for one binary of a class, where it has its own (the
    package that holds it, the copy to give), or None."""
    from symbolize import package_of
    if name == "binary-missing" and path and path.endswith(" (deleted)"):
        # (perf record -p / -a of a process whose binary was deleted:
        # nothing on the recording machine to archive any more)
        return ("deleted while the process ran, so no build-id was recorded and no archive "
                "can hold it: give a copy of the same build with --path-map %s=COPY or "
                "under --symfs ROOT" % path[:-len(" (deleted)")])
    if name == "binary-missing":
        return _missing_binary_fix(path, bid)
    if name == "fp-broken":
        if path and (injected_jit_group(path) or is_jitdump_path(path)):
            # Code a JIT wrote cannot be rebuilt: its stacks need the
            # JIT's own unwinding info (CPython's perf trampolines set up
            # no frame pointer).
            return ("JIT code without frame pointers: record with --call-graph=dwarf "
                    "and the JIT's unwinding info (python3.13 -X perf_jit, node "
                    "--perf-prof --perf-prof-unwinding-info; -k 1)")
        pkg = package_of(path) if path and path.startswith("/") else None
        if pkg is not None:
            return ("from package %s, built without frame pointers: record with "
                    "--call-graph=dwarf" % pkg.name)
        return None
    if name not in ("no-debuginfo", "resolved-dynsym"):
        return None
    parts: list[str | None] = []
    pkg = package_of(path) if path and path.startswith("/") else None
    if pkg is not None:
        # (a command where the package manager has the package; else
        # where to find it, with its commands quoted)
        parts.append(pkg.install if pkg.installable is False else "`%s`" % pkg.install)
    parts.append("--debuginfod URL (or DEBUGINFOD_URLS)" if bid else None)
    if bid:
        parts.append("--debug-dir DIR holding .build-id/%s/%s.debug" % (bid[:2], bid[2:]))
    else:
        parts.append("--debug-dir DIR holding %s.debug" % path)
    if pkg is None:
        parts.append("or rebuild with -g and keep the debug file "
                     "(objcopy --only-keep-debug)")
    return "; ".join(p for p in parts if p)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _missing_binary_fix(path: str, bid: str | None) -> str | None:
    """Where to point perfdata for a binary whose recorded path does not
    exist here: a container's file (a path of its own mount namespace), or
    another machine's.  perf record reads the build-ids at its end, through
    the process's mount namespace while it lives: of a container that had
    exited by then the recording holds none, and a file given for the path
    is taken unchecked."""
    if not path or not path.startswith("/") or os.path.lexists(path):
        return None          # (a file that is there but unusable: the class's fix)
    parts = ["%s does not exist here (a container's file, or another machine's): "
             "--path-map %s=COPY (a copy of the file; or --path-map %s=DIR for its "
             "directory), or --symfs ROOT (the container's root filesystem: its image "
             "unpacked, or /proc/PID/root while it runs)"
             % (path, path, os.path.dirname(path) or "/")]
    if bid:
        parts.append("or --debug-dir DIR holding .build-id/%s/%s" % (bid[:2], bid[2:]))
    else:
        parts.append("the profile holds no build-id for it (perf record writes those of "
                     "the binaries its samples' own ips hit, read at its end through the "
                     "mount namespace of a process still alive; none in a pipe-mode "
                     "recording), so the file given is not checked, and `perf archive` "
                     "leaves it out: `perfdata archive FILE -o OUT.tar.zst` on the recording "
                     "machine takes it by its path (then --archive)")
    return "; ".join(parts)
