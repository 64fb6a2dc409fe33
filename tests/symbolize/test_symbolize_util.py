"""Helpers shared by the tests/symbolize/test_symbolize_*.py files (no tests here).

The oracles are the GNU tools (gcc, nm, readelf, objdump, addr2line, c++filt);
each helper skips the calling test with a reason when its tool is absent.
"""
import os
import re
import shutil
import subprocess

import pytest

CAN_FILE = "/usr/lib/x86_64-linux-gnu/libc.so.6"


def need(*tools):
    for t in tools:
        if shutil.which(t) is None:
            pytest.skip(f"{t} not installed")


def run(*cmd, check=True) -> str:
    need(cmd[0])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed: {p.stderr}")
    return p.stdout


def compile_c(directory, name, source, *flags, lang="c"):
    """Compile source into directory/name with gcc or g++; returns the path."""
    cc = "gcc" if lang == "c" else "g++"
    need(cc)
    src = os.path.join(str(directory), name + (".c" if lang == "c" else ".cpp"))
    with open(src, "w") as f:
        f.write(source)
    out = os.path.join(str(directory), name)
    p = subprocess.run([cc, *flags, src, "-o", out], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"{cc} {' '.join(flags)} failed: {p.stderr.strip()[:200]}")
    return out


def readelf_build_id(path):
    m = re.search(r"Build ID: ([0-9a-f]+)", run("readelf", "-n", path))
    return m.group(1) if m else None


def nm_defined(path, dynamic=False):
    """[(address, type letter, name)] of defined symbols, as nm lists them."""
    args = ["nm", "--defined-only"] + (["-D"] if dynamic else []) + [path]
    out = []
    for line in run(*args, check=False).splitlines():
        parts = line.split()
        if len(parts) == 3:
            out.append((int(parts[0], 16), parts[1], parts[2]))
    return out


def readelf_symbols(path, dynamic=False):
    """[(value, size, type, bind, vis, ndx, name)] from readelf -sW."""
    out = []
    txt = run("readelf", "--dyn-syms" if dynamic else "--syms", "-W", path, check=False)
    for line in txt.splitlines():
        m = re.match(r"\s*\d+:\s+([0-9a-f]+)\s+(\d+|0x[0-9a-f]+)\s+(\w+)\s+(\w+)\s+(\w+)\s+(\w+)\s+(\S+)", line)
        if m:
            size = int(m.group(2), 0)
            name = m.group(7).split("@")[0]
            out.append((int(m.group(1), 16), size, m.group(3), m.group(4), m.group(5), m.group(6), name))
    return out


def objdump_plt_labels(path):
    """{address: 'name@plt'} from the stub labels objdump -d prints."""
    out = {}
    for line in run("objdump", "-d", path).splitlines():
        m = re.match(r"([0-9a-f]+) <(.+@plt)>:", line)
        if m:
            out[int(m.group(1), 16)] = m.group(2)
    return out


def libc_and_debug():
    """(libc path, its libc6-dbg debug file) or skip."""
    if not os.path.exists(CAN_FILE):
        pytest.skip("no x86_64 libc.so.6")
    bid = readelf_build_id(CAN_FILE)
    dbg = f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug" if bid else None
    if not dbg or not os.path.exists(dbg):
        pytest.skip("libc6-dbg debug file not installed")
    return CAN_FILE, dbg
