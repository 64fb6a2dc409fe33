"""Options shared by every command that symbolizes samples (script, collapse,
flamegraph, report, export, diagnose): one definition, so a command line
written for one works for the others, with perf's spellings."""
from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import TypeVar

    from symbolize import CacheDir, KernelSymbols

    from ..format import PerfFile
    from ..resolve.frames import StackFrame
    from ..session.stream import Sample
    from ..resolve.symbolized import SampleSymbolizer, SymbolizedSample

    T = TypeVar("T")
    # --time: [(start_ns or None, stop_ns or None)], or PercentRanges
    TimeRanges = list[tuple[int | None, int | None]]


def print_warnings(pf: PerfFile, extra: Iterable[str] = ()) -> None:
    """Each warning of a run once on stderr (the file's, then the symbolizer's)."""
    import sys
    seen = set()
    for message in list(pf.warnings) + list(extra):
        if message not in seen:
            seen.add(message)
            sys.stderr.write("perfdata: warning: %s\n" % message)


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


class PercentRanges(tuple):
    """perf's --time in percent of the profile's span ('10%/2', '0%-10%,30%-40%',
    '50%'): (start, end) fractions, made times once the file's first and last
    sample times are known (resolve)."""

    def resolve(self, first: int, last: int) -> list[tuple[int, int]]:
        """[(start_ns, end_ns)] as perf's set_percent_time() computes them."""
        total = last - first
        out = []
        for lo, hi in self:
            start = first + math.floor(lo * total + 0.5)     # C's round()
            end = first + math.floor(hi * total + 0.5)
            if end > start and end != last:
                end -= 1
            out.append((start, end))
        return out


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


def make_sample_filter(args: argparse.Namespace, first_sample_time: int = 0,
                       sample_span: tuple[int, int] | None = None
                       ) -> Callable[[Sample], bool] | None:
    """The filters a sample passes before it is symbolized (pid, tid, comm,
    cpu, time): None when none is given, so that they cost nothing.
    first_sample_time: with --reltime perf reads --time relative to it;
    sample_span: (first, last) sample time, for --time in percent."""
    # (An empty list selects nothing, as perf's empty strlist.)
    pids = option_value(args.pid, int_list) if args.pid is not None else None
    tids = option_value(args.tid, int_list) if args.tid is not None else None
    comms = option_value(args.comm, name_list) if args.comm is not None else None
    cpus = option_value(getattr(args, "cpu", None), cpu_list)
    ranges = None
    if args.time:
        parsed = option_value(args.time, time_ranges)
        if isinstance(parsed, PercentRanges):
            # (with --reltime perf shifts these by the first sample time too)
            parsed = parsed.resolve(*(sample_span or (0, 0)))
        ranges = [(first_sample_time + lo if lo is not None else 0,
                   first_sample_time + hi if hi is not None else 1 << 64)
                  for lo, hi in parsed]
    if pids is None and tids is None and comms is None and ranges is None and cpus is None:
        return None

    def keep(sample: Sample) -> bool:
        if pids is not None and sample.pid not in pids:
            return False
        if tids is not None and sample.tid not in tids:
            return False
        if comms is not None and sample.comm not in comms:
            return False
        # perf's filter_cpu(): a sample without a cpu passes.
        if cpus is not None and sample.cpu is not None and sample.cpu not in cpus:
            return False
        if ranges is not None and not any(lo <= sample.time <= hi for lo, hi in ranges):
            return False
        return True
    return keep


def make_leaf_filter(args: argparse.Namespace
                     ) -> Callable[[Sample, Sequence[StackFrame]], bool] | None:
    """perf's -S and --dsos (machine__resolve): they look at the sample's own
    ip only: the dso of its map (by full path or base name) and the function
    there (not an inlined one), or for -S a hexadecimal entry equal to the
    ip.  keep(sample, leaf_frames), or None when neither is given."""
    syms = option_value(getattr(args, "symbols", None), symbol_list)
    dsos = option_value(getattr(args, "dsos", None), name_list)
    if syms is None and dsos is None:
        return None
    names, addrs = syms if syms is not None else (None, None)
    import os

    def keep(sample: Sample, leaf: Sequence[StackFrame]) -> bool:
        frame = next((f for f in leaf if not f.inlined), None)
        mapped = frame is not None and frame.note != "no-map"
        if dsos is not None:
            if not mapped:
                return False
            dso = frame.dso  # type: ignore[union-attr]  # (mapped: a frame)
            if dso not in dsos and os.path.basename(dso) not in dsos and \
                    _module_name(dso) not in dsos:
                return False
        if names is not None:
            if frame is not None and frame.symbol is not None and \
                    frame.symbol in names:
                return True
            return mapped and sample.ip in addrs  # type: ignore[operator]  # (-S: addrs too)
        return True
    return keep


def _module_name(path: str) -> str | None:
    """A kernel module's perf short name: /lib/modules/.../nf_nat.ko -> [nf_nat]."""
    if not path.endswith((".ko", ".ko.xz", ".ko.gz", ".ko.zst")):
        return None
    import os
    base = os.path.basename(path).split(".ko")[0]
    return "[%s]" % base.replace("-", "_")


def kernel_symbols_from_args(pf: PerfFile, args: argparse.Namespace
                             ) -> KernelSymbols | str | None:
    """--vmlinux (checked against the file's kernel build-id) or --kallsyms."""
    if getattr(args, "vmlinux", None):
        from symbolize import KernelSymbols

        from ..session.machine import KERNEL_DSO
        from ..session.stream import recorded_build_ids
        table = KernelSymbols.from_vmlinux(args.vmlinux,
                                           recorded_build_ids(pf).get(KERNEL_DSO))
        pf.warnings.extend(table.warnings)
        return table
    return args.kallsyms


def cache_from_args(args: argparse.Namespace) -> CacheDir:
    """The one CacheDir every cache of the run uses: --symbol-cache DIR,
    else $PERFDATA_CACHE_DIR or ~/.cache/perfdata; disabled by
    --no-symbol-cache (nothing is read from it or written to it)."""
    from symbolize import CacheDir
    if getattr(args, "no_symbol_cache", False):
        return CacheDir(None)
    chosen = getattr(args, "symbol_cache", None)
    return CacheDir(chosen) if chosen else CacheDir.default()


def sample_span(pf: PerfFile) -> tuple[int, int]:
    """The file's (first, last) sample time (HEADER_SAMPLE_TIME), or (0, 0)."""
    from ..format import Feature, PerfDataError
    try:
        got = pf.feature(Feature.SAMPLE_TIME) or {}
    except PerfDataError:
        return 0, 0
    return got.get("first_sample_time", 0) or 0, got.get("last_sample_time", 0) or 0


def first_sample_time(pf: PerfFile) -> int:
    """The file's first sample time (HEADER_SAMPLE_TIME), or 0."""
    return sample_span(pf)[0]


def check_cpu_filter(pf: PerfFile, args: argparse.Namespace) -> None:
    """perf_session__cpu_bitmap(): -C needs samples that carry their cpu."""
    if getattr(args, "cpu", None) is None:
        return
    from ..format import SampleType as ST, PerfDataError
    first: dict[int, Any] = {}
    for ea in pf.attrs:
        if ea.attr["type"] < 6:         # PERF_TYPE_MAX: not the dynamic PMUs
            first.setdefault(ea.attr["type"], ea)
    if any(not ea.sample_type & ST.CPU for ea in first.values()):
        raise PerfDataError("the file does not contain CPU events (record with "
                            "--sample-cpu or -a): remove -C to proceed")
    from ..format import Feature
    try:
        nr = (pf.feature(Feature.NRCPUS) or {}).get("nr_cpus_available")
    except PerfDataError:
        nr = None
    cpus = option_value(args.cpu, cpu_list)
    if nr and cpus and max(cpus) >= nr:
        # perf_session__cpu_bitmap(): "Requested CPU %d too large".
        raise PerfDataError("-C: cpu %d is not one of the recording machine's %d cpus"
                            % (max(cpus), nr))


def open_profile(path: str, strict: bool = False) -> PerfFile:
    """The PerfFile every command reads: `perfdata --strict` (stop at the
    first fault) reaches every command through here."""
    from ..format import PerfFile
    return PerfFile(path, strict=strict)


def _written_at(path: str | None) -> float | None:
    """When the profile at path was last written (perf record writes its
    header last), or None for standard input."""
    if not path or path == "-":
        return None
    try:
        return os.stat(path).st_mtime
    except (OSError, ValueError, TypeError):
        return None


def make_sample_symbolizer(pf: PerfFile, args: argparse.Namespace, side_events: Iterable[int] = (),
                           order: str = "time", stitch: bool | None = None,
                           share: tuple[int, int, int] | None = None) -> SampleSymbolizer:
    """The SampleSymbolizer the options describe (order='file' for perf
    script's --show-round-events, which turns perf's time ordering off;
    stitch: True or False whatever --stitch says)."""
    from symbolize import Symbolizer
    from ..resolve.symbolized import SampleSymbolizer
    from symbolize import make_locator
    debug_dirs = list(args.debug_dir)
    buildid_dir = args.buildid_dir
    vdso = getattr(args, "vdso", None)
    if getattr(args, "archive", None):
        # An archive made by `perfdata archive`: unpacked once, then searched
        # like a --debug-dir (and as perf's build-id cache, for kallsyms);
        # its vdso image is the recording machine's.
        from ..buildid_archive import archived_vdso, open_archive
        unpacked = open_archive(args.archive)
        debug_dirs.insert(0, unpacked)
        buildid_dir = buildid_dir or unpacked
        vdso = vdso or archived_vdso(unpacked)
    # A DebuginfodLocator when --debuginfod or $DEBUGINFOD_URLS names a server.
    locator = make_locator(getattr(args, "debuginfod", None),
                           debug_dirs=debug_dirs, symfs=args.symfs,
                           path_map=getattr(args, "path_map", ()),
                           **({"buildid_dir": buildid_dir} if buildid_dir else {}))
    wants_srcline = "srcline" in (getattr(args, "fields", None) or "")
    symbolizer = Symbolizer(locator, demangle=not args.no_demangle, cache_dir=cache_from_args(args),
                            signatures=getattr(args, "signatures", False),
                            inline=args.inline and not args.no_inline, srcline=wants_srcline,
                            # whole source paths as addr2line gives them only
                            # where they are printed
                            source_paths=getattr(args, "full_source_path", False),
                            vdso=vdso, demangle_kernel=getattr(args, "demangle_kernel", False),
                            recorded_at=_written_at(getattr(args, "file", None)),
                            **({"kallsyms": kernel_symbols_from_args(pf, args)}
                               if args.kallsyms or getattr(args, "vmlinux", None) else {}))
    check_cpu_filter(pf, args)
    # perf script --reltime reads --time relative to the first sample
    # (perf_time__parse_for_ranges_reltime(), which refuses a file that does
    # not say when that was).
    base = 0
    span = None
    if args.time and getattr(args, "reltime", False):
        base = first_sample_time(pf)
        if not base:
            from ..format import PerfDataError
            raise PerfDataError("--reltime --time: the file has no first sample time "
                                "(HEADER_SAMPLE_TIME); give absolute times without --reltime")
    if args.time and isinstance(option_value(args.time, time_ranges), PercentRanges):
        span = sample_span(pf)
        if span == (0, 0):
            from .errors import CommandError
            raise CommandError("--time in percent: the file has no first/last sample time "
                               "(HEADER_SAMPLE_TIME)")
    cpus = getattr(args, "cpu", None)
    # -G (perf script's --hide-call-graph): only the sample's own ip.
    unwind = "none" if getattr(args, "hide_call_graph", False) else args.unwind
    return SampleSymbolizer(pf, symbolizer, max_stack=args.max_stack, unwind=unwind,
                            filters=make_sample_filter(args, base, span),
                            leaf_filter=make_leaf_filter(args),
                            dwarf_inline=not args.no_inline,
                            side_events=side_events, side_cpus=cpus, order=order,
                            strict=getattr(args, "strict", False),
                            stitch=getattr(args, "stitch", False) if stitch is None else stitch,
                            share=share)


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
        self.pf = open_profile(args.file, getattr(args, "strict", False))
        self.samples = make_sample_symbolizer(self.pf, args, side_events)
        self.label = label

    def __iter__(self) -> Iterator[SymbolizedSample]:
        from ..run.progress import sample_progress
        try:
            # (samples only: no caller of SampleRun asks for side events)
            yield from sample_progress(self.samples, self.pf, self.label)  # type: ignore[misc]
        finally:
            print_warnings(self.pf, self.samples.symbolizer.warnings)
