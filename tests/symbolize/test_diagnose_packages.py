"""symbolize.debuginfo.packages: the package owning a file, asked with argument lists."""
import os
import shutil
import subprocess

import pytest

from symbolize.debuginfo import packages
from symbolize.debuginfo.packages import package_of

LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"


@pytest.mark.parametrize("path", ["relative/libc.so.6", "/usr/lib/*.so", "/usr/lib/[a]",
                                  "/usr/lib/x\nlibc", "/a\0b", None, 42, "-S"])
def test_odd_paths_run_nothing(monkeypatch, path):
    ran = []
    monkeypatch.setattr(packages, "_run", lambda argv: ran.append(argv))
    package_of.cache_clear()
    assert package_of(path) is None and ran == []


@pytest.mark.skipif(shutil.which("dpkg") is None or not os.path.exists(LIBC),
                    reason="not a Debian system with %s" % LIBC)
def test_libc_on_debian_is_libc6_with_libc6_dbg():
    package_of.cache_clear()
    # The oracle: dpkg's own answer for the merged-/usr spelling of the path.
    out = subprocess.run(["dpkg", "-S", "/lib/x86_64-linux-gnu/libc.so.6"],
                         capture_output=True, text=True).stdout
    pkg = package_of(LIBC)
    assert pkg is not None and out.startswith(pkg.name + ":")
    assert pkg.debug_package == "libc6-dbg" and "apt-get install libc6-dbg" in pkg.install


def test_unpackaged_file_is_none(tmp_path):
    f = tmp_path / "prog"
    f.write_bytes(b"\x7fELF")
    package_of.cache_clear()
    assert package_of(str(f)) is None
