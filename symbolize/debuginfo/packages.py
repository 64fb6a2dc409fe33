"""Which installed package owns a file, and how to get its debug info.

`dpkg -S PATH` (Debian, Ubuntu) or `rpm -qf PATH` (Fedora, RHEL, SUSE), run
with argument lists (never a shell), a timeout, and only for absolute paths
without glob characters (dpkg -S takes patterns).  Answers are cached per
path for the life of the process.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Iterable

TIMEOUT = 10
_GLOB = set("*?[]\\")
# Debian packages whose debug symbols are not PKG-dbgsym.
_DEBIAN_DBG = {"libc6": "libc6-dbg", "libc6-amd64": "libc6-dbg", "libc6-i386": "libc6-dbg"}


class Package(NamedTuple):
    manager: str          # "dpkg" or "rpm"
    name: str             # the owning package (dpkg: without ":arch")
    arch: str | None
    debug_package: str    # what to install for its debug info
    install: str          # the command line that does it (or how to get there)
    installable: bool | None = None   # the package manager has it (None: not asked)


def _run(argv: list[str]) -> str | None:
    """Standard output (also when some of several paths were not found, as
    dpkg -S and rpm -qf then exit 1 after printing the others)."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return out.stdout if out.returncode in (0, 1) else None


def _variants(path: str) -> list[str]:
    """The path as given, its real path, and the merged-/usr twin: dpkg
    knows /lib/x86_64-linux-gnu/libc.so.6 while the maps say /usr/lib/..."""
    out = [path]
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        real = path
    for p in (path, real):
        for a, b in (("/usr/lib/", "/lib/"), ("/lib/", "/usr/lib/"),
                     ("/usr/bin/", "/bin/"), ("/bin/", "/usr/bin/"),
                     ("/usr/sbin/", "/sbin/"), ("/sbin/", "/usr/sbin/")):
            if p.startswith(a):
                out.append(b + p[len(a):])
        out.append(p)
    seen = []
    for p in out:
        if p not in seen:
            seen.append(p)
    return seen


_DPKG_OWNERS: dict = {}      # path -> "pkg[:arch]" or None, from prefetch()


def _askable(path: object) -> bool:
    return isinstance(path, str) and path.startswith("/") and "\0" not in path \
        and "\n" not in path and not _GLOB & set(path) and len(path) <= 4096


def _dpkg_owners(variants: list[str]) -> dict:
    out = _run(["dpkg", "-S", "--", *variants]) or ""
    owners: dict[str, str] = {}
    for line in out.splitlines():
        owner, sep, file = line.partition(": ")
        file = file.strip()
        if sep and file in variants and "diversion" not in owner:
            owners.setdefault(file, owner.split(",")[0].strip())
    return owners


def prefetch(paths: Iterable[str]) -> None:
    """Ask the package manager about many files at once (one dpkg -S, one
    apt-cache policy), for package_of() to answer from."""
    if not shutil.which("dpkg"):
        return
    paths = [p for p in dict.fromkeys(paths) if _askable(p) and p not in _DPKG_OWNERS]
    if not paths:
        return
    spellings = {p: _variants(p) for p in paths}
    owners = _dpkg_owners(list(dict.fromkeys(v for vs in spellings.values() for v in vs)))
    for p, vs in spellings.items():
        _DPKG_OWNERS[p] = next((owners[v] for v in vs if v in owners), None)
    apt_candidates([c for o in _DPKG_OWNERS.values() if o
                    for c in _debian_debug_candidates(o.partition(":")[0])])


@functools.lru_cache(maxsize=4096)
def package_of(path: str) -> Package | None:
    """The package that installed `path`, or None (not packaged, no package
    manager, or a path we do not ask about)."""
    if not _askable(path):
        return None
    variants = _variants(path)
    if shutil.which("dpkg"):
        # One call for every spelling of the path (unless prefetch() asked).
        if path in _DPKG_OWNERS:
            owner = _DPKG_OWNERS[path]
        else:
            owners = _dpkg_owners(variants)
            owner = next((owners[v] for v in variants if v in owners), None)
        if owner is not None:
            pkg, _, arch = owner.partition(":")
            return _debian_package(pkg, arch or None)
    if shutil.which("rpm"):
        out = _run(["rpm", "-qf", "--qf", "%{NAME} %{ARCH}\\n", "--", *variants]) or ""
        for line in out.splitlines():
            fields = line.split()
            if len(fields) == 2 and "not owned" not in line:
                return Package("rpm", fields[0], fields[1], fields[0] + "-debuginfo",
                               "dnf debuginfo-install %s" % fields[0])
    return None


def _debian_debug_candidates(pkg: str) -> list[str]:
    """Packages that may hold pkg's debug info, best first: the -dbg packages
    of the main archive (libc6-dbg, python3.11-dbg for python3.11-minimal and
    libpython3.11-stdlib), then the automatic PKG-dbgsym of the debug archive."""
    out = []
    if pkg in _DEBIAN_DBG:
        out.append(_DEBIAN_DBG[pkg])
    m = re.fullmatch(r"(?:lib)?(python3\.\d+)(?:-minimal|-stdlib|-dev)?", pkg)
    if m:
        out.append(m.group(1) + "-dbg")
    out += [pkg + "-dbgsym", pkg + "-dbg"]
    seen = []
    for name in out:
        if name not in seen:
            seen.append(name)
    return seen


_APT_KNOWN: dict = {}


def apt_candidates(names: Iterable[str]) -> dict:
    """{name: whether apt can install it}, from one `apt-cache policy` run
    (a Candidate that is not "(none)"; a name apt does not know: False);
    {} when apt-cache cannot be asked."""
    names = [n for n in names if re.fullmatch(r"[a-z0-9][a-z0-9+.-]*", n or "")]
    ask = [n for n in names if n not in _APT_KNOWN]
    if ask:
        if not shutil.which("apt-cache"):
            return {}
        out = _run(["apt-cache", "policy", "--", *ask])
        if out is None:
            return {}
        current = None
        for line in out.splitlines():
            if line and not line[0].isspace() and line.rstrip().endswith(":"):
                current = line.rstrip()[:-1].split(":")[0]
                continue
            key, _, value = line.strip().partition(":")
            if key == "Candidate" and current in ask:
                _APT_KNOWN[current] = value.strip() not in ("", "(none)")
        for n in ask:
            _APT_KNOWN.setdefault(n, False)
    return {n: _APT_KNOWN[n] for n in names}


def apt_candidate(name: str) -> bool | None:
    """Whether apt can install `name`; None when apt-cache cannot be asked."""
    return apt_candidates([name]).get(name)


def _debian_release() -> str | None:
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("VERSION_CODENAME="):
                    return line.split("=", 1)[1].strip().strip('"') or None
    except OSError:
        pass
    return None


def _debian_package(pkg: str, arch: str | None) -> Package:
    suffix = ":" + arch if arch else ""
    cands = _debian_debug_candidates(pkg)
    have = apt_candidates(cands)
    asked = bool(have)
    for name in cands:
        if have.get(name):
            return Package("dpkg", pkg, arch, name, "apt-get install %s%s" % (name, suffix),
                           True)
    dbg = pkg + "-dbgsym"
    if not asked:       # apt-cache cannot tell: the usual name, unchecked
        return Package("dpkg", pkg, arch, _DEBIAN_DBG.get(pkg, dbg),
                       "apt-get install %s%s" % (_DEBIAN_DBG.get(pkg, dbg), suffix), None)
    release = _debian_release()
    where = ("the %s-debug suite" % release) if release else "the -debug suite of the release"
    return Package("dpkg", pkg, arch, dbg,
                   "add the distribution's debug archive (%s, as Debian's dbgsym "
                   "packages are not in the main archive) to the apt sources, "
                   "`apt-get update`, then `apt-get install %s%s`" % (where, dbg, suffix), False)
