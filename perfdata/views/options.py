"""Options shared by every command that symbolizes samples (script, collapse,
flamegraph, report, export, diagnose): one definition, so a command line
written for one works for the others, with perf's spellings; their values
parsed (and refused with argparse's one-line error) once, and turned into
the resolver's ResolveOptions by resolve_options."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..resolve.filters import PercentRanges

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterable, Iterator
    from typing import TypeVar

    from ..resolve.pipeline import ResolveOptions
    from ..resolve.symbolized import SampleSymbolizer, SymbolizedSample

    T = TypeVar("T")
    # --time: [(start_ns or None, stop_ns or None)], or PercentRanges
    TimeRanges = list[tuple[int | None, int | None]]


def add_input_argument(p: argparse.ArgumentParser) -> None:
    """The input file, positional or with perf's -i."""
    p.add_argument("file", nargs="?", default="perf.data")
    p.add_argument("-i", "--input", dest="file_opt", help="input file (as perf's -i)")


def add_force_argument(p: argparse.ArgumentParser) -> None:
    """perf's -f/--force ("don't complain, do it": read a file another user
    owns): accepted as perf accepts it; perfdata reads a file whoever owns it."""
    p.add_argument("-f", "--force", action="store_true",
                   help="accepted as perf's (a file another user owns is read anyway)")


def _free(p: argparse.ArgumentParser, *names: str) -> list[str]:
    """The option strings a command has not taken for itself (archive's -C
    is --directory): perf's short forms where they are free."""
    return [n for n in names if n not in p._option_string_actions]


def path_map_entry(text: str) -> tuple[str, str]:
    """argparse type of --path-map: (OLD, NEW)."""
    import argparse
    from symbolize import parse_path_map
    try:
        return parse_path_map(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def add_stack_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser], name: str,
                      help_text: str, output_help: str,
                      add_options: Callable[[argparse.ArgumentParser], None],
                      run: Callable[..., object]) -> argparse.ArgumentParser:
    """A command that adds up stacks (collapse, flamegraph): the input, -o,
    its own options, -j and the symbolizing options, in that order."""
    from ..run.sharded import add_jobs_argument
    p = subparsers.add_parser(name, help=help_text)
    add_input_argument(p)
    p.add_argument("-o", "--output", help=output_help)
    add_options(p)
    add_jobs_argument(p)
    add_symbolize_options(p)
    p.set_defaults(func=run)
    return p


def add_symbolize_options(p: argparse.ArgumentParser, unsigned_max_stack: bool = False) -> None:
    """Options every command that symbolizes shares (one definition).
    unsigned_max_stack: --max-stack is perf's OPT_UINTEGER (perf script's),
    not OPT_INTEGER (perf report's)."""
    g = p.add_argument_group("symbols")
    g.add_argument("--debug-dir", action="append", default=[], metavar="DIR",
                   help="directory of debug files (.build-id layout or path layout); repeatable")
    g.add_argument("--symfs", metavar="ROOT", help="look for binaries under ROOT")
    g.add_argument("--path-map", action="append", default=[], type=path_map_entry,
                   metavar="OLD=NEW",
                   help="binaries recorded under the path OLD (a directory or a file) are "
                        "at NEW on this machine: for profiles recorded in a container, on "
                        "another host or in another checkout; repeatable, longest OLD wins")
    g.add_argument("--archive", metavar="FILE.tar.zst",
                   help="binaries and debug files packed by `perfdata archive`, or the "
                        "tarball of `perf archive` (FILE.tar.bz2)")
    g.add_argument("--buildid-dir", metavar="DIR", help="perf's build-id cache (default ~/.debug)")
    g.add_argument("--kallsyms", metavar="FILE", help="kernel symbols file")
    g.add_argument(*_free(p, "-k", "--vmlinux"), metavar="FILE",
                   help="the kernel's ELF image, for its symbols")
    g.add_argument("--vdso", metavar="FILE",
                   help="the recording machine's vdso image, for a profile that names no "
                        "build-id for its vdso (perf record --buildid-mmap): by default "
                        "this machine's own stands in only if it runs the recorded kernel")
    g.add_argument("--debuginfod", metavar="URL",
                   help="fetch missing debug files and binaries by build-id from these "
                        "debuginfod servers (space separated; default $DEBUGINFOD_URLS)")
    g.add_argument("--symbol-cache", metavar="DIR",
                   help="keep the symbol tables built from binaries there, by build-id, "
                        "for the next runs (default $PERFDATA_CACHE_DIR, else "
                        "~/.cache/perfdata)")
    g.add_argument("--no-symbol-cache", action="store_true",
                   help="build every symbol table afresh, keep none")
    g.add_argument("--no-demangle", action="store_true", help="do not demangle C++/Rust names")
    # (perf's --demangle: the default, accepted as perf accepts it)
    g.add_argument("--demangle", dest="no_demangle", action="store_false",
                   help="demangle C++/Rust names (the default)")
    g.add_argument("--demangle-kernel", action="store_true",
                   help="demangle kernel symbols too (Rust's), as perf does only when asked")
    g.add_argument("--signatures", action="store_true",
                   help="C++ names with their parameter lists, return types and clone "
                        "suffixes (perf -v's form; by default perf's: ns::f<int>)")
    g.add_argument("--inline", action="store_true",
                   help="show inlined frames (perf script's --inline)")
    g.add_argument("--no-inline", action="store_true", help="never look up inlined frames")
    g.add_argument("--max-stack", type=perf_uinteger if unsigned_max_stack else perf_integer,
                   default=127, help="frames per stack (perf's 127)")
    g.add_argument("--unwind", choices=("auto", "dwarf", "fp", "none"), default="auto",
                   help="user stack unwinding (auto: dwarf when samples carry regs and stack)")
    g.add_argument("--stitch", action="store_true",
                   help="complete DWARF stacks cut by the stack snapshot with the outer frames "
                        "of the thread's other samples (same CFA and return address); "
                        "stitched frames are marked")
    f = p.add_argument_group("filters")
    f.add_argument("--pid", type=int_list, help="only these pids (comma separated)")
    f.add_argument("--tid", type=int_list, help="only these tids (comma separated)")
    f.add_argument(*_free(p, "-c", "--comms"), "--comm", dest="comm", type=name_list,
                   metavar="COMM[,COMM]", help="only these comms")
    f.add_argument(*_free(p, "-C", "--cpu"), dest="cpu", type=cpu_list, metavar="CPUS",
                   help="only samples (and side events) taken on these cpus: 0-2,5")
    f.add_argument(*_free(p, "-S", "--symbols"), dest="symbols", type=symbol_list,
                   metavar="SYM[,SYM]", help="only samples whose ip is in one of these "
                   "functions (a hexadecimal entry: at that address), as perf's -S")
    f.add_argument("--dsos", type=name_list, metavar="DSO[,DSO]",
                   help="only samples whose ip is in one of these binaries "
                        "(full path or base name)")
    f.add_argument("--time", type=time_ranges,
                   help="time ranges as perf writes them: start,stop (seconds)")


# Option values, parsed (and refused with argparse's one-line error) once.

def _strtol(text: str) -> int | None:
    """C's strtol(text, &end, 10) where *end must be the string's end (perf's
    parse-options): blanks and a sign before the digits; None if that is not
    the whole string.  A value past a long is LONG_MIN or LONG_MAX."""
    import re
    m = re.fullmatch(r"[ \t\n\v\f\r]*([-+]?)([0-9]+)", text)
    if m is None:
        return None
    value = min(int(m.group(2)), (1 << 63) - (m.group(1) != "-"))
    return -value if m.group(1) == "-" else value


def perf_integer(text: str) -> int:
    """--max-stack as perf's OPT_INTEGER (perf report's) reads it: strtol,
    stored in an int; a negative one walks no caller, as 0 (perf report
    --children --max-stack=-1 prints what --max-stack=0 prints)."""
    value = _strtol(text)
    if value is None:
        raise _arg_error("expects a numerical value: %r" % text)
    value &= 0xffffffff
    return 0 if value >> 31 else value


def perf_uinteger(text: str) -> int:
    """--max-stack as perf's OPT_UINTEGER (perf script's) reads it: refused
    when it starts with '-' ("expects an unsigned numerical value"), else
    strtol stored in an unsigned int, which perf passes on as an int: from
    2**31 (' -1', 4294967295) no caller frame, as 0; 2**32 + 1 is 1."""
    if text.startswith("-"):
        raise _arg_error("expects an unsigned numerical value: %r" % text)
    return perf_integer(text)


def _arg_error(message: str) -> argparse.ArgumentTypeError:
    import argparse
    return argparse.ArgumentTypeError(message)


def int_list(text: str) -> frozenset[int]:
    """'1,2,3' (perf's intlist): a frozenset of ints."""
    try:
        return frozenset(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise _arg_error("not a comma-separated list of numbers: %r" % text)


def name_list(text: str) -> frozenset[str]:
    """perf's strlist: comma-separated names, blanks around them dropped."""
    return frozenset(x.strip() for x in text.split(",") if x.strip())


def _strtoul(text: str, pos: int, base: int) -> tuple[int, int]:
    """C's strtoul(text + pos, &end, base) for base 0 or 10: (value, end).
    Blanks and a sign before the digits; with base 0 '0x' is hexadecimal
    and a leading 0 octal; no digits: (0, pos); a value past an unsigned
    long is ULONG_MAX; '-' negates modulo 2**64."""
    import re
    m = re.compile(r"[ \t\n\v\f\r]*([-+]?)").match(text, pos)
    assert m is not None
    at, sign = m.end(), m.group(1)
    digits, radix = r"[0-9]+", 10
    if base == 0 and re.compile(r"0[xX][0-9a-fA-F]").match(text, at):
        at, digits, radix = at + 2, r"[0-9a-fA-F]+", 16
    elif base == 0 and text.startswith("0", at):
        digits, radix = r"[0-7]+", 8
    got = re.compile(digits).match(text, at)
    if got is None:
        return 0, pos
    value = int(got.group(0), radix)
    if value >> 64:
        return (1 << 64) - 1, got.end()
    return (-value if sign == "-" else value) % (1 << 64), got.end()


_INT_MAX = (1 << 31) - 1


def cpu_list(text: str) -> frozenset[int]:
    """perf_cpu_map__new() as perf 6.1 reads -C: numbers (strtoul base 0:
    0x10, 010 octal) and ranges (`0-2`; `0-` is 0-0) separated by commas,
    read while the list goes on with a digit (`0,a` is cpu 0, a trailing
    comma ends it); a cpu twice, a range downwards or anything else after
    a number is invalid, as is a list with no cpu that is not empty (an
    empty one selects no cpu)."""
    cpus: set[int] = set()
    pos, n = 0, len(text)
    while pos < n and text[pos].isdigit() and text[pos].isascii():
        first, pos = _strtoul(text, pos, 0)
        if first >= _INT_MAX or (pos < n and text[pos] not in ",-"):
            raise _arg_error("invalid cpu list %r (example: 0-2,5)" % text)
        last = first
        if pos < n and text[pos] == "-":
            last, pos = _strtoul(text, pos + 1, 0)
            if last >= _INT_MAX or (pos < n and text[pos] != ","):
                raise _arg_error("invalid cpu list %r (example: 0-2,5)" % text)
            if last < first:
                raise _arg_error("invalid cpu list %r (example: 0-2,5)" % text)
        span = set(range(first, last + 1))
        if span & cpus:
            raise _arg_error("invalid cpu list %r: cpu listed twice" % text)
        cpus |= span
        if pos < n:
            pos += 1
    if not cpus and pos < n:
        raise _arg_error("invalid cpu list %r (example: 0-2,5)" % text)
    return frozenset(cpus)


def symbol_list(text: str) -> tuple[frozenset[str], frozenset[int]]:
    """perf's -S list (symbol.c setup_list and setup_addrlist): an entry
    that reads whole as a hexadecimal number (strtoul base 16: '0x401000',
    '401000', and also a name such as 'add') is an address; the others are
    symbol names.  (names, addresses)."""
    names, addrs = set(), set()
    for entry in name_list(text):
        try:
            addrs.add(int(entry, 16))
        except ValueError:
            names.add(entry)
    return frozenset(names), frozenset(addrs)


def _percent(text: str) -> float:
    """perf's parse_percent(): a number, then '%' (what follows it is ignored)."""
    number, sign, _ = text.partition("%")
    if not sign or not number or number != number.lstrip() or number != number.rstrip():
        raise ValueError(text)
    return float(number) / 100.0


def _percent_ranges(text: str) -> PercentRanges:
    """perf_time__percent_parse_str(): 'a%/n' slices, or 'a%-b%' ranges,
    comma separated, or one 'a%' (the first slice of that size)."""
    lo: str | float         # (the text of a bound, then the fraction)
    hi: str | float
    pairs = []
    if "/" in text or "-" in text:
        for piece in text.split(","):
            if "/" in text:
                size, _, index = piece.partition("/")
                pcnt, i = _percent(size), int(index or "0")
                if pcnt <= 0.0:
                    raise ValueError(piece)
                pairs.append((pcnt * (i - 1), pcnt * i))
            else:
                lo, _, hi = piece.partition("-")
                pairs.append((_percent(lo), _percent(hi)))
    else:
        if not text.endswith("%"):
            raise ValueError(text)
        pcnt = _percent(text)
        if pcnt <= 0.0:
            raise ValueError(text)
        pairs.append((0.0, pcnt))
    for lo, hi in pairs:
        if not (0.0 <= lo <= 1.0 and 0.0 <= hi <= 1.0):
            raise ValueError(text)
    return PercentRanges(pairs)


def time_ranges(text: str) -> TimeRanges | PercentRanges:
    """perf's --time: 'start,stop' in seconds (either may be empty), several
    ranges separated by spaces: [(start_ns or None, stop_ns or None)]; or in
    percent of the profile's span (PercentRanges)."""
    if "%" in text:
        try:
            return _percent_ranges(text)
        except ValueError:
            raise _arg_error("invalid time range %r (percent: 10%%/2, 0%%-10%%,30%%-40%% "
                             "or 50%%)" % text)
    try:
        return _perf_time_ranges(text)
    except ValueError:
        raise _arg_error("invalid time range %r (start,stop in seconds; ranges "
                         "ascending, separated by a space)" % text)


def _perf_time_ranges(text: str) -> TimeRanges:
    """perf_time__parse_strs(): as many ranges as commas (none: invalid),
    each but the last ended by the first blank after its comma (a second
    comma before it is invalid); every range must end before the next
    starts.  A bound of 0 or none is open (perf's 0)."""
    num = text.count(",")
    if not num:
        raise ValueError(text)
    pieces = []
    pos = 0
    for _ in range(num - 1):
        at = text.index(",", pos) + 1
        while at < len(text) and text[at] in " \t\n\v\f\r":
            at += 1
        while at < len(text) and text[at] not in " \t\n\v\f\r":
            if text[at] == ",":
                raise ValueError(text)
            at += 1
        pieces.append(text[pos:at])
        pos = at + 1 if at < len(text) else at
    pieces.append(text[pos:])
    ranges = [_perf_time_range(piece) for piece in pieces]
    for (_, stop), (start, _) in zip(ranges, ranges[1:]):
        if (stop or 0) >= (start or 0):
            raise ValueError(text)
    return ranges


def _perf_time_range(text: str) -> tuple[int | None, int | None]:
    """perf_time__parse_str(): 'start,stop', either empty; a stop (not 0)
    before its start is invalid."""
    lo_text, _, hi_text = text.partition(",")
    lo = _perf_nsec_time(lo_text) if lo_text else 0
    hi = _perf_nsec_time(hi_text) if hi_text else 0
    if hi and hi < lo:
        raise ValueError(text)
    return lo or None, hi or None


def _perf_nsec_time(text: str) -> int:
    """parse_nsec_time(): seconds (strtoul, base 10), then optionally '.'
    and at most 9 digits of fraction; nanoseconds, modulo 2**64 as perf's
    u64 ('-1' is far in the future)."""
    secs, end = _strtoul(text, 0, 10)
    rest = text[end:]
    if rest and not rest.startswith("."):
        raise ValueError(text)
    nsecs = 0
    if rest:
        frac = rest[1:]
        if len(frac) > 9:
            raise ValueError(text)
        frac = frac.ljust(9, "0")
        nsecs, end = _strtoul(frac, 0, 10)
        if end != len(frac):
            raise ValueError(text)
    return (secs * 1_000_000_000 + nsecs) % (1 << 64)


def option_value(value: T | str, parse: Callable[[str], T]) -> T:
    """An option's value as its parser makes it (argparse gives it parsed
    already; a caller's Namespace may hold the text)."""
    return parse(value) if isinstance(value, str) else value


def resolve_options(args: argparse.Namespace) -> ResolveOptions:
    """The ResolveOptions a command's arguments give (those of
    add_symbolize_options, and the command's own that change how frames are
    named: script's -F srcline, --full-source-path, -G, --reltime); an
    option the command does not take has ResolveOptions' default."""
    from symbolize import parse_path_map

    from ..core import compiled_unwind
    from ..resolve.pipeline import DEFAULT_MAX_STACK, ResolveOptions

    def parsed(name: str, parse: Callable[[str], T]) -> T | None:
        value = getattr(args, name, None)
        return None if value is None else option_value(value, parse)
    time = parsed("time", time_ranges) if getattr(args, "time", None) else None
    return ResolveOptions(
        debug_dirs=tuple(getattr(args, "debug_dir", None) or ()),
        symfs=getattr(args, "symfs", None),
        path_maps=tuple(parse_path_map(m) if isinstance(m, str) else (m[0], m[1])
                        for m in getattr(args, "path_map", None) or ()),
        archive=getattr(args, "archive", None),
        buildid_dir=getattr(args, "buildid_dir", None),
        kallsyms=getattr(args, "kallsyms", None),
        vmlinux=getattr(args, "vmlinux", None),
        vdso=getattr(args, "vdso", None),
        debuginfod=getattr(args, "debuginfod", None),
        symbol_cache=getattr(args, "symbol_cache", None),
        no_symbol_cache=getattr(args, "no_symbol_cache", False),
        demangle=not getattr(args, "no_demangle", False),
        demangle_kernel=getattr(args, "demangle_kernel", False),
        signatures=getattr(args, "signatures", False),
        inline=getattr(args, "inline", False),
        no_inline=getattr(args, "no_inline", False),
        srcline="srcline" in (getattr(args, "fields", None) or ""),
        full_source_path=getattr(args, "full_source_path", False),
        max_stack=getattr(args, "max_stack", DEFAULT_MAX_STACK),
        # -G (perf script's --hide-call-graph): only the sample's own ip.
        unwind="none" if getattr(args, "hide_call_graph", False)
        else getattr(args, "unwind", "auto"),
        stitch=getattr(args, "stitch", False),
        pids=parsed("pid", int_list), tids=parsed("tid", int_list),
        comms=parsed("comm", name_list), cpus=parsed("cpu", cpu_list),
        symbols=parsed("symbols", symbol_list), dsos=parsed("dsos", name_list),
        time=tuple(time) if time is not None and not isinstance(time, PercentRanges)
        else time,
        reltime=getattr(args, "reltime", False),
        strict=getattr(args, "strict", False),
        compiled_unwind=compiled_unwind())


def shown_kernel_path(samples: SampleSymbolizer, args: argparse.Namespace) -> str | None:
    """perf script --show-kernel-path prints the kernel dso's long name: the
    vmlinux its symbols were read from (dso__load_vmlinux); from kallsyms
    that name stays [kernel.kallsyms], so then nothing changes.  None or the
    path."""
    if not getattr(args, "show_kernel_path", False) or not getattr(args, "vmlinux", None):
        return None
    table = samples.symbolizer.given_kernel_symbols
    return args.vmlinux if table is not None and not isinstance(table, str) and len(table) \
        else None


class SampleRun:
    """One command's pass over a file: the open PerfFile and its symbolized
    samples, with a progress bar on a terminal; the run's warnings are printed
    once when the iteration ends, also after an error."""

    def __init__(self, args: argparse.Namespace, label: str,
                 side_events: Iterable[int] = ()) -> None:
        from ..resolve.pipeline import build_sample_symbolizer
        from ..run.profile import open_profile
        self.pf = open_profile(args.file, getattr(args, "strict", False))
        self.samples = build_sample_symbolizer(self.pf, resolve_options(args), side_events)
        self.label = label

    def __iter__(self) -> Iterator[SymbolizedSample]:
        from ..run.profile import print_warnings
        from ..run.progress import sample_progress
        try:
            # (samples only: no caller of SampleRun asks for side events)
            yield from sample_progress(self.samples, self.pf, self.label)  # type: ignore[misc]
        finally:
            print_warnings(self.pf, self.samples.symbolizer.warnings)
