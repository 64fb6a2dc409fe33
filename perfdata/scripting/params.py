"""The dict perf 6.1 hands `process_event(param_dict)` (and a tracepoint
handler's `perf_sample_dict`), built from perfdata's symbolized sample.

The keys and their order are perf 6.1's get_perf_sample_dict(): ev_name,
attr (the event's perf_event_attr, 128 bytes as 6.1 has it), sample (pid,
tid, cpu, ip, time, period, phys_addr, addr, values, weight, transaction,
datasrc, datasrc_decode, cpumode; time_enabled/time_running with those read
formats; addr_correlates_sym and addr_* where the address names a symbol;
insn_cnt/cyc_cnt where both are known), raw_buf, comm, dso, dso_bid,
dso_map_start, dso_map_end, symbol, symoff (where the ip has a map and a
symbol), callchain, brstack, brstacksym, iregs, uregs.  The names (symbol,
dso, the callchain's) are perfdata's: where perf's symbolization is wrong,
these are right.

A callchain entry is {ip, sym: {start, end, binding, name}, sym_off, dso}
as perf gives it (no sym without a symbol, no dso without a map).  sym's
binding is the ELF symbol's (STB_LOCAL 0, STB_GLOBAL 1, STB_WEAK 2), a
kernel symbol's from its kallsyms type (lower case local, W weak), 1 where
a table has none (PLT stubs, perf maps, JIT dumps), as perf's.
"""
from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any

from symbolize import SHF_ALLOC

from ..format import ReadFormat as RF, SampleType as ST
from ..resolve.frames import KERNEL_MODES
from ..session.machine import KERNEL_DSO

if TYPE_CHECKING:
    from ..format import EventAttr
    from ..resolve.frames import StackFrame
    from ..resolve.symbolized import SampleSymbolizer, SymbolizedSample

# perf 6.1's struct perf_event_attr (PERF_ATTR_SIZE_VER7)
ATTR_SIZE = 128
# PERF_MEM_DATA_SRC_NONE: perf's data_src of a sample without one
DATA_SRC_NONE = 0x5080021
_U32 = 0xffffffff
_U64 = (1 << 64) - 1
# no-map frames, as frames.py notes them
_NO_MAP = "no-map"
STB_GLOBAL = 1


def attr_bytes(event: EventAttr) -> bytes:
    """The event's perf_event_attr as perf 6.1 holds it in memory."""
    from ..format import attr_schema
    try:
        built = attr_schema(ATTR_SIZE, event.little).build(event.attr)
    except Exception:   # (an attr the schema cannot rebuild: zeros, as an unknown)
        built = b""
    return (built + bytes(ATTR_SIZE))[:ATTR_SIZE]


class ParamBuilder:
    """param_dict for the samples of one run."""

    def __init__(self, samples: SampleSymbolizer, arch: str) -> None:
        self.samples = samples
        self.symbolizer = samples.symbolizer
        self.machine = samples.machine
        self.arch = arch
        self._attrs: dict[int, bytes] = {}
        self._sym_ranges: dict[tuple[Any, ...], tuple[int, int, int]] = {}
        self._kernel_bounds: tuple[int, int] | None = None
        self._kernel_bounds_asked = False
        self._srclines: dict[tuple[str, str | None, int], tuple[str | None, int]] = {}

    # ------------------------------------------------------------ symbols
    def _sym_range(self, fr: StackFrame) -> tuple[int, int, int]:
        """perf's sym->start, sym->end and sym->binding: the symbol's
        address in the binary (kallsyms' for the kernel), where it ends and
        its ELF binding."""
        if fr.kernel or fr.svma is None:
            start = (fr.avma if fr.avma is not None else fr.address) - (fr.offset or 0)
            key: tuple[Any, ...] = ("k", start)
        else:
            start = fr.svma - (fr.offset or 0)
            key = (fr.dso_path, fr.build_id, start)
        hit = self._sym_ranges.get(key)
        if hit is not None:
            return hit
        end, binding = start, STB_GLOBAL
        try:
            if key[0] == "k":
                table = self.samples.kernel_symbols()
                ksym = table.lookup(start) if table is not None else None
                if table is not None and ksym is not None and ksym.start == start:
                    end, binding = ksym.end, table.binding(start)
            elif fr.dso_path:
                # (perf's one table for a dso holds its data objects too: the
                # next object ends a size-0 function as the next function does)
                for symtab in (self.symbolizer.object_table(fr.dso_path, fr.build_id),
                               self.symbolizer.symbol_table(fr.dso_path, fr.build_id)):
                    sym = symtab.lookup(start) if symtab is not None else None
                    if symtab is not None and sym is not None and sym.start == start:
                        end, binding = sym.end, symtab.binding(start)
                        break
            if key[0] != "k" and fr.dso_path:
                bias = self._load_bias(fr.dso_path, fr.build_id, start)
                start, end = start - bias, end - bias
        except Exception:   # (a binary that cannot be read: the start alone)
            pass
        self._sym_ranges[key] = (start, end, binding)
        return start, end, binding

    def _load_bias(self, path: str, build_id: str | None, svma: int) -> int:
        """What perf (6.1, every user dso) takes off a symbol's value to
        make its sym->start: p_vaddr - p_offset of the runtime binary's
        PT_LOAD that holds it (symbol-elf.c dso__load_sym).  0 for most
        binaries GNU ld links (each segment's address is its offset); 0x400000
        for a non-PIE executable, a page for lld's segments."""
        binary = self.symbolizer.binary_for(path, build_id).binary
        if binary is None:
            return 0
        for seg in binary.load_segments:
            if seg.vaddr <= svma < seg.vaddr + seg.memsz:
                return seg.vaddr - seg.offset
        return 0

    def callchain_entry(self, fr: StackFrame) -> dict[str, Any]:
        ip = fr.avma if fr.avma is not None else fr.address
        entry: dict[str, Any] = {"ip": ip}
        has_map = fr.note != _NO_MAP
        if fr.symbol is not None:
            start, end, binding = self._sym_range(fr)
            entry["sym"] = {"start": start, "end": end, "binding": binding,
                            "name": fr.symbol}
            if has_map:
                entry["sym_off"] = fr.offset or 0
        if has_map:
            entry["dso"] = fr.dso
        return entry

    def callchain(self, sample: SymbolizedSample) -> list[dict[str, Any]]:
        """perf's python_process_callchain(): the sample's stack, leaf first
        (empty for an event recorded without one)."""
        if not sample.event.has_callchain:
            return []
        return [self.callchain_entry(fr) for fr in sample.frames]

    def leaf(self, sample: SymbolizedSample) -> StackFrame | None:
        """The frame of the sample's ip perf's addr_location names: the
        function itself, not a function inlined into it."""
        if sample.ip is None:
            return None
        frames = self.samples.leaf_frames(sample)
        for fr in frames:
            if not fr.inlined:
                return fr
        return frames[-1] if frames else None

    # -------------------------------------------------------------- dicts
    def sample_dict(self, sample: SymbolizedSample) -> dict[str, Any]:
        fields = sample.fields
        event = sample.event
        get = fields.get
        d: dict[str, Any] = {
            "pid": get("pid", -1) & _U32,
            "tid": get("tid", -1) & _U32,
            "cpu": get("cpu", -1) & _U32,
            "ip": get("ip", 0),
            "time": get("time", _U64),
            "period": sample.period,
            "phys_addr": get("phys_addr", 0),
            "addr": get("addr", 0),
        }
        read = get("read")
        rf = event.read_format
        if read is not None and rf & RF.TOTAL_TIME_ENABLED:
            d["time_enabled"] = read.get("time_enabled", 0)
        if read is not None and rf & RF.TOTAL_TIME_RUNNING:
            d["time_running"] = read.get("time_running", 0)
        if read is not None and rf & RF.GROUP:
            d["values"] = [(v.get("id", 0), v.get("value", 0), v.get("lost", 0))
                           for v in read.get("values", ())]
        elif read is not None:
            d["values"] = [(read.get("id", 0), read.get("value", 0), read.get("lost", 0))]
        else:
            d["values"] = [(0, 0, 0)]
        weight = get("weight", 0)
        if isinstance(weight, dict):     # PERF_SAMPLE_WEIGHT_STRUCT: var1_dw
            weight = weight.get("var1_dw", 0)
        d["weight"] = weight
        d["transaction"] = get("transaction", 0)
        data_src = get("data_src", DATA_SRC_NONE)
        from ..views.memdata import meminfo_text
        d["datasrc"] = data_src
        d["datasrc_decode"] = meminfo_text(data_src)
        d["cpumode"] = sample.cpumode
        return d

    def param_dict(self, sample: SymbolizedSample,
                   callchain: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        event = sample.event
        attr = self._attrs.get(event.index)
        if attr is None:
            attr = self._attrs[event.index] = attr_bytes(event)
        raw = sample.fields.get("raw")
        d: dict[str, Any] = {
            "ev_name": event.name,
            "attr": attr,
            "sample": self.sample_dict(sample),
            "raw_buf": bytes(raw["data"]) if raw else b"",
            "comm": sample.comm,
        }
        self._set_sym(d, sample)
        d["callchain"] = self.callchain(sample) if callchain is None else callchain
        d["brstack"], d["brstacksym"] = self._branches(sample)
        d["iregs"], d["uregs"] = self._regs(sample)
        return d

    def _set_sym(self, d: dict[str, Any], sample: SymbolizedSample) -> None:
        ip = sample.ip
        if ip is None:
            return
        kernel = sample.cpumode in KERNEL_MODES
        m = self.machine.find_map(sample.thread, ip, kernel)
        fr = self.leaf(sample)
        if m is not None:
            d["dso"] = fr.dso if fr is not None else m.path
            bid = (fr.build_id if fr is not None else None) or m.build_id or ""
            d["dso_bid"] = bid
            bounds = self.kernel_map_bounds() if m.path == KERNEL_DSO else None
            d["dso_map_start"], d["dso_map_end"] = bounds or (m.start, m.end)
        if fr is not None and fr.symbol is not None:
            d["symbol"] = fr.symbol
            d["symoff"] = fr.offset or 0

    def srcline(self, sample: SymbolizedSample) -> tuple[str | None, int]:
        """perf_sample_srcline's answer: the source file and line of the
        sample's ip, innermost (an inlined function's own line) as perf's
        addr2line gives it; ("??", 0) where no line table covers it but a
        function symbol does (_function_before), (None, 0) where nothing
        does.  Kernel code: (None, 0), perf's answer from kallsyms (a
        vmlinux's DWARF is not read for lines here).  Not as perf: a local
        function of a binary whose .symtab has STT_FILE entries but no
        line table there (crtstuff.c's frame_dummy): addr2line names the
        file entry before it, ("crtstuff.c", 0); here ("??", 0)."""
        fr = self.leaf(sample)
        if fr is None or fr.kernel or fr.svma is None or not fr.dso_path:
            return None, 0
        key = (fr.dso_path, fr.build_id, fr.svma)
        hit = self._srclines.get(key)
        if hit is None:
            hit = (None, 0)
            try:
                info = self.symbolizer.line_info(fr.dso_path, fr.build_id)
                text = info.srcline(fr.svma) if info is not None else None
            except Exception:   # (a binary that cannot be read: no line)
                text = None
            if text:
                path, _, line = text.rpartition(":")
                if path and line.isdigit():
                    hit = (path, int(line))
            elif self._function_before(fr.dso_path, fr.build_id, fr.svma):
                hit = ("??", 0)
            self._srclines[key] = hit
        return hit

    def _function_before(self, path: str, build_id: str | None, svma: int) -> bool:
        """Whether binutils' addr2line (perf's) names a function for an
        address its line table does not cover, and so answers `??:?` (perf:
        ("??", 0)) rather than `??:0` (None): an ELF symbol at or before the
        address in its section, however far it ends before it (not a PLT
        stub: .plt has no ELF symbol)."""
        try:
            binary = self.symbolizer.binary_for(path, build_id).binary
            symtab = self.symbolizer.symbol_table(path, build_id)
        except Exception:   # (a binary that cannot be read)
            return False
        if binary is None or symtab is None:
            return False
        section = next((sec for sec in binary.sections
                        if sec.flags & SHF_ALLOC and sec.addr <= svma < sec.addr + sec.size), None)
        if section is None:
            return False
        starts, _ = symtab.bounds()
        i = bisect.bisect_right(starts, svma) - 1
        while i >= 0 and starts[i] >= section.addr:
            sym = symtab.lookup(starts[i])
            if sym is not None and sym.start == starts[i] and sym.source != "plt":
                return True
            i -= 1
        return False

    def kernel_map_bounds(self) -> tuple[int, int] | None:
        """perf's kernel map once it has read kallsyms: from the kernel's
        first symbol to the end of its last (past _etext, where the MMAP
        record ends: .init.text, data); None where perf keeps the MMAP's
        (a vmlinux, no kernel symbols)."""
        if not self._kernel_bounds_asked:
            self._kernel_bounds_asked = True
            try:
                table = self.samples.kernel_symbols()
                self._kernel_bounds = table.kernel_bounds() if table is not None else None
            except Exception:   # (no kernel table to read: the MMAP's bounds)
                self._kernel_bounds = None
        return self._kernel_bounds

    def _branches(self, sample: SymbolizedSample) -> tuple[list[Any], list[Any]]:
        """brstack and brstacksym as perf 6.1 gives them."""
        stack = sample.fields.get("branch_stack")
        if not stack or not stack.get("entries"):
            return [], []
        kernel = sample.cpumode in KERNEL_MODES
        brstack: list[dict[str, Any]] = []
        brstacksym: list[dict[str, Any]] = []
        for entry in stack["entries"]:
            flags = entry["flags"]
            mispred, predicted = bool(flags & 1), bool(flags >> 1 & 1)
            in_tx, abort = bool(flags >> 2 & 1), bool(flags >> 3 & 1)
            cycles = flags >> 4 & 0xffff
            src, dst = entry["from_ip"], entry["to_ip"]
            brstack.append({"from": src, "to": dst, "mispred": mispred,
                            "predicted": predicted, "in_tx": in_tx, "abort": abort,
                            "cycles": cycles})
            brstacksym.append({"from": self._symoff(sample, src, kernel),
                               "to": self._symoff(sample, dst, kernel),
                               "pred": "M" if mispred else "P" if predicted else "-",
                               "in_tx": "X" if in_tx else "-",
                               "abort": "A" if abort else "-"})
        return brstack, brstacksym

    def _symoff(self, sample: SymbolizedSample, avma: int, kernel: bool) -> str:
        frames = self.samples.frames_for_address(sample, avma, kernel, False)
        fr = next((f for f in frames if not f.inlined), None)
        if fr is None or not fr.symbol:
            return "[unknown]"
        return "%s+0x%x" % (fr.symbol, fr.offset or 0)

    def _regs(self, sample: SymbolizedSample) -> tuple[str, str]:
        """iregs and uregs: "%5s:0x%x " per register, as perf's regs_map()."""
        from ..views.regs import regs_text
        out = []
        attr = sample.event.attr
        for key, mask_name, bit in (("regs_intr", "sample_regs_intr", ST.REGS_INTR),
                                    ("regs_user", "sample_regs_user", ST.REGS_USER)):
            regs = sample.fields.get(key) if sample.event.sample_type & bit else None
            text = regs_text(regs, attr[mask_name], self.arch) if regs else ""
            # (regs_text starts with perf script's " ABI:n "; regs_map has none)
            if text.startswith(" ABI:"):
                text = text[text.index(" ", 1) + 1:]
            out.append(text)
        return out[0], out[1]
