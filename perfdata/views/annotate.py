"""`perfdata annotate`: where in a function its samples fell.

perf annotate's --stdio layout: each instruction of a hot function with its
share of the function's samples (perf's percent types: local or global,
period or hits), the source lines from DWARF between them, and with
-l/--print-line perf's sorted summary of the hot source lines.  A sample
counts for the function its ip is in (the leaf, as perf annotate counts),
named by the same search for binaries and debug files as every command: a
profile recorded before its debug package was installed annotates with
source lines after.

The instructions come from capstone (in-process; perf runs objdump once a
function), so their text is capstone's: the same instructions and
addresses as perf's, spelt a little otherwise (`movl $0, %eax` for
objdump's `mov $0x0,%eax`).
"""
from __future__ import annotations

import linecache
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from .annotate_samples import FunctionSamples, gather
from .errors import CommandError
from .options import SampleRun, add_input_argument, add_symbolize_options

if TYPE_CHECKING:
    import argparse
    from symbolize import Symbolizer, SymbolTable

# capstone's instruction groups (capstone.CS_GRP_JUMP, CS_GRP_CALL)
CS_GRP_JUMP, CS_GRP_CALL = 1, 2
PERCENT_TYPES = ("local-period", "global-period", "local-hits", "global-hits")
# perf's -l: the source lines of the instructions above this share (annotate.c
# annotation__calc_lines), summed per line.
PRINT_LINE_MIN = 0.5
# The machines capstone is asked to read, by ELF e_machine.
_CAPSTONE_MACHINES = {"EM_X86_64": ("CS_ARCH_X86", "CS_MODE_64"),
                      "EM_386": ("CS_ARCH_X86", "CS_MODE_32"),
                      "EM_AARCH64": ("CS_ARCH_ARM64", "CS_MODE_ARM")}
# ... their e_machine numbers (a jitdump's header gives the number)
_ELF_MACHINES = {62: "EM_X86_64", 3: "EM_386", 183: "EM_AARCH64"}


@dataclass(frozen=True, slots=True)
class AnnotateOptions:
    """What the command line asks of an annotation."""
    symbols: frozenset[str] = frozenset()
    percent_type: str = "local-period"
    percent_limit: float = 0.5
    print_line: bool = False
    source: bool = True
    intel: bool = False
    event: str | None = None


@dataclass(frozen=True, slots=True)
class Instruction:
    address: int
    text: str
    hits: int
    period: int
    percent: float
    srcline: str | None


@dataclass(frozen=True, slots=True)
class Annotation:
    """One function annotated: its instructions, or why there are none."""
    function: FunctionSamples
    instructions: tuple[Instruction, ...]
    percent_type: str
    problem: str | None = None

    def line_summary(self) -> list[tuple[float, str]]:
        """perf's -l summary: (percent, 'file:line', the file's last
        component) of the instructions above PRINT_LINE_MIN, summed per
        line; hottest first, a tie in the order perf's trees leave it (the
        line last in strcmp order first: annotate.c insert_source_line and
        __resort_source_line)."""
        lines: dict[str, float] = {}
        for ins in self.instructions:
            if ins.percent > PRINT_LINE_MIN and ins.srcline:
                short = short_srcline(ins.srcline)
                lines[short] = lines.get(short, 0.0) + ins.percent
        by_name = sorted(lines.items(), key=lambda kv: kv[0].encode(), reverse=True)
        return [(p, name) for name, p in sorted(by_name, key=lambda kv: -kv[1])]


# ------------------------------------------------------------ the samples
def chosen(functions: dict[tuple[Any, ...], FunctionSamples], totals: dict[str, tuple[int, int]],
           opts: AnnotateOptions) -> list[FunctionSamples]:
    """The functions to annotate, hottest first (period, then name): those
    named, else those at or above the percent limit of their event (the
    shared filters, --dsos, -S, --pid..., chose the samples)."""
    out = []
    for fs in functions.values():
        if opts.symbols:
            if fs.name not in opts.symbols:
                continue
        elif 100.0 * fs.total_period < opts.percent_limit * totals[fs.event][1]:
            continue
        out.append(fs)
    return sorted(out, key=lambda fs: (fs.event, -fs.total_period, fs.name, fs.start))


# ------------------------------------------------------------ the code
def _capstone(machine: str, intel: bool) -> Any:
    try:
        import capstone
    except ImportError:
        from ..extras import install_hint
        raise CommandError("annotate reads instructions with capstone, not installed here: %s"
                           % install_hint("annotate")) from None
    names = _CAPSTONE_MACHINES.get(machine)
    if names is None:
        return None
    md = capstone.Cs(getattr(capstone, names[0]), getattr(capstone, names[1]))
    if names[0] == "CS_ARCH_X86":
        md.syntax = capstone.CS_OPT_SYNTAX_INTEL if intel else capstone.CS_OPT_SYNTAX_ATT
    md.skipdata = True          # (bytes that decode to nothing: shown as data, go on)
    return md


def disassemble(symbolizer: Symbolizer, fs: FunctionSamples, intel: bool
                ) -> tuple[list[tuple[int, str]], str | None]:
    """[(address, text)] of the function's instructions, from the start of
    its symbol to its end; or ([], why not)."""
    if fs.path is None:
        return [], "no binary"
    if fs.jit_index is not None:
        return _jit_code(symbolizer, fs, intel)
    choice = symbolizer.binary_for(fs.path, fs.build_id)
    binary = choice.binary
    table = symbolizer.symbol_table(fs.path, fs.build_id)
    if binary is None or not binary.ok or table is None:
        return [], "%s not found (--debug-dir, --symfs or debuginfod)" % fs.path
    sym = table.lookup(fs.start)
    size = sym.size if sym is not None and sym.start == fs.start and sym.size else 0
    if size <= 0:
        last = max(fs.hits)
        size = last - fs.start + 16      # (a symbol of no size: up to its last sample)
    offset = binary.svma_to_file_offset(fs.start)
    code = binary.read(offset, size) if offset is not None else None
    if not code:
        return [], "no code at %#x in %s" % (fs.start, fs.path)
    md = _capstone(binary.machine or "", intel)
    if md is None:
        return [], "no disassembler for %s" % binary.machine
    return _instructions(md, bytes(code), fs.start, table), None


def _jit_code(symbolizer: Symbolizer, fs: FunctionSamples, intel: bool
              ) -> tuple[list[tuple[int, str]], str | None]:
    """The instructions of JIT code, from the jitdump's load of it: the
    code as it was when the samples hit it (perf annotates it from the ELF
    file perf inject --jit makes of that load)."""
    assert fs.path is not None and fs.jit_index is not None
    got = symbolizer.jitdump_code(fs.path, fs.jit_index)
    if got is None:
        return [], "no code of load %d in %s" % (fs.jit_index, fs.path)
    machine, _, code = got
    md = _capstone(_ELF_MACHINES.get(machine, ""), intel)
    if md is None:
        return [], "no disassembler for e_machine %d" % machine
    return _instructions(md, code, fs.start, None), None


def _instructions(md: Any, code: bytes, start: int, table: SymbolTable | None
                  ) -> list[tuple[int, str]]:
    md.detail = True            # (the groups: which instructions branch)
    return [(ins.address, _text(ins, table)) for ins in md.disasm(code, start)]


def _text(ins: Any, table: SymbolTable | None) -> str:
    """An instruction as objdump writes one: the mnemonic padded, and a
    branch or call to a known address shown with its target's name."""
    op = ins.op_str
    if ins.id != 0 and (ins.group(CS_GRP_JUMP) or ins.group(CS_GRP_CALL)):  # (0: data)
        try:
            target = int(op, 16)
        except ValueError:
            target = None
        sym = table.lookup(target) if target is not None and table is not None else None
        if target is not None:
            op = "%x <%s+%#x>" % (target, sym.name, target - sym.start) if sym is not None \
                else "%x" % target
    return ("%-6s %s" % (ins.mnemonic, op)).rstrip()


def annotate(symbolizer: Symbolizer, fs: FunctionSamples, totals: dict[str, tuple[int, int]],
             opts: AnnotateOptions) -> Annotation:
    """The function's instructions with their shares (opts.percent_type)."""
    code, problem = disassemble(symbolizer, fs, opts.intel)
    if problem is not None:
        return Annotation(fs, (), opts.percent_type, problem)
    local = opts.percent_type.startswith("local")
    by_hits = opts.percent_type.endswith("hits")
    if local:
        whole = fs.total_hits if by_hits else fs.total_period
    else:
        whole = totals[fs.event][0] if by_hits else totals[fs.event][1]
    lines = symbolizer.line_info(fs.path, fs.build_id) if fs.path else None
    out = []
    for address, text in code:
        hits, period = fs.hits.get(address, 0), fs.period.get(address, 0)
        share = (hits if by_hits else period) * 100.0 / whole if whole else 0.0
        srcline = lines.srcline(address) if lines is not None else None
        out.append(Instruction(address, text, hits, period, share, srcline))
    return Annotation(fs, tuple(out), opts.percent_type)


# ------------------------------------------------------------ the output
def render(a: Annotation, opts: AnnotateOptions) -> str:
    """perf annotate --stdio's page of one function."""
    fs = a.function
    head = " Percent |\tSource code & Disassembly of %s for %s (%d samples, percent: %s)" % (
        os.path.basename(fs.dso), fs.event, fs.total_hits, a.percent_type.replace("-", " "))
    out = []
    if opts.print_line:
        out.append("\nSorted summary for file %s\n" % (fs.path or fs.dso))
        out.append("----------------------------------------------\n\n")
        out.extend("  %6.2f %s\n" % (p, s) for p, s in a.line_summary())
    out.append(head + "\n")
    out.append("-" * (len(head) + 7) + "\n")
    out.append("         :   %x <%s>:\n" % (fs.start, fs.name))
    if a.problem is not None:
        out.append("         :   (no instructions: %s)\n" % a.problem)
    shown = None
    for ins in a.instructions:
        if opts.source and ins.srcline and ins.srcline != shown:
            shown = ins.srcline
            out.append("         :   %s\n" % _source_text(ins.srcline))
        tail = " // %s" % short_srcline(ins.srcline) if opts.print_line and ins.percent > \
            PRINT_LINE_MIN and ins.srcline else ""
        out.append("%8.2f :   %x:   %s%s\n" % (ins.percent, ins.address, ins.text, tail))
    return "".join(out)


def short_srcline(srcline: str) -> str:
    """'file:line' with the file's last component, as perf's -l prints it."""
    path, _, line = srcline.rpartition(":")
    return "%s:%s" % (os.path.basename(path), line)


def _source_text(srcline: str) -> str:
    """The source line itself where the file is readable here, after its
    place; the place alone otherwise."""
    path, _, line = srcline.rpartition(":")
    text = linecache.getline(path, int(line)) if line.isdigit() else ""
    return "%s  %s" % (short_srcline(srcline), text.strip()) if text.strip() else srcline


def as_json(a: Annotation) -> dict[str, Any]:
    fs = a.function
    return {"event": fs.event, "function": fs.name, "dso": fs.dso, "build_id": fs.build_id,
            "start": fs.start, "samples": fs.total_hits, "period": fs.total_period,
            "percent_type": a.percent_type, "problem": a.problem,
            "instructions": [{"address": i.address, "text": i.text, "hits": i.hits,
                              "period": i.period, "percent": i.percent,
                              "srcline": i.srcline} for i in a.instructions],
            "lines": [{"percent": p, "srcline": s} for p, s in a.line_summary()]}


# ------------------------------------------------------------ the command
def options_from_args(args: argparse.Namespace) -> AnnotateOptions:
    symbols = set(args.names or ()) | set(args.symbol or ())
    return AnnotateOptions(symbols=frozenset(symbols),
                           percent_type=args.percent_type, percent_limit=args.percent_limit,
                           print_line=args.print_line, source=args.source,
                           intel=args.disassembler_style == "intel", event=args.event)


def run(args: argparse.Namespace, out: TextIO) -> None:
    import json
    opts = options_from_args(args)
    # (the leaf alone counts: no call chain walked, no inlined frame)
    args.hide_call_graph, args.no_inline = True, True
    run_ = SampleRun(args, "annotate")
    gathered = gather(run_.samples, run_, opts.event)
    functions, totals = gathered.functions, gathered.totals
    symbolizer = run_.samples.symbolizer
    todo = chosen(functions, totals, opts)
    if not todo:
        raise CommandError("no samples in %s" % (", ".join(sorted(opts.symbols))
                                                 if opts.symbols else "any function"))
    if args.json:
        json.dump([as_json(annotate(symbolizer, fs, totals, opts)) for fs in todo], out, indent=1)
        out.write("\n")
        return
    if args.html:
        from .annotate_html import render_html
        out.write(render_html([annotate(symbolizer, fs, totals, opts) for fs in todo],
                              "perfdata annotate %s" % args.file))
        return
    for fs in todo:
        out.write(render(annotate(symbolizer, fs, totals, opts), opts))


def _percent_type(text: str) -> str:
    # (perf takes "local-period" and "period-local" alike)
    parts = text.split("-")
    if len(parts) == 2 and parts[0] in ("period", "hits"):
        text = "%s-%s" % (parts[1], parts[0])
    if text not in PERCENT_TYPES:
        import argparse
        raise argparse.ArgumentTypeError("invalid percent type %r (%s)"
                                         % (text, ", ".join(PERCENT_TYPES)))
    return text


def _intermixed(base: type[argparse.ArgumentParser]) -> type[argparse.ArgumentParser]:
    """base, parsing its positionals wherever they are among the options."""
    class Intermixed(base):  # type: ignore[valid-type,misc]
        _parsing = False

        def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
            if self._parsing:       # (the intermixed parse's own passes)
                return super().parse_known_args(args, namespace)
            self._parsing = True
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self._parsing = False
    return Intermixed


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("annotate", help="hot instructions and source lines of functions, "
                                               "as perf annotate --stdio")
    # perf annotate [options] [symbol...]: the functions may come after the
    # options, which argparse's positionals do not allow but its
    # intermixed parse does.
    p.__class__ = _intermixed(type(p))
    add_input_argument(p)
    p.add_argument("names", nargs="*", metavar="SYMBOL",
                   help="the functions to annotate (default: every function with at least "
                        "--percent-limit of its event's samples)")
    p.add_argument("-s", "--symbol", action="append", help="a function to annotate (again "
                                                            "for more)")
    p.add_argument("--percent-type", type=_percent_type, default="local-period",
                   help="local-period (default), global-period, local-hits, global-hits")
    p.add_argument("--percent-limit", type=float, default=0.5, metavar="PERCENT",
                   help="annotate functions with at least this share of their event's period "
                        "(default 0.5; 0: every function, as perf)")
    p.add_argument("-l", "--print-line", action="store_true",
                   help="the hot source lines: perf's sorted summary, and each hot "
                        "instruction's line")
    p.add_argument("--source", dest="source", action="store_true", default=True,
                   help="source lines between the instructions (default)")
    p.add_argument("--no-source", dest="source", action="store_false",
                   help="instructions only")
    p.add_argument("-M", "--disassembler-style", choices=("att", "intel"), default="att",
                   help="x86 syntax (default att, as objdump's)")
    p.add_argument("--stdio", action="store_true", help="text (the only interface; accepted "
                                                        "as perf's)")
    p.add_argument("-e", "--event", metavar="EVENT", help="annotate this event's samples only")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="the annotations as JSON")
    shown.add_argument("--html", action="store_true",
                       help="an HTML page: each function's source and disassembly side by side, "
                            "hot lines highlighted")
    add_symbolize_options(p)
    p.set_defaults(func=run)
