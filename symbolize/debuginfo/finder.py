"""`BinaryFinder`: which file is a binary, and which its debug file, among
the places a DebugInfoLocator names; checked by build-id (or .gnu_debuglink
CRC), and why each candidate was or was not taken (`BinaryChoice`)."""
from __future__ import annotations

import os
import zlib
from typing import TYPE_CHECKING, NamedTuple

from ..buildid import parse_build_id_notes
from ..elffile import Binary

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ..cachedir import CacheDir
    from ..warninglog import WarningLog
    from .locate import Candidate, DebugInfoLocator

USER_PSEUDO_MAPPINGS = ("[vdso]", "[vsyscall]", "[vvar]", "[heap]", "[stack]", "[anon]",
                        "[uprobes]")
# Those that name no file to look for: a frame there is a garbage return
# address (a DWARF unwind or a frame-pointer walk that read a heap or stack
# pointer), whose lookup has nothing to say.
NO_FILE_MAPPINGS = frozenset(USER_PSEUDO_MAPPINGS) - {"[vdso]"}
_UNUSABLE = ("not-elf", "truncated", "not-regular", "too-large", "unreadable", "no-code")

STATUSES = ("found", "missing", "buildid-mismatch", "not-elf", "no-symbols")


class BinaryChoice(NamedTuple):
    """What binary_for() settled on, and why (for diagnosis)."""
    status: str               # one of STATUSES
    binary: Binary | None     # the file with the code (None if not found)
    debug: Binary | None      # a separate debug file, if one was found
    reason: str
    tried: tuple              # (path, outcome, detail) for each candidate looked at;
                              # detail: the build-id a buildid-mismatch file has
                              # ("" for none), what is wrong with a damaged one
    # the binary was taken at its recorded path with no build-id to check it
    # by, and it was modified after the profile was written (recorded_at)
    modified_after_recording: bool = False


class Found(NamedTuple):
    """What find() settled on: the files (both None: `missing` says why)."""
    binary: Binary | None
    debug: Binary | None
    tried: tuple
    missing: BinaryChoice | None


class BinaryFinder:
    """Opens the candidates a locator names, best first, and keeps the
    first that is the binary (or its debug file).  recorded_at: when the
    profile was written (seconds since the epoch): a binary taken at its
    recorded path with no build-id to check it by that was modified after
    then is warned about (`modified`)."""

    def __init__(self, locator: DebugInfoLocator, cache: CacheDir, log: WarningLog,
                 recorded_at: float | None = None) -> None:
        self.locator = locator
        self.cache = cache
        self.log = log
        self.recorded_at = recorded_at
        self.modified: set[str] = set()     # candidates modified after recorded_at
        self._jit_places: dict[str, list[str]] = {}     # see add_jit_file_place

    def find(self, path: str, bid: str | None) -> Found:
        """The binary at `path` with this build-id and its debug file."""
        tried: list[tuple[str, str, str]] = []
        binary = None
        worst = "missing"
        for cand in self.locator.candidates_for_binary(path, bid):
            b, outcome, detail = self.open_candidate(cand, bid)
            tried.append((cand.path, outcome, detail))
            if b is not None:
                binary = b
                break
            if outcome == "buildid-mismatch":
                worst = outcome
            elif outcome in _UNUSABLE and worst == "missing":
                worst = "not-elf"      # a FIFO, a directory, a text file, a cut ELF
        self.log.drain(self.locator)
        want = bid or (binary.build_id if binary is not None else None)
        debug = self._find_debug(path, want, binary, tried)
        self.log.drain(self.locator)
        if binary is not None or debug is not None:
            return Found(binary, debug, tuple(tried), None)
        reason = {"missing": "no candidate file exists",
                  "buildid-mismatch": "every candidate has another build-id",
                  "not-elf": "candidates exist but are not usable ELF files"}[worst]
        # (other outcomes were named per file already; a memfd never was
        # a file to find: nothing to say without a build-id to look for)
        if worst == "missing" and (bid or not path.startswith("/memfd:")) and \
                path not in NO_FILE_MAPPINGS:
            self.log.warn(path, "missing",
                          f"{path}: {reason}" + (f" (build-id {bid})" if bid else ""))
        return Found(None, None, tuple(tried),
                     BinaryChoice(worst, None, None, reason, tuple(tried)))

    def _find_debug(self, path: str, want: str | None, binary: Binary | None,
                    tried: list[tuple[str, str, str]]) -> Binary | None:
        debuglink = binary.debuglink if binary is not None else None
        # (the binary itself is no debug file; a candidate that does not
        # exist is not it either, and costs no realpath: a stat a component)
        real = os.path.realpath(binary.path) if binary is not None else None
        for cand in self.locator.candidates_for_debug(
                path, want, debuglink, binary.path if binary is not None else None):
            if real is not None and os.path.lexists(cand.path) and \
                    os.path.realpath(cand.path) == real:
                continue
            d, outcome, detail = self.open_candidate(cand, want, debug=True)
            if d is not None and not (d.has_section(".symtab") or d.has_section(".debug_info")):
                # A copy of the stripped binary (e.g. a .build-id/xx/rest entry of
                # an archive) is no debug file: keep looking.  A file whose
                # section table is cut off is damaged, and said to be.
                detail = self._say_damaged(cand, d)
                d.close()
                d, outcome = None, "no-debug-sections"
            tried.append((cand.path, outcome, detail))
            if d is not None:
                return d
        return None

    def open_candidate(self, cand: Candidate, bid: str | None, debug: bool = False
                       ) -> tuple[Binary | None, str, str]:
        """Open one candidate; (Binary, 'found', '') or (None, why not, what
        the file holds instead: the build-id of a buildid-mismatch ('' for
        none), what is wrong with a damaged file, else '')."""
        if not os.path.lexists(cand.path):
            return None, "missing", ""
        if cand.origin in ("debug-dir", "buildid-cache") and os.path.isdir(cand.path):
            # perf's build-id cache layout: .build-id/xx/rest and <path> are
            # directories there (their `elf` and `debug` are candidates too)
            return None, "directory", ""
        b = Binary(cand.path, facts=self.cache)
        # (what the checks below and the lookups read of the file: kept for
        # the next run, which then reads no ELF header)
        b.keep_facts()
        if not b.ok:
            if b.error_kind != "missing":
                self.log.warn(cand.path, "open", f"{cand.path}: {b.error_kind}: {b.error}")
            # (not ok: error_kind is set)
            return None, ("not-elf" if b.error_kind in ("not-elf", "truncated")  # type: ignore[return-value]
                          else b.error_kind), ""
        if not debug and not b.has_code and b.get_section(".dynsym") is None:
            # (a debug file's copy, or a file cut short: perf's build-id
            # cache entry of a binary truncated in place, a copy that failed)
            damage = self._say_damaged(cand, b)
            b.close()
            return None, "no-code", damage
        outcome = self._verdict(cand, b, bid, debug)
        if outcome[0] != "found":
            b.close()
            return None, outcome[0], outcome[1]
        return b, "found", ""

    def _verdict(self, cand: Candidate, b: Binary, bid: str | None, debug: bool
                 ) -> tuple[str, str]:
        """Whether an opened candidate is the file wanted: ('found', '') or
        (why not, the build-id a buildid-mismatch file has)."""
        have = b.build_id
        if bid is not None:
            if have != bid:
                self.log.warn(cand.path, "bid", f"{cand.path}: build-id {have or 'none'} "
                              f"is not the wanted {bid}; not used")
                return "buildid-mismatch", have or ""
            return "found", ""
        # No build-id to check against.
        if cand.crc is not None:
            crc = _file_crc32(cand.path)
            if crc != cand.crc:
                self.log.warn(cand.path, "crc",
                              f"{cand.path}: .gnu_debuglink CRC mismatch; not used")
                return "crc-mismatch", ""
            return "found", ""
        if cand.origin in ("original", "path-map", "symfs", "debug-dir") and not debug:
            if cand.origin == "original":
                self._check_unchanged(cand.path)
            return "found", ""
        if debug and cand.origin in ("debug-dir", "symfs", "system") and have is None:
            return "found", ""
        return "unverifiable", ""

    def supplementary_of(self, f: Binary) -> Binary | None:
        """The supplementary file (`dwz -m`'s) that f's DWARF names, found
        by its identity (build-id, or .debug_sup checksum); None, said once,
        where no candidate is it."""
        link = f.supplementary_link
        if link is None:
            return None
        for cand in self.locator.candidates_for_supplementary(link.name, link.identity, f.path):
            if not os.path.isfile(cand.path):
                continue
            b = Binary(cand.path, facts=self.cache)
            if b.ok and (b.has_section(".debug_info") or b.has_section(".debug_str")) and (
                    link.identity is None or b.supplementary_identity == link.identity):
                return b
            if b.ok:
                self.log.warn(cand.path, "sup-id", "%s: not the supplementary file %s of %s "
                              "(it is %s); not used" % (cand.path, link.identity, f.path,
                                                       b.supplementary_identity or
                                                       "unidentified"))
            b.close()
        self.log.drain(self.locator)
        self.log.warn(f.path, "sup-missing",
                      "%s: its DWARF refers to the supplementary file %s (made by dwz%s), not "
                      "found: the names of the functions inlined from there are left out; "
                      "install it (the package's debug files put it under /usr/lib/debug/.dwz) "
                      "or give --debug-dir DIR where it is DIR/.build-id/xx/rest.debug or at "
                      "its path" % (f.path, link.name,
                                    ", id %s" % link.identity if link.identity else ""))
        return None

    def _check_unchanged(self, path: str) -> None:
        """Warn about a binary taken unverified at its recorded path that
        was modified after the profile was written.  (Only there: a copy
        under --path-map, --symfs or a debug dir has its own times.)"""
        if self.recorded_at is None:
            return
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            return
        if mtime > self.recorded_at:
            import time
            self.modified.add(path)
            self.log.warn(path, "modified", "%s: modified after the profile was written (%s, "
                          "the profile %s) and the profile has no build-id to check it by: its "
                          "names may be another build's (perf record --buildid-all records "
                          "every binary's build-id)" % (
                              path, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(mtime)),
                              time.strftime("%Y-%m-%d %H:%M:%S",
                                            time.localtime(self.recorded_at))))

    def _say_damaged(self, cand: Candidate, b: Binary) -> str:
        """Warn about a candidate whose headers point past its end (the
        first thing found wrong), and return that ('' for nothing wrong)."""
        if b.ok:
            b.sections        # (read: a cut-off table is found wanting here)
        if not b.warnings:
            return ""
        problem = b.warnings[0]
        problem = problem[len(b.path) + 2:] if problem.startswith(b.path + ": ") else problem
        self.log.warn(cand.path, "damaged", f"{cand.path}: damaged ({problem}); not used")
        b.warnings.clear()
        return problem

    def kallsyms_files(self, bid: str | None) -> Iterator[str]:
        """The kallsyms files that may be the kernel's of this build-id,
        best first: perf's saved copy, then the running kernel's if it is
        that kernel (said when it is not)."""
        for cand in self.locator.candidates_for_kallsyms(bid):
            if not os.path.isfile(cand.path):
                continue
            if cand.origin == "original" and bid is not None and not running_kernel_is(bid):
                self.log.warn(cand.path, "bid",
                              f"{cand.path}: the running kernel is not build-id {bid}; not used")
                continue
            yield cand.path

    def jit_file(self, path: str) -> str | None:
        """Where a file a JIT wrote for perf (a jitdump, or a perf map:
        /tmp/perf-PID.map), recorded or named at `path`, is here (the
        locator's candidates_for_jit_file: --debug-dir, --path-map, --symfs,
        the path itself), or None."""
        for cand in self.locator.candidates_for_jit_file(path):
            if os.path.lexists(cand.path):
                return cand.path
        for place in self._jit_places.get(path, ()):
            if os.path.lexists(place):
                return place
        return None

    def add_jit_file_place(self, path: str, place: str) -> None:
        """One more place where the JIT file named `path` may be, tried
        after the locator's (the caller knows of it: a container's /tmp
        under /proc/PID/root).  Before the file is first read."""
        places = self._jit_places.setdefault(path, [])
        if place not in places:
            places.append(place)


def _file_crc32(path: str) -> int | None:
    try:
        crc = 0
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    return crc & 0xFFFFFFFF
                crc = zlib.crc32(chunk, crc)
    except OSError:
        return None


def running_kernel_is(bid: str) -> bool:
    """Whether /sys/kernel/notes names this build-id (unknown counts as yes:
    there is nothing better to use)."""
    try:
        with open("/sys/kernel/notes", "rb") as f:
            data = f.read(1 << 16)
    except OSError:
        return True
    have = parse_build_id_notes(data, True)
    return have is None or have == bid
