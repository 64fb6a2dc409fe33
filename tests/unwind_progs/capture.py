"""Ground truth for the unwinder tests: build a small C program, stop it
under gdb, and return what a perf --call-graph=dwarf sample would hold
(registers, a stack window from sp, the mappings) together with gdb's
backtrace.  `Capture` turns that into the unwinder's inputs: a
`read_stack` over the window and a `find_module` over the mappings."""

import bisect
import json
import os
import shutil
import subprocess
import tempfile

import pytest

from symbolize.unwind.cfi import CfiTable
from symbolize.unwind.unwinder import StackSnapshot

HERE = os.path.dirname(os.path.abspath(__file__))


class ToolMissing(Exception):
    pass


def require_tools():
    for tool in ("gcc", "gdb"):
        if shutil.which(tool) is None:
            raise ToolMissing("%s is not installed" % tool)


def build(source, out_dir, cflags=("-O2",), strip_eh_frame=False, name=None):
    """Compile tests/unwind_progs/<source> into out_dir; return the binary."""
    require_tools()
    exe = os.path.join(out_dir, name or os.path.splitext(source)[0])
    subprocess.run(["gcc", *cflags, "-o", exe, os.path.join(HERE, source)],
                   check=True, capture_output=True)
    if strip_eh_frame:
        if shutil.which("objcopy") is None:
            raise ToolMissing("objcopy is not installed")
        subprocess.run(["objcopy", "--remove-section=.eh_frame",
                        "--remove-section=.eh_frame_hdr", exe],
                       check=True, capture_output=True)
    return exe


def build_and_record(tmp, source, cflags, perf, perf_options, argv, exit_codes=(0,)):
    """Build tests/unwind_progs/<source> into the directory tmp and record
    it there, `perf record -q -o tmp/NAME.data PERF_OPTIONS -- BINARY ARGV`:
    (perf.data path, binary), or pytest.skip where either cannot be done
    here (the program's exit status must be one of exit_codes)."""
    try:
        exe = build(source, str(tmp), cflags=cflags)
    except (ToolMissing, subprocess.CalledProcessError) as exc:
        pytest.skip("cannot build the program: %s" % exc)
    data = os.path.join(str(tmp), os.path.splitext(source)[0] + ".data")
    rec = subprocess.run([perf, "record", "-q", "-o", data, *perf_options, "--", exe, *argv],
                         capture_output=True, text=True, cwd=str(tmp))
    if rec.returncode not in exit_codes or not os.path.exists(data):
        pytest.skip("perf record failed: %s" % rec.stderr.strip()[-200:])
    return data, exe


def scripts(perf, data, options=()):
    """(perfdata script's text, perf script's text) of one recording with
    the same options; perfdata must exit 0."""
    from conftest import run_cli
    rc, ours, err = run_cli(["script", str(data), *options])
    assert rc == 0, err
    theirs = subprocess.run([perf, "script", "-i", str(data), *options],
                            capture_output=True, text=True).stdout
    return ours, theirs


def run_gdb(exe, stops, window=8192, timeout=120, symbols=()):
    """Stop `exe` under gdb at each of `stops` ({'break': spec, 'stepi': n})
    and return one Capture per stop.  `symbols` are names whose addresses
    gdb reports at each stop (Capture.symbols)."""
    require_tools()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "capture.json")
        env = dict(os.environ)
        env["UNWIND_CAPTURE_SPEC"] = json.dumps({"out": out, "stops": stops,
                                                 "window": window,
                                                 "symbols": list(symbols)})
        proc = subprocess.run(["gdb", "-nx", "-batch", "-x",
                               os.path.join(HERE, "gdb_capture.py"), "--args", exe],
                              env=env, capture_output=True, text=True, timeout=timeout)
        if not os.path.exists(out):
            raise RuntimeError("gdb wrote nothing:\n" + proc.stdout + proc.stderr)
        with open(out) as f:
            raw = json.load(f)
    for r in raw:
        if "error" in r:
            raise RuntimeError("gdb: " + r["error"])
    return [Capture(r) for r in raw]


class Module:
    def __init__(self, cfi, bias, path):
        self.cfi = cfi
        self.bias = bias
        self.path = path


_CFI_CACHE = {}


def _load_bias(elf_stream, map_start, map_offset):
    """avma - svma for a mapping of the file at map_start/map_offset."""
    from elftools.elf.elffile import ELFFile
    elf = ELFFile(elf_stream)
    for seg in elf.iter_segments():
        if seg["p_type"] != "PT_LOAD":
            continue
        # mappings start at a page boundary below the segment's file offset
        seg_off = seg["p_offset"] & ~0xFFF
        if seg_off <= map_offset < max(seg["p_offset"] + seg["p_filesz"], seg_off + 1):
            return map_start - map_offset - (seg["p_vaddr"] - seg["p_offset"])
    return map_start - map_offset


class Capture:
    def __init__(self, raw):
        self.raw = raw
        self.regs = raw["regs"]
        self.read_stack = StackSnapshot(raw["stack_base"], bytes.fromhex(raw["stack"]))
        self.gdb_pcs = raw["gdb_pcs"]
        self.gdb_names = raw["gdb_names"]
        self.gdb_stop = raw["gdb_stop"]
        self.symbols = raw.get("symbols", {})
        self.maps = sorted(raw["maps"], key=lambda m: m["start"])
        self._starts = [m["start"] for m in self.maps]
        self._modules = {}
        self._cfi_overrides = {}
        self.lookups = 0

    def use_cfi(self, path, table):
        """Unwind `path` with `table` instead of the file's own CFI."""
        self._cfi_overrides[path] = table
        self._modules.clear()

    def unwind(self, max_depth=127):
        from symbolize.unwind.unwinder import unwind_dwarf
        return unwind_dwarf("x86_64", self.regs, self.read_stack, self.find_module,
                            max_depth=max_depth)

    def window_end(self):
        return self.read_stack.end

    def map_of(self, avma):
        for m in self.maps:
            if m["start"] <= avma < m["end"]:
                return m
        return None

    def module_at(self, avma):
        i = bisect.bisect_right(self._starts, avma) - 1
        if i < 0 or avma >= self.maps[i]["end"]:
            return None
        m = self.maps[i]
        key = (m["start"], m["path"])
        if key in self._modules:
            return self._modules[key]
        mod = None
        path = m["path"]
        if path == "[vdso]" and self.raw.get("vdso"):
            import io
            data = bytes.fromhex(self.raw["vdso"]["data"])
            mod = Module(CfiTable.from_elf(data), _load_bias(io.BytesIO(data), m["start"], 0),
                         path)
        elif path.startswith("/") and os.path.exists(path):
            table = self._cfi_overrides.get(path)
            if table is None:
                if path not in _CFI_CACHE:
                    _CFI_CACHE[path] = CfiTable.from_elf(path)
                table = _CFI_CACHE[path]
            with open(path, "rb") as f:
                bias = _load_bias(f, m["start"], m["offset"])
            mod = Module(table, bias, path)
        self._modules[key] = mod
        return mod

    def find_module(self, avma):
        self.lookups += 1
        mod = self.module_at(avma)
        if mod is not None and "x" not in self._perms(avma):
            return None
        return mod

    def _perms(self, avma):
        i = bisect.bisect_right(self._starts, avma) - 1
        return self.maps[i]["perms"]

    def symbol(self, avma):
        """gdb's name for a frame address, for failure messages."""
        if avma in self.gdb_pcs:
            return self.gdb_names[self.gdb_pcs.index(avma)]
        return "?"
