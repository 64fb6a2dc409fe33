#!/usr/bin/env python3
"""The compiled extensions (perfdata/core/_*.c, symbolize/symbols/_symtab.c) under fuzz: run by
tools/fuzz-compiled.sh, which builds them with AddressSanitizer and UBSan and
starts this with the sanitizer runtime preloaded.

    python3 tools/fuzz_compiled.py --ext-dir BUILD_LIB [--inputs 100000] [--seed 1]
                                   [--script-every 20] [--out DIR]

The extensions in --ext-dir are loaded in place of any built in the checkout
(and checked to be the ones that run).  Seeds are the fuzz harness's
(tests/fuzz/harness.py: the bundled recordings and the corpus, cut to their
first records and analysed: where the records, their size fields, the
counts inside samples, the header and attr fields are).  Each input is a
seed with one to four edits: bit flips, a byte set, eight bytes of garbage,
a record's size set to a hostile value, a type changed, a count (callchain
nr, branch nr, stack size, raw size ...) set past the end, a header or attr
field set to a hostile value, a cut.  Each input goes through

* `perfdata stats` on the compiled path (the C walk and the Python walker
  taking turns) and on the pure path: exit 0 or 2, no traceback, the same
  bytes out (a difference is a finding: the compiled path must be exact);
* walk_block itself over the input's data section, in blocks cut at random
  places, each block in a buffer of exactly its size (malloc'd, so that the
  sanitizer's red zone is the byte after it), with the events' ids and the
  per-event tables varied;
* LeafCounter.consume (annotate's compiled leaf counter) over the input's
  bytes cut into sample bodies at random places, each in a buffer of
  exactly its size, with the events' layouts (offsets up to the limit
  set_layout takes), the ranges it is told and the cpumodes varied;
* the DWARF unwinder's compiled walk (perfdata.core._unwind) with a stack
  copy cut from the input in a buffer of exactly its size, hostile
  registers and rows (tools/fuzz_unwind.py);
* every --script-every'th input, `perfdata script` on the compiled core
  (perfdata.core._core, where built) and `perfdata offcpu` (the sums of
  perfdata.core._switches): exit 0 or 2, no traceback; script's compiled
  record walk (RecordWalk) against PerfFile.records, with a SampleText,
  then with or without one as one worker of a sharded run (set_shard) or
  alone; and annotate's counts (the compiled leaf counter's and the pure
  path's) the same.

* every --symtab-every'th input, a mutated kallsyms text, a mutated ELF
  file and a random table through symbolize/symbols/_symtab.c, compared
  with the pure path (tests/symbolize/test_symbolize_compiled.py), and its readers
  called on exact-size buffers.

Then every corpus file and fuzz crasher (tests/regressions) unmutated the
same way.  A sanitizer report stops the process (the shell script says so);
the input being run is always in OUT/current.data.  Prints the figures at
the end: inputs, time, findings."""
from __future__ import annotations

import argparse
import json
import ctypes
import importlib.machinery
import importlib.util
import os
import random
import struct
import sys
import time
from array import array
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "fuzz"))
# (the tests' helpers, in their per-layer folders: test_core_walk's and
# test_annotate_core's comparisons, test_symbolize_compiled's)
sys.path.insert(0, str(REPO / "tests" / "core"))
sys.path.insert(0, str(REPO / "tests" / "symbolize"))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

_LIBC = ctypes.CDLL(None)
_LIBC.malloc.restype = ctypes.c_void_p
_LIBC.malloc.argtypes = [ctypes.c_size_t]
_LIBC.free.argtypes = [ctypes.c_void_p]

HOSTILE = (0, 1, 2, 7, 8, 9, 15, 16, 63, 64, 255, 256, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
           0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, 1 << 63, (1 << 64) - 1)


def load_extensions(ext_dir: Path) -> dict[str, str]:
    """Put the extensions built in ext_dir in place of the checkout's."""
    import perfdata.core
    import symbolize.symbols
    from symbolize.symbols import compiled as symbolize_compiled
    loaded = {}
    for package, where in ((perfdata.core, ext_dir / "perfdata" / "core"),
                           (symbolize.symbols, ext_dir / "symbolize" / "symbols")):
        for so in sorted(where.glob("_*.so")):
            name = package.__name__ + "." + so.name.split(".")[0]
            loader = importlib.machinery.ExtensionFileLoader(name, str(so))
            spec = importlib.util.spec_from_file_location(name, str(so), loader=loader)
            assert spec is not None
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            sys.modules[name] = module
            setattr(package, name.rsplit(".", 1)[1], module)
            loaded[name] = str(so)
    symbolize_compiled._imported[:] = [sys.modules.get("symbolize.symbols._symtab")]
    return loaded


def exact_buffer(data: bytes) -> tuple[int, memoryview]:
    """data in a malloc'd buffer of exactly its size (the sanitizer's red
    zone the byte after it): (the pointer to free, a view of it)."""
    n = len(data)
    ptr = _LIBC.malloc(max(n, 1))
    ctypes.memmove(ptr, data, n)
    return ptr, memoryview((ctypes.c_ubyte * n).from_address(ptr)).cast("B")


class SymtabRun:
    """symbolize/symbols/_symtab.c under fuzz: hostile kallsyms texts and
    ELF symbol sections (tests/symbolize/test_symbolize_compiled.py's mutators),
    each compared with the pure path there (a difference is a finding),
    and each handed to the C functions in exact-size buffers."""

    def __init__(self, out: Path) -> None:
        import test_symbolize_compiled as t
        self.t = t
        self.out = out
        # (and a kernel with modules: their symbols out of order, which the
        # C sorts in place)
        self.kallsyms = [_head_and_tail(x) for x in t._kallsyms_texts()] + [
            t.SYNTHETIC, t.kernel_with_modules(random.Random(3))]
        self.elves = [open(p, "rb").read() for p in t._real_binaries()
                      if os.path.getsize(p) < 4 << 20][:3]
        self.inputs = 0

    def one(self, rng: random.Random, finding) -> None:
        from symbolize.symbols import _symtab as mod  # type: ignore[attr-defined]
        self.inputs += 1
        text = self.t.mutate_kallsyms(rng.choice(self.kallsyms), rng)
        ptr, view = exact_buffer(text)
        try:
            # (head and tail: the room the cache file's header and identity
            # take; head a multiple of 8)
            head, tail = rng.choice((0, 8, 64)), rng.choice((0, 7, 300))
            own = mod.parse_kallsyms(view, head, tail)
            # (and laid out in a buffer of exactly the room it asks for, as
            # into a cache file mapped: the same table)
            room = mod.kallsyms_room(view, head, tail)
            out_ptr, out = exact_buffer(bytes(room))
            try:
                got = mod.parse_kallsyms(view, head, tail, out)
                same = got is None and own is None or got is not None and own is not None and \
                    got[:3] == own[:3] and (own[3] is None or out[:len(own[3])] == own[3])
            finally:
                out.release()
                _LIBC.free(out_ptr)
            if not same:
                finding("kallsyms: laid out in a buffer handed over, another table", text)
        finally:
            view.release()
            _LIBC.free(ptr)
        try:
            self.t.compare_kallsyms(text, str(self.out / "kallsyms-cache"))
        except AssertionError:
            finding("kallsyms: compiled table differs from pure", text)
        if self.elves:
            self.elf(rng.choice(self.elves), rng, finding)
        self.t.compare_fixup(rng, rng.choice((2, 9, 64)))
        self.fixup_names(rng)

    def fixup_names(self, rng: random.Random) -> None:
        """fixup() comparing names in C: random mangled-looking names (the
        demangler on garbage), and a choose that empties the names list
        (C reads it again after each call back)."""
        from symbolize.symbols import _symtab as mod  # type: ignore[attr-defined]
        n = rng.choice((2, 5, 40))
        names = ["".join(rng.choice("_ZNRS1ySCEv9@ \x00\u00e9") for _ in range(rng.randrange(12)))
                 for _ in range(n)]

        def choose(a: int, b: int) -> bool:
            if rng.random() < 0.3:
                del names[rng.randrange(len(names) + 1):]
            return rng.random() < 0.5
        starts = array("Q", (rng.choice((0, 16)) for _ in range(n)))
        sizes = array("Q", (rng.choice((0, 8)) for _ in range(n)))
        bindings = bytes(rng.choice((0, 1, 2)) for _ in range(n))
        mod.fixup(starts, sizes, bindings, choose, names, rng.choice((-1, 0, 3)))

    def elf(self, data: bytes, rng: random.Random, finding) -> None:
        from symbolize.symbols import _symtab as mod  # type: ignore[attr-defined]
        data = self.t.mutate_elf(data, rng)
        path = self.out / "current.elf"
        path.write_bytes(data)
        try:
            self.t.compare_elf(str(path), modes=(("p", rng.random() < 0.5),))
        except AssertionError:
            finding("ELF symbols: compiled table differs from pure", data)
        # the reader on a stretch of the file as entries and another as names
        fields = ((0, 4), (8, 8), (16, 8), (4, 1), (5, 1), (6, 2)) if rng.random() < 0.5 else \
            ((0, 4), (4, 4), (8, 4), (12, 1), (13, 1), (14, 2))
        size = 24 if fields[1] == (8, 8) else 16
        at = rng.randrange(len(data))
        entries = data[at:at + rng.randrange(4 * size)]
        at = rng.randrange(len(data))
        names = data[at:at + rng.randrange(256)]
        sections = bytes(rng.randrange(4) for _ in range(rng.randrange(8)))
        bufs = [exact_buffer(b) for b in (entries, names, sections)]
        try:
            mod.read_symbols(bufs[0][1], bufs[1][1], fields, size, rng.random() < 0.5,
                             bufs[2][1], rng.random() < 0.5, rng.random() < 0.5)
            # the relocations' and the PLT stubs' readers on the same stretches
            # (as relocations, symbol entries and names; as code)
            mod.relocs(bufs[0][1], rng.choice((4, 8)), rng.random() < 0.5, rng.random() < 0.5,
                       (6, 7, 37, 1026), bufs[0][1], size, (0, 4, rng.random() < 0.5),
                       bufs[1][1])
            mod.plt_slots(bufs[0][1], rng.choice((0, 1 << 63, (1 << 64) - 8)),
                          rng.choice((0, 1, 16)), rng.choice((1, 6, 8, 16, 32)),
                          rng.choice((0, 1, 2)), rng.choice((0, (1 << 64) - 1)))
        finally:
            for ptr, view in bufs:
                view.release()
                _LIBC.free(ptr)


def _head_and_tail(text: bytes, part: int = 30_000) -> bytes:
    """A kallsyms text's first and last lines, about part bytes of each: the
    kernel's own symbols and the modules' (the page-end rule of each module's
    last symbol), at a size whose pure-path comparison costs milliseconds (the
    whole 200 KB texts made the comparison two thirds of a run's time)."""
    if len(text) <= 2 * part:
        return text
    head = text[:part]
    tail = text[-part:]
    return head[:head.rfind(b"\n") + 1] + tail[tail.find(b"\n") + 1:]


def mutate(seed, rng: random.Random) -> bytes:
    buf = bytearray(seed.data)
    u = "<" if seed.little else ">"

    def put(off: int, width: int, value: int) -> None:
        if 0 <= off and off + width <= len(buf):
            struct.pack_into(u + {1: "B", 2: "H", 4: "I", 8: "Q"}[width], buf, off,
                             value & ((1 << (8 * width)) - 1))

    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        roff, rsize, _ = rng.choice(seed.records)
        if kind < 0.15:
            for _ in range(rng.randint(1, 8)):
                at = rng.randrange(roff, roff + rsize)
                if at < len(buf):
                    buf[at] ^= 1 << rng.randrange(8)
        elif kind < 0.25:
            at = rng.randrange(len(buf))
            buf[at] = rng.randrange(256)
        elif kind < 0.35:
            at = rng.randrange(roff, roff + rsize)
            buf[at:at + 8] = rng.randbytes(8)
        elif kind < 0.55:
            put(roff + 6, 2, rng.choice([0, 1, 4, 7, 8, 9, 16, rsize - 8, rsize - 1, rsize + 1,
                                         rsize + 8, 2 * rsize, 0xFFF8, 0xFFFF,
                                         rng.randrange(0x10000)]))
        elif kind < 0.65:
            put(roff, 4, rng.choice([0, 1, 3, 9, 10, 13, 64, 68, 69, 70, 81, 82, 83, 255, 256,
                                     rng.getrandbits(32)]))
        elif kind < 0.8 and seed.counts:
            off, width, croff, crsize = rng.choice(seed.counts)
            put(off, width, rng.choice([crsize, crsize // 8, crsize // 8 + 1, crsize // 8 + 2,
                                        rng.choice(HOSTILE)]))
        elif kind < 0.87 and (seed.header_fields or seed.attr_fields):
            off, width = rng.choice(seed.header_fields + seed.attr_fields)
            put(off, width, rng.choice(HOSTILE + (rng.getrandbits(8 * width),)))
        elif kind < 0.92 and seed.strings:
            start, end = rng.choice(seed.strings)
            buf[start:end] = rng.choice((b"A", b"/", b"\xff")) * (end - start)
        else:
            del buf[rng.randrange(roff, roff + rsize + 1):]
            break
    return bytes(buf)


class Run:
    def __init__(self, out: Path, script_every: int, pure_every: int) -> None:
        self.out = out
        self.path = out / "current.data"
        self.script_every = script_every
        self.pure_every = pure_every
        self.compared = 0
        self.layouts: dict[str, tuple[int, int, list[int], int]] = {}
        self.inputs = self.direct_blocks = self.scripts = self.walks = self.unwinds = 0
        self.leaf_bodies = self.annotates = 0
        self.findings: list[tuple[str, str]] = []
        self.outcomes: dict[str, int] = {}

    def finding(self, what: str, data: bytes) -> None:
        import zlib
        name = "finding-%08x.data" % (zlib.crc32(data) & 0xFFFFFFFF)
        (self.out / name).write_bytes(data)
        self.findings.append((what, name))
        print("FINDING:", what, "->", self.out / name, flush=True)

    def cli(self, args: list[str], pure: bool) -> tuple[int, str, str]:
        from conftest import run_cli
        if pure:
            os.environ["PERFDATA_CORE"] = "pure"
        else:
            os.environ.pop("PERFDATA_CORE", None)
        try:
            return run_cli(args)
        finally:
            os.environ.pop("PERFDATA_CORE", None)

    def one(self, data: bytes, rng: random.Random, name: str, compare: bool = False) -> None:
        self.path.write_bytes(data)
        self.inputs += 1
        compiled = self.cli(["stats", str(self.path)], pure=False)
        runs = [(compiled, "compiled")]
        if compare or self.inputs % self.pure_every == 0:
            self.compared += 1
            pure = self.cli(["stats", str(self.path)], pure=True)
            runs.append((pure, "pure"))
            if compiled != pure:
                self.finding("stats: compiled output differs from pure", data)
        for got, how in runs:
            if got[0] not in (0, 2) or "Traceback" in got[2] or "internal error" in got[2]:
                self.finding("stats (%s) exit %s: %s" % (how, got[0], got[2][-300:]), data)
        key = "stats=%d" % compiled[0]
        self.outcomes[key] = self.outcomes.get(key, 0) + 1
        self.direct(data, rng, name)
        self.leaves(data, rng)
        self.unwind(data, rng)
        if self.script_every and self.inputs % self.script_every == 0:
            self.scripts += 1
            got = self.cli(["script", str(self.path)], pure=False)
            if got[0] not in (0, 2) or "Traceback" in got[2] or "internal error" in got[2]:
                self.finding("script (compiled) exit %s: %s" % (got[0], got[2][-300:]), data)
            self.walk(data, rng)
            # offcpu's sums of a file without stacks (perfdata/core/_switches.c)
            got = self.cli(["offcpu", str(self.path)], pure=False)
            if got[0] not in (0, 2) or "Traceback" in got[2] or "internal error" in got[2]:
                self.finding("offcpu (compiled) exit %s: %s" % (got[0], got[2][-300:]), data)
            self.annotate(data)

    def annotate(self, data: bytes) -> None:
        """annotate's counts by the compiled leaf counter against the pure
        path's (test_annotate_core's comparison; not the command itself:
        capstone's library cannot be loaded under the sanitizers)."""
        import perfdata
        from test_annotate_core import _gathered
        self.annotates += 1
        got = []
        for pure in (False, True):
            if pure:
                os.environ["PERFDATA_CORE"] = "pure"
            try:
                functions, totals, _ = _gathered(self.path, [])
                got.append((functions, totals))
            except perfdata.PerfDataError as exc:
                got.append(("error", str(exc)))
            except Exception as exc:
                self.finding("annotate's gathering (%s): %r" % ("pure" if pure else "compiled",
                                                                exc), data)
                return
            finally:
                os.environ.pop("PERFDATA_CORE", None)
        if got[0] != got[1]:
            self.finding("annotate: the compiled counts differ from the pure path's", data)

    def leaves(self, data: bytes, rng: random.Random) -> None:
        """LeafCounter.consume over sample bodies cut from the input, each
        in a buffer of exactly its size (malloc'd: the sanitizer's red zone
        is the byte after it)."""
        from perfdata import core
        mod = core.compiled()
        if mod is None or not hasattr(mod, "LeafCounter"):
            return
        counter = mod.LeafCounter(rng.randrange(256))
        events = [object() for _ in range(rng.randint(1, 3))]
        offsets = (0, 4, 8, 12, 16, 24, 40, 4095, 65528, 65536)
        for ea in events:
            counter.set_layout(ea, rng.choice(offsets), rng.choice(offsets),
                               rng.choice(offsets), rng.choice((-1,) + offsets),
                               rng.choice((-1,) + offsets), rng.choice(offsets),
                               rng.choice(HOSTILE), rng.random() < 0.8)
        for _ in range(rng.randint(0, 8)):
            start = rng.choice(HOSTILE + tuple(rng.randrange(1 << 64) for _ in range(2)))
            end = min(start + rng.choice((1, 16, 4096, 1 << 40, 1 << 64)), (1 << 64) - 1)
            try:
                counter.add_range(rng.choice((-1, 0, 1, rng.randrange(1 << 31))), start, end,
                                  rng.randrange(8))
            except ValueError:
                pass            # (an empty or overlapping range: refused)
        at, calls = 0, 0
        while at < len(data) and calls < 64:
            calls += 1
            n = min(len(data) - at, rng.choice((0, 1, 7, 8, 15, 16, 24, 40, 64, 256)))
            ptr = _LIBC.malloc(max(n, 1))
            ctypes.memmove(ptr, data[at:at + n], n)
            body = memoryview((ctypes.c_ubyte * n).from_address(ptr)).cast("B")
            self.leaf_bodies += 1
            try:
                got = counter.consume(_Sample(rng.choice(events + [None]),
                                              rng.randrange(1 << 16), body))
            finally:
                body.release()
                _LIBC.free(ptr)
            if got not in (True, False):
                self.finding("LeafCounter.consume gave %r" % (got,), data)
                return
            if rng.random() < 0.05:
                counter.forget(rng.randrange(1 << 31))
            elif rng.random() < 0.02:
                counter.forget_all()
            at += max(n, 1)
        entries = counter.entries()
        counts = counter.counts()
        if len(entries) % 32 or len(entries) // 32 != counts["addresses"]:
            self.finding("LeafCounter.entries: %d bytes for %d addresses"
                         % (len(entries), counts["addresses"]), data)

    def unwind(self, data: bytes, rng: random.Random) -> None:
        """The compiled DWARF walk on a stack copy cut from the input."""
        from perfdata.core import compiled_unwind
        from fuzz_unwind import fuzz_walk
        module = compiled_unwind()
        if module is not None:
            self.unwinds += 1
            fuzz_walk(module, data, rng, exact_buffer, _LIBC.free)

    def walk(self, data: bytes, rng: random.Random) -> None:
        """The compiled record walk of script (perfdata/core/walk.py) against
        PerfFile.records: the same records in the same order, the same
        warnings (tests/core/test_core_walk.py's comparison), with a
        SampleText, and without a core (a DWARF run's walk) as one worker
        of a sharded run (RecordWalk.set_shard) or as the only process."""
        import perfdata
        from perfdata.core import walk
        from perfdata.session.stream import SessionStream
        from test_core_walk import _reference, _walked
        try:
            with perfdata.open(str(self.path)) as pf:
                if walk.why_not(pf, SessionStream(pf)) is not None:
                    return
        except perfdata.PerfDataError:
            return
        jobs = rng.randint(1, 3)
        shard = None if rng.random() < 0.3 else (rng.choice((1, 2, 7, 512)), jobs,
                                                 rng.randrange(jobs))
        for with_core, part in ((True, None), (rng.random() < 0.5, shard)):
            self.walks += 1
            got: object
            try:
                got = _walked(self.path, (), with_core, part)
            except perfdata.PerfDataError as exc:
                got = ("error", str(exc))
            except AssertionError as exc:
                self.finding("the compiled record walk: %s" % exc, data)
                return
            try:
                want: object = _reference(self.path, (), part)
            except perfdata.PerfDataError as exc:
                want = ("error", str(exc))
            if got != want:
                self.finding("the compiled record walk (core %s, shard %s) delivers otherwise "
                             "than PerfFile.records" % (with_core, part), data)

    def layout(self, name: str, data: bytes) -> tuple[int, int, list[int], int]:
        """(data start, events, ids, trailer size) for the inputs of a seed,
        read once from the first of them (walk_block's parameters need only
        be plausible: its hostile inputs are the bytes)."""
        got = self.layouts.get(name)
        if got is None:
            got = (0, 0, [], 16)
            try:
                import perfdata
                with perfdata.open(str(self.path)) as pf:
                    start = pf.data_range[0] if not pf.is_pipe else 0
                    got = (start, len(pf.attrs), sorted(pf.ctx.id_to_attr),
                           pf.ctx.trailer_size())
            except Exception:    # (the reader's own errors: walk the bytes anyway)
                pass
            self.layouts[name] = got
        return got

    def direct(self, data: bytes, rng: random.Random, name: str) -> None:
        """walk_block over the data section in exact-size buffers."""
        from perfdata.core import _records as mod  # type: ignore[attr-defined]
        from perfdata.core import records as glue
        start, nattrs, ids, trailer = self.layout(name, data)
        end = len(data)
        nattrs = max(nattrs, 1) if ids else nattrs
        values = dict.fromkeys(mod.PARAM_NAMES, 0)
        values.update(little=1, misc_off=4, size_off=6, header_size=8,
                      align_mask=rng.choice((7, 0)), data_end=end, trailer=trailer,
                      sample_id_pos=rng.choice((-1, 0, 1, 2, 3)),
                      trailer_id_pos=rng.choice((-1, 1, 2, 3)),
                      sample_id_all=rng.randint(0, 1), nattrs=nattrs,
                      single=rng.choice((-1, 0)) if nattrs else -1,
                      lost_off=0, big_after=16, SAMPLE=9, LOST_SAMPLES=13,
                      AUXTRACE_INFO=70, FINISHED_ROUND=68, FINISHED_INIT=82,
                      USER_TYPE_START=64)
        params = array("q", [values[n] for n in mod.PARAM_NAMES])
        tables = glue.walk_tables(trailer, mod.NTYPES)
        id_array = array("Q", ids)
        id_attrs = array("q", [rng.randrange(nattrs) for _ in ids])
        nstate = len(mod.STATE_NAMES) + mod.NTYPES + 2 * nattrs
        state = array("Q", bytes(8 * nstate))
        at = start
        calls = 0
        while at < end and calls < 48:
            calls += 1
            n = min(end - at, rng.choice((8, 256, 4096, 65536, 1 << 20)) + rng.randrange(64))
            # (malloc'd here: a buffer of exactly n bytes, the red zone after it)
            ptr = _LIBC.malloc(max(n, 1))
            ctypes.memmove(ptr, data[at:at + n], n)
            block = memoryview((ctypes.c_ubyte * n).from_address(ptr)).cast("B")
            self.direct_blocks += 1
            try:
                used, why = mod.walk_block(block, at, params, tables, id_array, id_attrs,
                                           state)
            finally:
                block.release()
                _LIBC.free(ptr)
            if not 0 <= used <= n:
                self.finding("walk_block used %d of %d" % (used, n), data)
                return
            if why == mod.HANDBACK or used == 0:
                # skip the record it left, as a walk would, by a guess
                at += max(8, used)
            else:
                at += used


class _Sample:
    """What LeafCounter.consume reads of a Record."""
    __slots__ = ("attr", "misc", "body")

    def __init__(self, attr: object, misc: int, body: memoryview) -> None:
        self.attr, self.misc, self.body = attr, misc, body


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ext-dir", type=Path, required=True)
    ap.add_argument("--inputs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--script-every", type=int, default=40)
    ap.add_argument("--pure-every", type=int, default=5,
                    help="compare with the pure path every Nth mutated input")
    ap.add_argument("--symtab-every", type=int, default=2,
                    help="a kallsyms text and an ELF file through symbolize's _symtab "
                    "every Nth input (0: none)")
    ap.add_argument("--out", type=Path, default=Path("/tmp/perfdata-fuzz-compiled"))
    ap.add_argument("--no-whole", action="store_true",
                    help="leave out the corpus, fuzz crashers and samples run whole")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    loaded = load_extensions(args.ext_dir)
    from perfdata import core
    from perfdata.core import records as glue
    records_mod = glue.records_module()
    if records_mod is None or records_mod.__file__ != loaded.get("perfdata.core._records"):
        print("the sanitized _records is not the one that runs", file=sys.stderr)
        return 1
    core_mod = core.compiled()
    if "perfdata.core._core" in loaded and (core_mod is None or
                                            core_mod.__file__ != loaded["perfdata.core._core"]):
        print("the sanitized _core is not the one that runs", file=sys.stderr)
        return 1
    if "perfdata.core._unwind" in loaded:
        unwind_mod = core.compiled_unwind()
        if unwind_mod is None or unwind_mod.__file__ != loaded["perfdata.core._unwind"]:
            print("the sanitized _unwind is not the one that runs", file=sys.stderr)
            return 1
    print("extensions under test:", ", ".join(sorted(loaded)), flush=True)
    if core_mod is not None and args.script_every:
        # (the core in the working tree may be between two edits of its C
        # and its Python: say so, rather than count each input a finding)
        from conftest import run_cli
        rc, _, err = run_cli(["script", str(REPO / "samples" / "threads.fp.data")])
        if rc != 0:
            print("perfdata script fails on a bundled recording with this _core "
                  "(exit %s: %s): script runs left out" % (rc, err.strip()[-200:]), flush=True)
            args.script_every = 0
    import harness
    seeds = harness.load_seeds()
    rng = random.Random(args.seed)
    run = Run(args.out, args.script_every, args.pure_every)
    symtab = SymtabRun(args.out) if "symbolize.symbols._symtab" in loaded and \
        args.symtab_every else None
    t0 = time.monotonic()
    for k in range(args.inputs):
        seed = rng.choice(seeds)
        run.one(mutate(seed, rng), rng, seed.name)
        if symtab is not None and k % args.symtab_every == 0:
            symtab.one(rng, run.finding)
        if (k + 1) % 5000 == 0:
            print("%d inputs, %.0f s, %d findings" % (k + 1, time.monotonic() - t0,
                                                     len(run.findings)), flush=True)
    mutated = run.inputs
    whole = [] if args.no_whole else sorted(REPO.joinpath("tests", "regressions").glob("*.data"))
    corpus = harness.corpus_dir()
    if corpus.is_dir() and not args.no_whole:
        whole += sorted(p for p in corpus.iterdir() if p.is_file())
    if not args.no_whole:
        whole += sorted(p for p in (REPO / "samples").glob("*.data") if p.is_file())
    for path in whole:
        run.one(path.read_bytes(), rng, "whole:" + path.name, compare=True)
    took = time.monotonic() - t0
    symtab_inputs = symtab.inputs if symtab is not None else 0
    print("inputs: %d mutated + %d whole files (corpus, fuzz crashers, samples); "
          "compared with pure: %d; walk_block calls: %d; script runs: %d; record walks "
          "compared: %d; symbol tables (kallsyms text, ELF file, fixup) compared: %d; "
          "LeafCounter bodies: %d; annotate runs: %d; %.0f s; findings: %d"
          % (mutated, run.inputs - mutated, run.compared, run.direct_blocks, run.scripts,
             run.walks, symtab_inputs, run.leaf_bodies, run.annotates, took, len(run.findings)))
    print("FIGURES", json.dumps({"mutated": mutated, "whole": run.inputs - mutated,
                                 "compared": run.compared, "walk_block": run.direct_blocks,
                                 "script": run.scripts, "walks": run.walks,
                                 "symtab": symtab_inputs, "unwinds": run.unwinds,
                                 "leaf_bodies": run.leaf_bodies, "annotates": run.annotates,
                                 "seconds": round(took),
                                 "findings": len(run.findings)}))
    print("outcomes:", run.outcomes)
    for what, name in run.findings:
        print("  ", what, name)
    return 1 if run.findings else 0


if __name__ == "__main__":
    sys.exit(main())
