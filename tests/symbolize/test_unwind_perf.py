"""The unwinder against `perf script` (libdw) on a real
`perf record --call-graph=dwarf` file.

The sample registers, the user-stack copy's place in the file and the
mappings come from `perf report -D`; the stack bytes are read from the file
at that place; perf's unwound frames come from `perf script -F time,ip
--no-inline` (map-relative addresses, callers at return address - 1).
No perfdata code is used: this checks the unwinder alone on perf's input.
"""

import bisect
import os
import re
import shutil
import subprocess

import pytest

from unwind_progs import capture

from symbolize.unwind.cfi import CfiTable
from symbolize.unwind.unwinder import StackSnapshot, unwind_dwarf

BOGUS = 0xFFFFFFFFFFFFFFFF   # perf's last frame of a stack cut by the copy

_SAMPLE = re.compile(r"^(\d+) 0x([0-9a-f]+) \[0x[0-9a-f]+\]: PERF_RECORD_SAMPLE")
_MMAP2 = re.compile(r"PERF_RECORD_MMAP2 (\d+)/\d+: \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) "
                    r"@ (0x[0-9a-f]+|0) .*\]: (\S+) (.*)$")
_REG = re.compile(r"^\.\.\.\. (\w+)\s+0x([0-9a-f]+)")
_USTACK = re.compile(r"^\.\.\. ustack: size (\d+), offset 0x([0-9a-f]+)")


def parse_dump(text):
    samples, maps = [], []
    cur = None
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m:
            cur = {"time": int(m.group(1)), "offset": int(m.group(2), 16), "regs": {}}
            samples.append(cur)
            continue
        m = _MMAP2.search(line)
        if m:
            start = int(m.group(2), 16)
            maps.append({"start": start, "end": start + int(m.group(3), 16),
                         "offset": int(m.group(4), 16), "perms": m.group(5),
                         "path": m.group(6)})
            cur = None
            continue
        if cur is not None:
            m = _REG.match(line)
            if m:
                cur["regs"][m.group(1).lower()] = int(m.group(2), 16)
            m = _USTACK.match(line)
            if m:
                # perf prints the valid (dynamic) size and the offset of the
                # size field in the record; the bytes follow that field
                cur["ustack"] = (int(m.group(1)), int(m.group(2), 16))
    return samples, maps


def parse_script(text):
    chains = {}
    for block in text.strip().split("\n\n"):
        lines = block.strip().splitlines()
        sec, ns = lines[0].strip().rstrip(":").split(".")
        chains[int(sec) * 10**9 + int(ns)] = [int(x.split()[0], 16) for x in lines[1:]]
    return chains


class Maps:
    def __init__(self, maps):
        self.maps = sorted(maps, key=lambda m: m["start"])
        self.starts = [m["start"] for m in self.maps]
        self.modules = {}

    def at(self, avma):
        i = bisect.bisect_right(self.starts, avma) - 1
        if i >= 0 and avma < self.maps[i]["end"]:
            return self.maps[i]
        return None

    def find_module(self, avma):
        m = self.at(avma)
        if m is None or "x" not in m["perms"] or not m["path"].startswith("/"):
            return None
        key = (m["start"], m["path"])
        if key not in self.modules:
            with open(m["path"], "rb") as f:
                bias = capture._load_bias(f, m["start"], m["offset"])
            self.modules[key] = capture.Module(CfiTable.from_elf(m["path"]), bias, m["path"])
        return self.modules[key]

    def relative(self, avma):
        """perf script's map-relative address."""
        m = self.at(avma)
        return avma - m["start"] + m["offset"] if m else avma


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    for tool in ("perf", "gcc"):
        if shutil.which(tool) is None:
            pytest.skip("needs %s" % tool)
    tmp = str(tmp_path_factory.mktemp("perf"))
    exe = capture.build("perf_loop.c", tmp)
    data = os.path.join(tmp, "perf.data")
    rec = subprocess.run(["perf", "record", "-q", "-o", data, "-e", "cpu-clock:u",
                          "-F", "999", "--call-graph=dwarf", "--", exe, "400000"],
                         capture_output=True, text=True)
    if rec.returncode != 0 or not os.path.exists(data):
        pytest.skip("perf record failed: %s" % rec.stderr.strip()[-200:])
    dump = subprocess.run(["perf", "report", "-D", "-i", data],
                          capture_output=True, text=True).stdout
    script = subprocess.run(["perf", "script", "-i", data, "-F", "time,ip", "--ns",
                             "--no-inline"], capture_output=True, text=True).stdout
    samples, maps = parse_dump(dump)
    with open(data, "rb") as f:
        raw = f.read()
    return samples, Maps(maps), parse_script(script), raw


def test_frames_match_perf_script(recording):
    samples, maps, chains, raw = recording
    assert len(samples) >= 50
    exact = cut = longer = 0
    for s in samples:
        size, off = s["ustack"]
        start = s["offset"] + off + 8
        stack = StackSnapshot(s["regs"]["sp"], raw[start:start + size])
        result = unwind_dwarf("x86_64", s["regs"], stack, maps.find_module)
        ours = [maps.relative(result.frames[0])] + [maps.relative(f - 1)
                                                     for f in result.frames[1:]]
        theirs = chains[s["time"]]
        bogus = bool(theirs) and theirs[-1] == BOGUS
        if bogus:
            # perf/libdw ends a stack cut by the copy with a -1 frame
            theirs = theirs[:-1]
            cut += 1
        if ours == theirs:
            exact += 1
        else:
            # never a different frame; at most frames perf did not find
            assert ours[:len(theirs)] == theirs, (
                result.stop_reason, [hex(x) for x in ours], [hex(x) for x in theirs])
            longer += 1
        if bogus:
            assert result.stop_reason in ("stack-exhausted", "outermost")
        elif ours == theirs and result.stop_reason != "outermost":
            # A sample in the dynamic loader's start-up (_dl_start and what it
            # calls): the loader's entry code, which called _dl_start, has no
            # CFI, and perf stops at the same frame.
            last = maps.at(result.frames[-1]) or {}
            assert result.stop_reason == "no-cfi" and "/ld-linux" in last.get("path", ""), (
                result.stop_reason, [hex(x) for x in ours], last)
    # the workload recurses past the 8 KiB copy often enough to test both ends
    assert 0 < cut < len(samples)
    assert exact >= 0.9 * len(samples)
    print("%d samples: %d as perf, %d with frames perf lacks; %d cut by the stack copy"
          % (len(samples), exact, longer, cut))
