"""Where to look for a binary and its debug info: ordered candidate paths.

Pure data: nothing here opens a file. The caller opens each candidate in turn
and checks it (build-id, or the .gnu_debuglink CRC) before trusting it, as
wholesym does. Orders follow perf and gdb:

binary:  --debug-dir dirs (.build-id/xx/rest, DIR/<path>, and perf's cache
         layout there: .build-id/xx/rest/elf, DIR/<path>/<build-id>/elf), the symfs root,
         perf's build-id cache (~/.debug), then the original path, or, for a
         path under a --path-map prefix, the path rewritten to the new root
         instead of it.
debug:   --debug-dir dirs (.build-id/xx/rest.debug, DIR/<path>.debug, ...,
         perf's cache layout's `debug`),
         the symfs root's /usr/lib/debug, /usr/lib/debug (.build-id and path
         layouts), perf's build-id cache, then .gnu_debuglink's file next to
         the binary, in its .debug/ and under /usr/lib/debug/<dir>/.

perf's build-id cache (tools/perf/util/build-id.c): ~/.debug/.build-id/ab/cdef
is a symlink to ../../<path>/<build-id>, a directory holding `elf` (the
binary), `debug` (its debug info), `kallsyms` or `vdso`.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterable

from ..buildid import build_id_path_parts, normalize_build_id


class Candidate(NamedTuple):
    path: str
    origin: str            # debug-dir, symfs, system, buildid-cache, debuglink, original
    crc: int | None = None  # for debuglink candidates: the CRC32 the file must have


def _is_pseudo(path: str) -> bool:
    # perf's names for things that are no file: [vdso], [kernel.kallsyms],
    # [heap], //anon, /memfd:... (deleted) is a real path.
    return not path or path.startswith("[") or path.startswith("//") or "\0" in path


DELETED = " (deleted)"


def _paths_elsewhere(path: str) -> list[str]:
    """The recorded path, and without the " (deleted)" the kernel appends
    to the name of a file deleted while mapped (perf record -p, -a of a
    running process): where a copy of the recording machine's files is
    (--path-map NEW, --symfs, a debug dir's path tree) it is not deleted.
    (Not at the recorded path itself: a file there now is the one that
    replaced it.)"""
    if path.endswith(DELETED) and not path.startswith("/memfd:") and len(path) > len(DELETED):
        return [path, path[:-len(DELETED)]]
    return [path]


def _rooted(root: str, path: str, suffix: str = "") -> str | None:
    """root + absolute path, with '..' resolved first so the result stays
    inside root."""
    if not os.path.isabs(path) or "\0" in path:
        return None
    norm = os.path.normpath(path).lstrip("/")
    if not norm:
        return None
    return os.path.join(root, norm) + suffix


def valid_debuglink_name(name: object) -> bool:
    return (isinstance(name, str) and bool(name) and "/" not in name and "\0" not in name
            and name not in (".", "..") and ".." not in name)


def parse_path_map(text: str) -> tuple[str, str]:
    """'OLD=NEW' -> (OLD, NEW): OLD an absolute recorded path (a directory or
    one file), NEW where it is on this machine.  ValueError when malformed."""
    old, sep, new = text.partition("=")
    if not sep or not old or not new:
        raise ValueError("expected OLD=NEW, got %r" % text)
    if not os.path.isabs(old) or "\0" in old or "\0" in new:
        raise ValueError("OLD must be an absolute path: %r" % old)
    old = os.path.normpath(old)
    return ("/" if old == "//" else old), os.path.abspath(os.path.expanduser(new))


def map_path(path: str, path_map: Iterable[tuple[str, ...]]) -> str | None:
    """The recorded path rewritten by the longest matching OLD prefix of
    path_map ((OLD, NEW) pairs; a prefix matches whole path components),
    or None when no prefix matches."""
    if not path_map or not os.path.isabs(path) or "\0" in path:
        return None
    norm = os.path.normpath(path)
    best = None
    for old, new in path_map:
        if norm == old:
            rest = ""
        elif norm.startswith(old.rstrip("/") + "/"):
            rest = norm[len(old.rstrip("/")) + 1:]
        else:
            continue
        if best is None or len(old) > len(best[0]):
            best = (old, os.path.join(new, rest) if rest else new)
    return best[1] if best else None


class DebugInfoLocator:
    """path_map: (OLD, NEW) pairs (see parse_path_map) for profiles recorded
    in a container, on another host or in another checkout: a binary recorded
    under OLD is looked for under NEW, and never at its recorded path, which
    on this machine may hold another file."""

    def __init__(self, debug_dirs: Iterable[str] | None = (), symfs: str | None = None,
                 buildid_dir: str | None = "~/.debug",
                 system_debug: str | None = "/usr/lib/debug",
                 path_map: Iterable[str | Iterable[str]] | None = ()) -> None:
        self.debug_dirs = [os.path.expanduser(d) for d in (debug_dirs or ())]
        self.symfs = os.path.expanduser(symfs) if symfs else None
        self.path_map = [parse_path_map(m) if isinstance(m, str) else tuple(m)
                         for m in (path_map or ())]
        self.buildid_dir = os.path.expanduser(buildid_dir) if buildid_dir else None
        self.system_debug = system_debug
        self.warnings: list[str] = []
        self._warned: set[str] = set()

    def _warn(self, msg: str) -> None:
        if msg not in self._warned:
            self._warned.add(msg)
            self.warnings.append(msg)

    @staticmethod
    def _bid_parts(build_id: str | None) -> tuple[str, str] | None:
        bid = normalize_build_id(build_id)
        if bid is None or len(bid) < 4:
            return None
        return build_id_path_parts(bid)

    def _cache_binaries(self, path: str, bid: str | None, root: str | None = None
                        ) -> list[str]:
        """The files of perf's build-id cache layout (under root, by default
        the cache) that may be this binary: each directory's `elf`, and for
        the vdso its `vdso` first."""
        names = ("vdso", "elf") if path == "[vdso]" else ("elf",)
        return [os.path.join(cdir, name) for cdir in self._cache_dirs(path, bid, root)
                for name in names]

    def _cache_dirs(self, path: str, bid: str | None, root: str | None = None) -> list[str]:
        """Directories of perf's build-id cache (or of root laid out as it
        is) that may hold this binary."""
        root = root or self.buildid_dir
        if not root or bid is None or len(bid) < 4:
            return []
        xx, rest = bid[:2], bid[2:]
        out = [os.path.join(root, ".build-id", xx, rest)]
        if path.startswith("[") and "/" not in path and "\0" not in path:
            out.append(os.path.join(root, path, bid))
        else:
            p = _rooted(root, path)
            if p is not None:
                out.append(os.path.join(p, bid))
        return out

    def candidates_for_binary(self, path: str, build_id: str | None = None
                              ) -> list[Candidate]:
        """Files that may be the binary itself (with its code), best first."""
        bid = normalize_build_id(build_id)
        if build_id is not None and bid is None:
            self._warn(f"{path}: invalid build-id {build_id!r} ignored")
        out: list[Candidate] = []
        pseudo = _is_pseudo(path)
        for d in self.debug_dirs:
            if bid is not None and len(bid) >= 4:
                out.append(Candidate(os.path.join(d, ".build-id", bid[:2], bid[2:]), "debug-dir"))
            if not pseudo:
                for q in _paths_elsewhere(path):
                    p = _rooted(d, q)
                    if p:
                        out.append(Candidate(p, "debug-dir"))
            # A debug dir laid out as perf's build-id cache (`perf archive`'s
            # tarball unpacked, a copy of someone's ~/.debug)
            out += [Candidate(f, "debug-dir") for f in self._cache_binaries(path, bid, d)]
        mapped = None if pseudo else map_path(path, self.path_map)
        if mapped is not None:
            for q in _paths_elsewhere(path):
                m = map_path(q, self.path_map)
                if m is not None:
                    out.append(Candidate(m, "path-map"))
        if self.symfs and not pseudo:
            for q in _paths_elsewhere(path):
                p = _rooted(self.symfs, q)
                if p:
                    out.append(Candidate(p, "symfs"))
        out += [Candidate(f, "buildid-cache") for f in self._cache_binaries(path, bid)]
        if bid is not None and self.buildid_dir and len(bid) >= 4:
            # Old cache layout: the .build-id entry links to the file itself.
            # (Where it links to a directory, the new layout's, its files are
            # the candidates above; one without `elf` -- a vdso image, or
            # `probes` alone -- is no binary of this path, and no warning.)
            old = os.path.join(self.buildid_dir, ".build-id", bid[:2], bid[2:])
            if not os.path.isdir(old):
                out.append(Candidate(old, "buildid-cache"))
        if not pseudo and not self.symfs and mapped is None:
            out.append(Candidate(os.path.normpath(path), "original"))
        return _dedup(out)

    def candidates_for_jit_file(self, path: str) -> list[Candidate]:
        """Where a file a JIT wrote for perf (a jitdump, jit-PID.dump; a perf
        map, /tmp/perf-PID.map) may be,
        best first: --debug-dir's path layout (DIR/<path>, where `perfdata
        archive` stores it), the path-map, the symfs root, then the recorded
        path unless a path-map or symfs says where the recorded files are."""
        if _is_pseudo(path):
            return []
        if not os.path.isabs(path):
            return [Candidate(path, "original")]
        return _dedup(self._places_of(path))

    def _places_of(self, path: str) -> list[Candidate]:
        """Where a file known by its absolute path alone may be: --debug-dir's
        path layout, the path-map, the symfs root, then the path itself
        unless a path-map or symfs says where the recorded files are."""
        out: list[Candidate] = []
        for d in self.debug_dirs:
            p = _rooted(d, path)
            if p:
                out.append(Candidate(p, "debug-dir"))
        mapped = map_path(path, self.path_map)
        if mapped is not None:
            out.append(Candidate(mapped, "path-map"))
        if self.symfs:
            p = _rooted(self.symfs, path)
            if p:
                out.append(Candidate(p, "symfs"))
        if not self.symfs and mapped is None:
            out.append(Candidate(os.path.normpath(path), "original"))
        return out

    def candidates_for_debug(self, path: str, build_id: str | None = None,
                             debuglink: tuple[str, int] | None = None,
                             binary_path: str | None = None) -> list[Candidate]:
        """Files that may hold the binary's debug info (.symtab, DWARF).

        debuglink is (name, crc) from the binary's .gnu_debuglink; binary_path
        is where the binary was actually found (its directory is searched for
        the debuglink file), by default `path`.
        """
        bid = normalize_build_id(build_id)
        if build_id is not None and bid is None:
            self._warn(f"{path}: invalid build-id {build_id!r} ignored")
        out: list[Candidate] = []
        pseudo = _is_pseudo(path)
        has_bid = bid is not None and len(bid) >= 4
        for d in self.debug_dirs:
            if has_bid:
                # (has_bid: bid is a str)
                base = os.path.join(d, ".build-id", bid[:2], bid[2:])  # type: ignore[index]
                out.append(Candidate(base + ".debug", "debug-dir"))
            if not pseudo:
                p = _rooted(d, path)
                if p:
                    out.append(Candidate(p + ".debug", "debug-dir"))
                    out.append(Candidate(p, "debug-dir"))
            if has_bid:
                out.append(Candidate(base, "debug-dir"))
            for cdir in self._cache_dirs(path, bid, d):      # perf's cache layout
                out.append(Candidate(os.path.join(cdir, "debug"), "debug-dir"))
        roots = []
        if self.symfs and self.system_debug:
            roots.append((_rooted(self.symfs, self.system_debug), "symfs"))
        if self.system_debug and not self.symfs:
            roots.append((self.system_debug, "system"))
        for root, origin in roots:
            if not root:
                continue
            if has_bid:
                # (has_bid: bid is a str)
                out.append(Candidate(os.path.join(root, ".build-id", bid[:2], bid[2:]) + ".debug",  # type: ignore[index]
                                     origin))
            if not pseudo:
                p = _rooted(root, path)
                if p:
                    out.append(Candidate(p + ".debug", origin))
                    out.append(Candidate(p, origin))
        for cdir in self._cache_dirs(path, bid):
            out.append(Candidate(os.path.join(cdir, "debug"), "buildid-cache"))
        if debuglink is not None and not pseudo:
            out += self._debuglink_candidates(path, debuglink, binary_path)
        return _dedup(out)

    def candidates_for_supplementary(self, name: str, identity: str | None,
                                     referrer: str) -> list[Candidate]:
        """Files that may be the supplementary file (`dwz -m`'s) that the
        debug file (or binary) at `referrer` names `name` (its
        .gnu_debugaltlink or .debug_sup) with this identity, best first:
        by the identity under each debug directory's .build-id, as gdb and
        elfutils look (Fedora links each .dwz file there), then the name
        itself: an absolute one under --debug-dir (one under /usr/lib/debug
        also as if the debug dir were /usr/lib/debug), --path-map or --symfs
        (else as written: Debian's /usr/lib/debug/.dwz/...), a relative one
        next to the referrer, as found and as its link resolves (Fedora's
        `../../.dwz/NAME` is relative to the file, not to its .build-id link)."""
        out: list[Candidate] = []
        parts = self._bid_parts(identity)
        roots: list[str | None] = list(self.debug_dirs)
        if self.system_debug:
            roots.append(_rooted(self.symfs, self.system_debug) if self.symfs
                         else self.system_debug)
        if parts is not None:
            for root in roots:
                if root:
                    out.append(Candidate(os.path.join(root, ".build-id", parts[0], parts[1])
                                         + ".debug", "debug-dir"))
        if "\0" in name or not name:
            return _dedup(out)
        if os.path.isabs(name):
            # A debug dir stands for /usr/lib/debug (the root of a -dbgsym
            # package's files) or is laid out by whole paths.
            sysroot = self.system_debug.rstrip("/") + "/" if self.system_debug else None
            if sysroot and name.startswith(sysroot):
                out += [Candidate(os.path.join(d, name[len(sysroot):]), "debug-dir")
                        for d in self.debug_dirs]
            out += self._places_of(name)
        else:
            for where in (referrer, os.path.realpath(referrer)):
                out.append(Candidate(os.path.normpath(
                    os.path.join(os.path.dirname(where), name)), "original"))
        return _dedup(out)

    def _debuglink_candidates(self, path: str, debuglink: tuple[str, int],
                              binary_path: str | None) -> list[Candidate]:
        try:
            name, crc = debuglink
        except (TypeError, ValueError):
            return []
        if not valid_debuglink_name(name):
            self._warn(f"{path}: .gnu_debuglink name {name!r} rejected")
            return []
        out = []
        dirs = []
        recorded = map_path(path, self.path_map) or (
            path if not self.symfs else _rooted(self.symfs, path))
        for p in (binary_path, recorded):
            if p and os.path.isabs(p):
                d = os.path.dirname(os.path.normpath(p))
                if d not in dirs:
                    dirs.append(d)
        for d in dirs:
            out.append(Candidate(os.path.join(d, name), "debuglink", crc))
            out.append(Candidate(os.path.join(d, ".debug", name), "debuglink", crc))
        orig_dir = os.path.dirname(os.path.normpath(path)) if os.path.isabs(path) else None
        if orig_dir:
            roots = []
            if self.symfs and self.system_debug:
                roots.append(_rooted(self.symfs, self.system_debug))
            elif self.system_debug:
                roots.append(self.system_debug)
            for d in self.debug_dirs:
                roots.append(d)
            for root in roots:
                p = _rooted(root, orig_dir) if root and orig_dir != "/" else root
                if p:
                    out.append(Candidate(os.path.join(p, name), "debuglink", crc))
        return out

    def candidates_for_kallsyms(self, build_id: str | None = None) -> list[Candidate]:
        """perf's saved copy of /proc/kallsyms for this kernel build (in a
        debug dir or perf's build-id cache), then the running kernel's (right only if the build-ids agree: the caller checks)."""
        out = []
        bid = normalize_build_id(build_id)
        if bid is not None:
            # A --debug-dir laid out like perf's cache (an unpacked archive,
            # a project's bundled symbols) holds kallsyms the same way.
            for d in self.debug_dirs:
                out.append(Candidate(os.path.join(d, "[kernel.kallsyms]", bid, "kallsyms"),
                                     "debug-dir"))
            if self.buildid_dir:
                out.append(Candidate(os.path.join(self.buildid_dir, "[kernel.kallsyms]", bid,
                                                  "kallsyms"), "buildid-cache"))
        if self.symfs:
            out.append(Candidate(os.path.join(self.symfs, "proc", "kallsyms"), "symfs"))
        else:
            out.append(Candidate("/proc/kallsyms", "original"))
        return out


def _dedup(cands: list[Candidate]) -> list[Candidate]:
    seen = set()
    out = []
    for c in cands:
        if c.path not in seen:
            seen.add(c.path)
            out.append(c)
    return out
