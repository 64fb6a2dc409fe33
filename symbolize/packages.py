"""Which installed package owns a file, and how to get its debug info.

`dpkg -S PATH` (Debian, Ubuntu) or `rpm -qf PATH` (Fedora, RHEL, SUSE), run
with argument lists (never a shell), a timeout, and only for absolute paths
without glob characters (dpkg -S takes patterns).  Answers are cached per
path for the life of the process.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import NamedTuple

TIMEOUT = 10
_GLOB = set("*?[]\\")
# Debian packages whose debug symbols are not PKG-dbgsym.
_DEBIAN_DBG = {"libc6": "libc6-dbg", "libc6-amd64": "libc6-dbg", "libc6-i386": "libc6-dbg"}


class Package(NamedTuple):
    manager: str          # "dpkg" or "rpm"
    name: str             # the owning package (dpkg: without ":arch")
    arch: str | None
    debug_package: str    # what to install for its debug info
    install: str          # the command line that does it


def _run(argv) -> str | None:
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


@functools.lru_cache(maxsize=4096)
def package_of(path) -> Package | None:
    """The package that installed `path`, or None (not packaged, no package
    manager, or a path we do not ask about)."""
    if not isinstance(path, str) or not path.startswith("/") or "\0" in path \
            or "\n" in path or _GLOB & set(path) or len(path) > 4096:
        return None
    variants = _variants(path)
    if shutil.which("dpkg"):
        # One call for every spelling of the path.
        out = _run(["dpkg", "-S", "--", *variants]) or ""
        for line in out.splitlines():
            owner, sep, file = line.partition(": ")
            if sep and file.strip() in variants and "diversion" not in owner:
                name = owner.split(",")[0].strip()
                pkg, _, arch = name.partition(":")
                dbg = _DEBIAN_DBG.get(pkg, pkg + "-dbgsym")
                return Package("dpkg", pkg, arch or None, dbg,
                               "apt-get install %s%s" % (dbg, ":" + arch if arch else ""))
    if shutil.which("rpm"):
        out = _run(["rpm", "-qf", "--qf", "%{NAME} %{ARCH}\\n", "--", *variants]) or ""
        for line in out.splitlines():
            fields = line.split()
            if len(fields) == 2 and "not owned" not in line:
                return Package("rpm", fields[0], fields[1], fields[0] + "-debuginfo",
                               "dnf debuginfo-install %s" % fields[0])
    return None
