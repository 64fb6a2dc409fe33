"""Command line of perfdata: argument parsing, one call per command, exit codes."""
import argparse
import os
import sys

EXIT_BAD_INPUT = 2


def _open(path):
    import perfdata
    return perfdata.open(path)


def cmd_stats(args, out):
    from perfdata.views.stats import RecordStats, describe_stats
    pf = _open(args.file)
    stats = RecordStats()
    try:
        for rec in pf.records(order="file", include_compressed=True):
            stats.add(rec)
    finally:
        out.write(describe_stats(pf, stats))
        _warn(pf)


def cmd_dump(args, out):
    from perfdata.views import dump
    pf = _open(args.file)
    if not args.json:
        for line in dump.describe_header(pf) + dump.describe_attrs(pf) + dump.describe_features(pf):
            out.write(line + "\n")
    try:
        dump.dump_records(pf, out.write, as_json=args.json,
                          order="time" if args.time_order else "file")
    finally:
        _warn(pf)


def cmd_header(args, out):
    from perfdata.views.header import describe_header
    pf = _open(args.file)
    out.write(describe_header(pf, full=args.full))
    _warn(pf)


def add_symbolize_options(p):
    """Options every command that symbolizes shares (one definition)."""
    g = p.add_argument_group("symbols")
    g.add_argument("--debug-dir", action="append", default=[], metavar="DIR",
                   help="directory of debug files (.build-id layout or path layout); repeatable")
    g.add_argument("--symfs", metavar="ROOT", help="look for binaries under ROOT")
    g.add_argument("--buildid-dir", metavar="DIR", help="perf's build-id cache (default ~/.debug)")
    g.add_argument("--kallsyms", metavar="FILE", help="kernel symbols file")
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


def make_sample_symbolizer(pf, args):
    from symbolize import DebugInfoLocator, Symbolizer
    from perfdata.symbolized import SampleSymbolizer
    locator = DebugInfoLocator(debug_dirs=args.debug_dir, symfs=args.symfs,
                               **({"buildid_dir": args.buildid_dir} if args.buildid_dir else {}))
    symbolizer = Symbolizer(locator, demangle=not args.no_demangle,
                            inline=args.inline and not args.no_inline,
                            **({"kallsyms": args.kallsyms} if args.kallsyms else {}))
    return SampleSymbolizer(pf, symbolizer, max_stack=args.max_stack, unwind=args.unwind,
                            filters=make_sample_filter(args), dwarf_inline=not args.no_inline)


def cmd_script(args, out):
    from perfdata.views.script import ScriptFormatter, sample_to_json
    pf = _open(args.file)
    samples = make_sample_symbolizer(pf, args)
    fmt = ScriptFormatter(pf, args.fields, nanosecs=args.ns)
    write = out.write
    try:
        for sample in samples:
            write(sample_to_json(sample) + "\n" if args.json else fmt.format(sample))
    finally:
        _warn(pf, samples.symbolizer.warnings)


def _warn(pf, extra=()):
    seen = set()
    for message in list(pf.warnings) + list(extra):
        if message not in seen:
            seen.add(message)
            sys.stderr.write("perfdata: warning: %s\n" % message)


def build_parser():
    parser = argparse.ArgumentParser(prog="perfdata", description=__doc__)
    parser.add_argument("--traceback", action="store_true", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("stats", help="record counts, as perf report --stats")
    p.add_argument("file", nargs="?", default="perf.data")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("dump", help="every record with its offset and fields")
    p.add_argument("file", nargs="?", default="perf.data")
    p.add_argument("--json", action="store_true", help="JSON lines")
    p.add_argument("--time-order", action="store_true", help="perf's time order")
    p.set_defaults(func=cmd_dump)

    p = sub.add_parser("header", help="the metadata, as perf report --header-only")
    p.add_argument("file", nargs="?", default="perf.data")
    p.add_argument("-I", "--full", action="store_true", help="topology, caches, pmu caps")
    p.set_defaults(func=cmd_header)

    p = sub.add_parser("script", help="samples with symbolized stacks, as perf script")
    p.add_argument("file", nargs="?", default="perf.data")
    p.add_argument("-i", "--input", dest="file_opt", help="input file (as perf's -i)")
    p.add_argument("-F", "--fields", help="fields, with perf's syntax")
    p.add_argument("--ns", action="store_true", help="nanosecond timestamps")
    p.add_argument("--json", action="store_true", help="one JSON object per sample")
    add_symbolize_options(p)
    p.set_defaults(func=cmd_script)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "file_opt", None):
        args.file = args.file_opt
    from perfdata.format.errors import PerfDataError
    out = sys.stdout
    try:
        args.func(args, out)
        out.flush()
    except BrokenPipeError:
        # `| head` closed the pipe: end quietly, as perf does.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return 0
    except PerfDataError as exc:
        if args.traceback:
            raise
        _flush_quietly(out)
        sys.stderr.write("perfdata: error: %s\n" % exc.describe())
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    return 0


def _flush_quietly(out):
    try:
        out.flush()
    except (BrokenPipeError, OSError):
        pass


if __name__ == "__main__":
    sys.exit(main())
