"""Options shared by every command that symbolizes samples (script, collapse,
flamegraph, report, export, diagnose): one definition, so a command line
written for one works for the others, with perf's spellings."""


def print_warnings(pf, extra=()):
    """Each warning of a run once on stderr (the file's, then the symbolizer's)."""
    import sys
    seen = set()
    for message in list(pf.warnings) + list(extra):
        if message not in seen:
            seen.add(message)
            sys.stderr.write("perfdata: warning: %s\n" % message)


def add_input_argument(p):
    """The input file, positional or with perf's -i."""
    p.add_argument("file", nargs="?", default="perf.data")
    p.add_argument("-i", "--input", dest="file_opt", help="input file (as perf's -i)")


def add_symbolize_options(p):
    """Options every command that symbolizes shares (one definition)."""
    g = p.add_argument_group("symbols")
    g.add_argument("--debug-dir", action="append", default=[], metavar="DIR",
                   help="directory of debug files (.build-id layout or path layout); repeatable")
    g.add_argument("--symfs", metavar="ROOT", help="look for binaries under ROOT")
    g.add_argument("--archive", metavar="FILE.tar.zst",
                   help="binaries and debug files packed by `perfdata archive`")
    g.add_argument("--buildid-dir", metavar="DIR", help="perf's build-id cache (default ~/.debug)")
    g.add_argument("--kallsyms", metavar="FILE", help="kernel symbols file")
    g.add_argument("--vmlinux", metavar="FILE", help="the kernel's ELF image, for its symbols")
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
    g.add_argument("--inline", action="store_true",
                   help="show inlined frames (perf script's --inline)")
    g.add_argument("--no-inline", action="store_true", help="never look up inlined frames")
    g.add_argument("--max-stack", type=int, default=127, help="frames per stack (perf's 127)")
    g.add_argument("--unwind", choices=("auto", "dwarf", "fp", "none"), default="auto",
                   help="user stack unwinding (auto: dwarf when samples carry regs and stack)")
    f = p.add_argument_group("filters")
    f.add_argument("--pid", help="only these pids (comma separated)")
    f.add_argument("--tid", help="only these tids (comma separated)")
    f.add_argument("--comm", help="only these comms (comma separated)")
    f.add_argument("--time", help="time ranges as perf writes them: start,stop (seconds)")


def make_sample_filter(args):
    pids = {int(x) for x in args.pid.split(",")} if args.pid else None
    tids = {int(x) for x in args.tid.split(",")} if args.tid else None
    comms = set(args.comm.split(",")) if args.comm else None
    ranges = parse_time_ranges(args.time) if args.time else None
    if not (pids or tids or comms or ranges):
        return None

    def keep(sample):
        if pids is not None and sample.pid not in pids:
            return False
        if tids is not None and sample.tid not in tids:
            return False
        if comms is not None and sample.comm not in comms:
            return False
        if ranges is not None and not any(lo <= sample.time <= hi for lo, hi in ranges):
            return False
        return True
    return keep


def parse_time_ranges(text):
    """perf's --time: 'start,stop' in seconds (either may be empty), several
    ranges separated by spaces."""
    ranges = []
    for part in text.split():
        lo, _, hi = part.partition(",")
        lo_ns = int(float(lo) * 1e9) if lo.strip() else 0
        hi_ns = int(float(hi) * 1e9) if hi.strip() else (1 << 64)
        ranges.append((lo_ns, hi_ns))
    return ranges


def kernel_symbols_from_args(pf, args):
    """--vmlinux (checked against the file's kernel build-id) or --kallsyms."""
    if getattr(args, "vmlinux", None):
        from symbolize.kallsyms import KernelSymbols
        bid = next((b for name, b in pf.recorded_build_ids().items()
                    if name.startswith("[kernel.kallsyms]")), None)
        table = KernelSymbols.from_vmlinux(args.vmlinux, bid)
        pf.warnings.extend(table.warnings)
        return table
    return args.kallsyms


def make_sample_symbolizer(pf, args, side_events=()):
    """The SampleSymbolizer the options describe."""
    from symbolize import Symbolizer
    from ..symbolized import SampleSymbolizer
    from symbolize.debuginfod import make_locator
    debug_dirs = list(args.debug_dir)
    buildid_dir = args.buildid_dir
    if getattr(args, "archive", None):
        # An archive made by `perfdata archive`: unpacked once, then searched
        # like a --debug-dir (and as perf's build-id cache, for kallsyms).
        from ..buildid_archive import open_archive
        unpacked = open_archive(args.archive)
        debug_dirs.insert(0, unpacked)
        buildid_dir = buildid_dir or unpacked
    # A DebuginfodLocator when --debuginfod or $DEBUGINFOD_URLS names a server.
    locator = make_locator(getattr(args, "debuginfod", None),
                           debug_dirs=debug_dirs, symfs=args.symfs,
                           **({"buildid_dir": buildid_dir} if buildid_dir else {}))
    wants_srcline = "srcline" in (getattr(args, "fields", None) or "")
    cache = None
    if not getattr(args, "no_symbol_cache", False):
        from symbolize.cachedir import perfdata_cache_dir
        cache = getattr(args, "symbol_cache", None) or perfdata_cache_dir()
    symbolizer = Symbolizer(locator, demangle=not args.no_demangle, cache_dir=cache,
                            inline=args.inline and not args.no_inline, srcline=wants_srcline,
                            **({"kallsyms": kernel_symbols_from_args(pf, args)}
                               if args.kallsyms or getattr(args, "vmlinux", None) else {}))
    return SampleSymbolizer(pf, symbolizer, max_stack=args.max_stack, unwind=args.unwind,
                            filters=make_sample_filter(args), dwarf_inline=not args.no_inline,
                            side_events=side_events,
                            strict=getattr(args, "strict", False))


class SampleRun:
    """One command's pass over a file: the open PerfFile and its symbolized
    samples, with a progress bar on a terminal; the run's warnings are printed
    once when the iteration ends, also after an error."""

    def __init__(self, args, label, side_events=()):
        import perfdata
        self.pf = perfdata.open(args.file, strict=getattr(args, "strict", False))
        self.samples = make_sample_symbolizer(self.pf, args, side_events)
        self.label = label

    def __iter__(self):
        from .progress import sample_progress
        try:
            yield from sample_progress(self.samples, self.pf, self.label)
        finally:
            print_warnings(self.pf, self.samples.symbolizer.warnings)
