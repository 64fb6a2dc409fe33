"""Files named inside a perf.data are opened only if they are regular files
within the size limit: a map named /dev/zero, a FIFO, a directory, a file
over the limit, a symlink to a device; a .gnu_debuglink cannot climb out of
the debug directories with '../'; a build-id is validated hex before it
becomes part of a path; a JIT perf map that is a FIFO is not opened.

Every test records what builtins.open, io.open and os.open are asked to
open while the whole script pipeline runs with the default locator (the
original paths, ~/.debug, /usr/lib/debug), and checks that no planted path
is among them.  A FIFO that were opened would block: each run has an alarm.
"""
import builtins
import io
import os
import shutil
import struct
from pathlib import Path

import pytest

import perfdata
from perfdata.format.constants import RecordType as RT, SampleType as ST
from limits import time_limit
from synth import Builder
from test_reader_synthetic import make_attr

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent

MISC_USER = 2
MISC_MMAP_BUILD_ID = 1 << 14
PID = 3_999_901          # also names /tmp/perf-PID.map


def alarm(seconds=20):
    return time_limit(seconds, TimeoutError, "blocked (a FIFO opened?)")


@pytest.fixture
def opened(monkeypatch):
    """Paths given to builtins.open / io.open / os.open during the test."""
    seen = []
    real_open, real_os_open = builtins.open, os.open

    def rec_open(file, *args, **kw):
        if isinstance(file, (str, bytes, os.PathLike)):
            seen.append(os.fsdecode(file))
        return real_open(file, *args, **kw)

    def rec_os_open(path, *args, **kw):
        seen.append(os.fsdecode(path))
        return real_os_open(path, *args, **kw)
    monkeypatch.setattr(builtins, "open", rec_open)
    monkeypatch.setattr(io, "open", rec_open)
    monkeypatch.setattr(os, "open", rec_os_open)
    return seen


def _resolved(paths):
    out = set()
    for p in paths:
        try:
            out.add(os.path.realpath(p))
        except (OSError, ValueError):
            pass
    return out


def _mmap2(b, a, filename, start=0x400000, pgoff=0, build_id=None, length=0x10000):
    if build_id is None:
        union = struct.pack("<IIQQ", 8, 1, 1234, 0)
        misc = MISC_USER
    else:
        union = struct.pack("<BBH", len(build_id), 0, 0) + build_id.ljust(20, b"\0")
        misc = MISC_USER | MISC_MMAP_BUILD_ID
    name = filename.encode() + b"\0"
    name += bytes(-len(name) % 8)
    body = struct.pack("<IIQQQ", PID, PID, start, length, pgoff) + union + \
        struct.pack("<II", 5, 2) + name
    return b.record(RT.MMAP2, body + b.trailer(a, pid=PID, tid=PID, time=1), misc=misc)


def perf_data(tmp_path, maps, ips):
    """A file-mode perf.data: MMAP2 records (filename, start, pgoff[, build_id])
    and user SAMPLEs of pid PID at `ips`."""
    b = Builder(True)
    a = make_attr(ST.IP | ST.TID | ST.TIME, [1])
    recs = [_mmap2(b, a, *m) for m in maps]
    for n, ip in enumerate(ips):
        recs.append(b.sample(a, {"ip": ip, "pid": PID, "tid": PID, "time": 10 + n},
                             misc=MISC_USER))
    path = tmp_path / "hostile.data"
    path.write_bytes(b.file([a], recs))
    return path


def symbolize_all(path):
    """The script pipeline with the default locator; the frames' dsos and the
    symbolizer's warnings."""
    from perfdata.resolve.symbolized import SampleSymbolizer
    from perfdata.views.script_formatter import ScriptFormatter
    from symbolize import DebugInfoLocator, Symbolizer
    symbolizer = Symbolizer(DebugInfoLocator())
    text = []
    with alarm(), perfdata.open(str(path)) as pf:
        fmt = ScriptFormatter(pf)
        ss = SampleSymbolizer(pf, symbolizer)
        for sample in ss:
            text.append(fmt.format(sample))
    warnings = list(symbolizer.warnings) + list(symbolizer.locator.warnings)
    return "".join(text), warnings


def test_device_fifo_directory_symlink_and_huge_file_are_not_opened(tmp_path, opened):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    directory = tmp_path / "dir"
    directory.mkdir()
    link = tmp_path / "link-to-zero"
    link.symlink_to("/dev/zero")
    huge = tmp_path / "huge"
    with open(huge, "wb") as f:
        f.truncate((4 << 30) + 1)          # sparse, over MAX_BINARY_SIZE
    planted = ["/dev/zero", "/dev/urandom", str(fifo), str(directory), str(link), str(huge)]
    maps = [(p, 0x400000 + i * 0x100000) for i, p in enumerate(planted)]
    ips = [0x400000 + i * 0x100000 + 0x40 for i in range(len(planted))]
    path = perf_data(tmp_path, maps, ips)
    opened.clear()              # what the test itself wrote is not counted
    text, warnings = symbolize_all(path)
    assert text.count("\n") >= len(planted)
    bad = _resolved(opened) & _resolved(planted)
    assert not bad, bad
    # the perf.data itself was opened: the recorder works
    assert str(path) in opened
    assert os.path.realpath(REPO / "samples") not in _resolved(opened)


def test_debuglink_cannot_climb_out(tmp_path, opened):
    src = REPO / "samples" / "bin" / "stripped"
    debug = REPO / "samples" / "debug" / "stripped.debug"
    if not src.is_file() or not debug.is_file():
        pytest.skip("samples/bin/stripped or its debug file missing")
    bindir = tmp_path / "a" / "b" / "bin"
    bindir.mkdir(parents=True)
    binary = bindir / "stripped"
    data = bytearray(src.read_bytes())
    old = b"stripped.debug\0"
    at = data.find(old)
    assert at > 0
    data[at:at + len(old)] = b"../../x.debug\0\0"          # same length, CRC kept
    binary.write_bytes(bytes(data))
    planted = tmp_path / "a" / "x.debug"                   # where ../../ would lead
    shutil.copy(debug, planted)
    from symbolize.elffile import Binary
    b = Binary(str(binary))
    assert b.ok and b.debuglink is not None and b.debuglink[0] == "../../x.debug"
    b.close()
    path = perf_data(tmp_path, [(str(binary), 0x400000, 0)], [0x401140, 0x401150])
    opened.clear()
    text, warnings = symbolize_all(path)
    assert str(binary) in opened            # the binary itself was read
    assert str(planted) not in _resolved(opened)
    assert any("debuglink" in w and "rejected" in w for w in warnings), warnings


@pytest.mark.parametrize("bid", ["ab/../../../../etc/passwd", "../" * 8 + "etc/passwd",
                                 "abcd\0/etc/passwd", "ab" * 10 + "/.."])
def test_build_id_is_hex_before_it_is_a_path(bid, tmp_path, opened):
    from symbolize import DebugInfoLocator, Symbolizer
    locator = DebugInfoLocator(debug_dirs=[str(tmp_path)])
    cands = locator.candidates_for_binary("/nonexistent/prog", bid) + \
        locator.candidates_for_debug("/nonexistent/prog", bid)
    assert all(".." not in c.path and "passwd" not in c.path for c in cands), cands
    symbolizer = Symbolizer(locator)
    with alarm():
        symbolizer.lookup("/nonexistent/prog", bid, file_offset=0x1000)
    assert not [p for p in opened if "passwd" in p or ".." in p], opened
    assert any("invalid build-id" in w for w in symbolizer.warnings + locator.warnings)


def test_build_id_from_the_file_is_hex(tmp_path, opened):
    """MMAP2 build-ids are bytes in the file: they become hex, whatever they hold."""
    raw = b"/../../etc/passwd\0\0\0"
    path = perf_data(tmp_path, [("/nonexistent/prog", 0x400000, 0, raw)], [0x400040])
    with perfdata.open(str(path)) as pf:
        mm = [r.parse() for r in pf.records() if r.type == RT.MMAP2]
    assert mm[0]["build_id"] == raw.hex()
    opened.clear()
    symbolize_all(path)
    assert not [p for p in opened if "passwd" in p], opened


def test_jit_perf_map_fifo_is_not_opened(tmp_path, opened, monkeypatch):
    from symbolize.symbols.perfmap import PerfMap
    asked = []
    real = PerfMap.from_file.__func__
    monkeypatch.setattr(PerfMap, "from_file",
                        classmethod(lambda cls, p: (asked.append(p), real(cls, p))[1]))
    perfmap = Path("/tmp/perf-%d.map" % PID)
    if perfmap.exists() or perfmap.is_symlink():
        pytest.skip("%s exists" % perfmap)
    os.mkfifo(perfmap)
    try:
        path = perf_data(tmp_path, [("//anon", 0x7f0000000000, 0)], [0x7f0000000100])
        opened.clear()
        symbolize_all(path)
        assert asked == [str(perfmap)]      # the map was looked for ...
        assert str(perfmap) not in opened   # ... and not opened
    finally:
        perfmap.unlink()


def test_no_shell_anywhere():
    """External commands (dpkg -S, rpm -qf) take argument lists: nothing in
    the code hands a string to a shell."""
    offenders = []
    for top in ("perfdata", "symbolize"):
        for py in sorted((REPO / top).rglob("*.py")):
            text = py.read_text(errors="replace")
            for needle in ("shell=True", "os.system(", "os.popen(", "commands.getoutput"):
                if needle in text:
                    offenders.append("%s: %s" % (py.relative_to(REPO), needle))
    cli = (REPO / "cli.py").read_text()
    offenders += ["cli.py: %s" % n for n in ("shell=True", "os.system(") if n in cli]
    assert not offenders, offenders
