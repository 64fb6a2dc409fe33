# PYTHON_ARGCOMPLETE_OK  (argcomplete's global completion looks for this line)
"""The perfdata command: argument parsing, one call per command, exit codes.

Installed as the `perfdata` script (pyproject's [project.scripts]), run by
`python -m perfdata` (__main__.py) and, from a checkout, by the repository's
cli.py; the only place that maps errors to exit codes."""
from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import types
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import NoReturn

    from perfdata.format import PerfFile

EXIT_BAD_INPUT = 2
# Net new objects between young-generation collections (CPython's default:
# 700), and young collections between older ones (10, 10): objects freed by
# their count do not count, so only what the caches keep (and cyclic garbage,
# which the hot paths do not make) brings a collection.  At 50,000 / 20 / 50
# the collector still took a tenth of a `-g` run, walking each young
# generation's survivors (the caches' new frames) again and again (the make
# recording of benchmarks/bench_real.py, script -j 1, against a checkout with
# the old thresholds by benchmarks/bench_core.py --before: 0.905x CPU at
# 500,000 / 100 / 100; 2,000,000 is no faster; peak RSS unchanged).
GC_YOUNG_THRESHOLD = 500000
GC_OLDER_THRESHOLDS = (100, 100)
# Standard modules that construct imports and a run never uses: its
# debugger's (construct.debug: pdb, inspect, traceback) and those of two of
# its classes (Pickled: pickle; Checksum and compiled parsers: hashlib, which
# loads OpenSSL): 12 ms, a third of perfdata's imports, on every command.
UNUSED_MODULES = ("pdb", "inspect", "traceback", "pickle", "hashlib")
_stand_ins: dict[str, types.ModuleType] = {}


def defer_modules(*names: str) -> None:
    """Import the modules of `names` at their first use, in this process.

    A stand-in put in sys.modules before construct is imported takes each
    one's place: `import` statements bind it and nothing more, and the first
    attribute anyone reads of it imports the real module (the stand-in then
    holds what the real one holds).  importlib.util.LazyLoader cannot serve:
    an `import` statement reads the module's __spec__, which makes a lazy
    module load at once.  Done by the command line only (below): a program
    that imports perfdata as a library keeps sys.modules as it is."""
    for name in names:
        if name not in sys.modules:
            sys.modules[name] = _stand_ins[name] = _stand_in(name)


def still_deferred() -> list[str]:
    """The deferred modules not imported yet (their stand-in unused)."""
    return sorted(name for name, stand_in in _stand_ins.items()
                  if sys.modules.get(name) is stand_in)


def _stand_in(name: str) -> types.ModuleType:
    stand_in = types.ModuleType(name, "(imported at its first use)")

    def __getattr__(attr: str) -> Any:
        # (called only for what the stand-in does not hold: before the
        # import, everything; after it, names the real module lacks too)
        if sys.modules.get(name) is stand_in:
            del sys.modules[name]
        real = importlib.import_module(name)
        stand_in.__dict__.update(real.__dict__)
        return getattr(real, attr)

    stand_in.__getattr__ = __getattr__  # type: ignore[method-assign]  # (a module's __getattr__, PEP 562)
    return stand_in


# (before perfdata's modules import construct: the package perfdata, which
# Python imports before this module, imports no construct until its
# PerfFile is used; a test checks, tests/cli/test_startup.py)
defer_modules(*UNUSED_MODULES, "platform")
# platform's one use in a run: construct.lib.py3compat's ONWINDOWS =
# platform.system() == "Windows", at its import.  The stand-in answers it as
# platform does on a POSIX system (uname's sysname), and platform's import
# (nine regular expressions compiled: 1.4 ms) is left to --version.
if "platform" in _stand_ins:
    _stand_ins["platform"].system = lambda: os.uname().sysname  # type: ignore[attr-defined]

from perfdata.run.limits import raise_open_files_limit  # noqa: E402
from perfdata.run.profile import print_warnings  # noqa: E402
from perfdata.views.options import add_input_argument  # noqa: E402


def _open(path: str, strict: bool = False) -> PerfFile:
    from perfdata.run.profile import open_profile
    return open_profile(path, strict)


def cmd_stats(args: argparse.Namespace, out: TextIO) -> None:
    from perfdata.views.stats import RecordStats, describe_stats, gather_stats
    pf = _open(args.file, args.strict)
    stats = RecordStats()
    try:
        gather_stats(pf, stats)
    finally:
        out.write(describe_stats(pf, stats))
        print_warnings(pf)


def cmd_dump(args: argparse.Namespace, out: TextIO) -> None:
    from perfdata.views import dump
    pf = _open(args.file, args.strict)
    if not args.json:
        for line in dump.describe_header(pf) + dump.describe_attrs(pf) + dump.describe_features(pf):
            out.write(line + "\n")
    try:
        dump.dump_records(pf, out.write, as_json=args.json,
                          order="time" if args.time_order else "file", strict=args.strict)
    finally:
        print_warnings(pf)


def cmd_header(args: argparse.Namespace, out: TextIO) -> None:
    from perfdata.views.header import describe_header
    pf = _open(args.file, args.strict)
    out.write(describe_header(pf, full=args.full))
    print_warnings(pf)


def cmd_script(args: argparse.Namespace, out: TextIO) -> None:
    """`perfdata script`: the view's run, or with -s FILE / -g LANG perf's
    scripting (perfdata/scripting, a floor above the views)."""
    if args.script or args.gen_script:
        from perfdata.scripting.command import run_scripting
        run_scripting(_open(args.file, args.strict), args, out)
        return
    from perfdata.views.script import run
    run(args, out)


def _add_scripting_options(p: argparse.ArgumentParser) -> None:
    """script's -s and -g: perf's Python scripting (perfdata/scripting)."""
    from perfdata.scripting.command import ScriptArguments
    # (the words after FILE are the script's from the first that is no
    # option of script's, or after `--`)
    p.add_argument("-s", "--script", nargs="...", action=ScriptArguments,
                   metavar="FILE [ARG]",
                   help="run a perf Python script (its handlers, param_dict, "
                        "perf_trace_context); the script's arguments follow FILE "
                        "(after -- where one starts with -)")
    p.add_argument("-g", "--gen-script", metavar="LANG",
                   help="write perf-script.py, a starter script for the file's events "
                        "(LANG: python)")


def cmd_completion(args: argparse.Namespace, out: TextIO) -> None:
    from perfdata.completion import shell_script
    out.write(shell_script(args.shell))


class _Parser(argparse.ArgumentParser):
    """A command line refused in one line (perf's usage text aside), exit 2;
    its help laid out by _HelpFormatter, as its commands' (add_parser makes
    their parsers of this class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, "%s: error: %s\n" % (self.prog, message))


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Examples kept as written; the command list in one column (argparse
    leaves the commands' names out of its column width when the commands
    have a metavar, and puts the long ones' help on the next line)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        # (argparse's own default width imports shutil, and with it bz2 and
        # lzma, 2 ms of each command's start-up: argparse makes a formatter
        # for every option added, to check its metavar)
        super().__init__(prog, indent_increment, max_help_position,
                         terminal_columns() - 2 if width is None else width)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction) and action.choices:
            # (each name indented under COMMAND: two more columns)
            width = self._current_indent + 2 + max(len(n) for n in action.choices)
            self._action_max_length = max(self._action_max_length, width)


def terminal_columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else the width of the
    terminal on standard output, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    stdout = sys.__stdout__
    if columns <= 0 and stdout is not None:
        try:
            columns = os.get_terminal_size(stdout.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _VersionAction(argparse.Action):
    """--version: what runs (version, core, Python, optional packages), exit 0."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        parser.exit(0, version_text())


def _add_global_options(p: argparse.ArgumentParser, command: bool) -> None:
    """--strict and --traceback, before the command (defaults False) and
    after it, on each command's parser: there without a default
    (argparse.SUPPRESS), so a command's parser, which fills the namespace
    after the main one, sets them only when given after the command and
    never resets one given before it to False."""
    default = argparse.SUPPRESS if command else False
    p.add_argument("--traceback", action="store_true", default=default, help=argparse.SUPPRESS)
    p.add_argument("--strict", action="store_true", default=default,
                   help="stop at the first corrupt record instead of skipping it")


# Examples for the end of each command's --help: command lines that run as
# written on a recording named perf.data (tests/cli/test_cli_help.py parses
# each, and asks every command for 2 to 4).  "fleet collapse" and the like: fleet's own commands.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "perfdata": ("perfdata script perf.data --debug-dir ./buildids",
                 "perfdata report perf.data --sort dso,sym",
                 "perfdata flamegraph perf.data -o out.svg",
                 "perfdata export perf.data --format pprof -o profile.pb.gz"),
    "script": ("perfdata script perf.data --debug-dir ./buildids",
               "perfdata script perf.data -F comm,tid,time,ip,sym,dso --inline",
               "perfdata script perf.data --json | head",
               "perfdata script perf.data --archive perf.data.tar.zst --strict"),
    "diff": ("perfdata diff perf.data.old perf.data",
             "perfdata diff before.data after.data -c ratio -s sym",
             "perfdata diff before.data after.data --folded > diff.folded"),
    "report": ("perfdata report perf.data",
               "perfdata report perf.data --sort dso,sym -n",
               "perfdata report perf.data --children --percent-limit 1 -o report.txt"),
    "flamegraph": ("perfdata flamegraph perf.data -o out.svg",
                   "perfdata flamegraph perf.data --colors dso --title 'make -j8' -o out.svg",
                   "perfdata flamegraph perf.data --flame --max-depth 100 -o flame.svg",
                   "perfdata flamegraph --diff before.data after.data -o diff.svg"),
    "collapse": ("perfdata collapse perf.data -o out.folded",
                 "perfdata collapse perf.data --pid-root --all > out.folded"),
    "annotate": ("perfdata annotate perf.data",
                 "perfdata annotate perf.data main -l --percent-type global-period",
                 "perfdata annotate perf.data --dsos libc.so.6 -M intel --json"),
    "export": ("perfdata export perf.data -o profile.speedscope.json",
               "perfdata export perf.data --format pprof -o profile.pb.gz",
               "perfdata export perf.data --format parquet -o ./tables",
               "perfdata export perf.data --offcpu --format pprof -o offcpu.pb.gz"),
    "diagnose": ("perfdata diagnose perf.data",
                 "perfdata diagnose perf.data --debug-dir ./buildids --json"),
    "buildids": ("perfdata buildids perf.data",
                 "perfdata buildids perf.data --ids-only"),
    "archive": ("perfdata archive perf.data -o perf.data.tar.zst",
                "perfdata archive -x perf.data.tar.zst -C ./unpacked",
                "perfdata script perf.data --archive perf.data.tar.zst"),
    "offcpu": ("perfdata offcpu perf.data",
               "perfdata offcpu perf.data --format collapse --min-wait 1ms > offcpu.folded",
               "perfdata offcpu perf.data --format flamegraph -o offcpu.svg",
               "perfdata offcpu perf.data --wakers --format collapse > wakeups.folded"),
    "fleet": ("perfdata fleet collapse 'runs/*.data' -o all.folded",
              "perfdata fleet report runs/ --sort dso,sym",
              "perfdata fleet flamegraph runs/ --scheduler tcp://10.0.0.5:8786 -o all.svg",
              "perfdata fleet diff --base before/ --new after/"),
    "fleet collapse": ("perfdata fleet collapse 'runs/*.data' -o all.folded",
                       "perfdata fleet collapse runs/ --workers 4 --pid-root"),
    "fleet report": ("perfdata fleet report runs/",
                     "perfdata fleet report runs/ --sort dso,sym -n"),
    "fleet diff": ("perfdata fleet diff --base 'before/*.data' --new 'after/*.data'",
                   "perfdata fleet diff --base before/ --new after/ -c ratio -s sym",
                   "perfdata fleet diff --base before/ --new after/ --folded --output d.folded"),
    "fleet flamegraph": ("perfdata fleet flamegraph runs/ -o all.svg",
                         "perfdata fleet flamegraph runs/ --scheduler tcp://10.0.0.5:8786 "
                         "-o all.svg"),
    "stats": ("perfdata stats perf.data",
              "perfdata stats perf.data --strict"),
    "dump": ("perfdata dump perf.data | less",
             "perfdata dump perf.data --json --time-order"),
    "header": ("perfdata header perf.data",
               "perfdata header perf.data -I"),
    "completion": ('eval "$(perfdata completion bash)"',
                   "perfdata completion bash > ~/.local/share/bash-completion/completions/perfdata",
                   "perfdata completion zsh > ~/.zfunc/_perfdata",
                   "perfdata completion fish > ~/.config/fish/completions/perfdata.fish"),
}


def _examples(name: str) -> str | None:
    """The epilog of a command's help (None for a command without examples:
    tests/cli/test_cli_help.py asks every command for some)."""
    if name not in EXAMPLES:
        return None
    return "examples:\n" + "".join("  %s\n" % line for line in EXAMPLES[name])


def _finish_commands(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """Each command's parser (fleet's own commands too) takes the global
    options and ends its help with its examples."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, p in action.choices.items():
            if "--strict" not in p._option_string_actions:
                _add_global_options(p, command=True)
            p.epilog = _examples(prefix + name)
            _finish_commands(p, prefix + name + " ")


def build_parser(wanted: str | None = None) -> argparse.ArgumentParser:
    """The parser; `wanted` is the sub-command on the command line, if known.

    Only that command's parser is built and its module imported (start-up
    time: a module costs milliseconds, each sub-parser a tenth of one);
    without one (the help, a mistyped command, completing a command's
    name) every command is."""
    parser = _Parser(
        prog="perfdata", usage="perfdata [-h] [--version] [--strict] COMMAND [ARGS]",
        description="Read Linux perf.data files; print their samples with stacks "
        "symbolized from\nbinaries and debug info found by build-id.",
        epilog="%s\n'perfdata COMMAND --help' shows a command's options and examples."
        % _examples("perfdata"))
    parser.add_argument("--version", action=_VersionAction,
                        help="the version, the core in use (compiled or pure Python), "
                             "Python's version and the optional packages found")
    _add_global_options(parser, command=False)
    # (prog: the commands' usage lines start "perfdata script", not with the
    # main usage line above)
    sub = parser.add_subparsers(dest="command", required=True, title="commands",
                                metavar="COMMAND", prog="perfdata")
    if wanted not in BUILTIN_COMMANDS and wanted not in COMMAND_MODULES:
        wanted = None

    # (the commands people use first, as the listing shows them)
    for command, name in COMMAND_MODULES.items():
        if wanted is None or command == wanted:
            module = importlib.import_module(name)
            if command == "script":
                # (-s and -g run perfdata/scripting, which the view does not
                # import: the command line adds them and dispatches)
                module.register(sub, _add_scripting_options).set_defaults(func=cmd_script)
            else:
                module.register(sub)

    if wanted in (None, "stats"):
        p = sub.add_parser("stats", help="record counts, as perf report --stats")
        add_input_argument(p)
        p.set_defaults(func=cmd_stats)

    if wanted in (None, "dump"):
        p = sub.add_parser("dump", help="every record with its offset and fields")
        add_input_argument(p)
        p.add_argument("--json", action="store_true", help="JSON lines")
        p.add_argument("--time-order", action="store_true", help="perf's time order")
        p.set_defaults(func=cmd_dump)

    if wanted in (None, "header"):
        p = sub.add_parser("header", help="the metadata, as perf report --header-only")
        add_input_argument(p)
        p.add_argument("-I", "--full", action="store_true", help="topology, caches, pmu caps")
        p.set_defaults(func=cmd_header)

    if wanted in (None, "completion"):
        p = sub.add_parser("completion", help="the shell's completion script, to source "
                           "(bash, zsh, fish)")
        p.add_argument("shell", choices=("bash", "zsh", "fish"))
        p.set_defaults(func=cmd_completion)

    _finish_commands(parser)
    return parser


# The views that register their own sub-command (a module with
# register(subparsers), whose parser sets func=run(args, out)), in the
# order of the command listing, then the commands of this module.
COMMAND_MODULES = {
    "script": "perfdata.views.script",
    "report": "perfdata.views.report.command",
    "diff": "perfdata.views.diff",
    # (the flame graph's command with its --diff BASE, which
    # perfdata.views.flamegraph_diff adds to perfdata.views.flamegraph's)
    "flamegraph": "perfdata.views.flamegraph_diff",
    "collapse": "perfdata.views.collapse",
    "annotate": "perfdata.views.annotate",
    "export": "perfdata.views.export",
    "diagnose": "perfdata.views.diagnose.command",
    "buildids": "perfdata.views.buildids",
    "archive": "perfdata.views.archive",
    "offcpu": "perfdata.views.offcpu",
    "fleet": "perfdata.fleet.command",
}
BUILTIN_COMMANDS = ("stats", "dump", "header", "completion")
# The optional packages --version reports: (what they give, their modules,
# the extra that installs them, or None for a default dependency).
OPTIONAL_PACKAGES = (
    ("native DWARF index (symbolic)", ("symbolic",), "native"),
    ("pprof export (protobuf)", ("google.protobuf",), "pprof"),
    ("annotate (capstone)", ("capstone",), "annotate"),
    ("fleet and parquet (dask, pyarrow)", ("distributed", "pyarrow"), "fleet"),
    ("shell completion (argcomplete)", ("argcomplete",), None),
)


def version_text() -> str:
    """`perfdata --version`: the version, the per-sample core in use, the
    Python running it and the optional packages present (without importing
    them)."""
    import platform

    from perfdata.core import describe
    lines = ["perfdata %s" % package_version(), describe(),
             "python: %s %s (%s)" % (platform.python_implementation(),
                                     platform.python_version(), sys.executable)]
    for what, modules, extra in OPTIONAL_PACKAGES:
        if all(_importable(m) for m in modules):
            lines.append("%s: present" % what)
        elif extra is None:
            lines.append("%s: absent" % what)
        else:
            from perfdata.extras import install_hint
            lines.append("%s: absent (%s)" % (what, install_hint(extra)))
    return "\n".join(lines) + "\n"


def package_version() -> str:
    """The installed distribution's version; from a checkout that no
    installation knows, the package's own (the one pyproject reads)."""
    from importlib import metadata
    try:
        return metadata.version("perfdata")
    except metadata.PackageNotFoundError:
        from perfdata import __version__
        return __version__


def _importable(name: str) -> bool:
    import importlib.util
    if name in sys.modules:
        return sys.modules[name] is not None
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


# The options of perf's commands whose value may start with '-' (perf
# takes `-F -period`, `--time -1,`, `-C -1` as their values; argparse would
# take them for options): joined to their option before argparse sees them.
_DASH_VALUE_OPTIONS = {
    "script": ("-F", "--fields", "--time", "--pid", "--tid", "-C", "--cpu", "--max-stack"),
    "report": ("--time", "--pid", "--tid", "-C", "--cpu", "--max-stack", "-s", "--sort",
               "--percent-limit"),
    "diff": (),     # (its -F is --formula, a flag)
}


def _join_dash_values(argv: Iterable[str]) -> list[str]:
    """perf accepts `-F -period`; argparse would take -period for an option."""
    out: list[str] = []
    it = iter(argv)
    joined: tuple[str, ...] = ("-F", "--fields")
    for arg in it:
        # (the command's word: the first, or the one after `fleet`)
        words = [a for a in out if not a.startswith("-")]
        if not words or words == ["fleet"]:
            joined = _DASH_VALUE_OPTIONS.get(arg, joined)
        if arg in joined:
            value = next(it, None)
            if value is not None and arg in ("-F", "--fields"):
                out.append("--fields=" + value)
                continue
            if value is not None and value.startswith("-"):
                # (-CVALUE: a short option's value joined to it; -C=VALUE would
                # be '=VALUE')
                out.append(arg + ("=" if arg.startswith("--") else "") + value)
                continue
            if value is not None:
                out += [arg, value]
                continue
        out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    # The collector's thresholds (below) from the start: the command's
    # modules, imported from here on (its view, the core, symbolize), make
    # some 60,000 objects, none of them garbage, which the default
    # thresholds walked in ~30 young and 3 older collections, 6 ms of a
    # 80 ms run (`perfdata script` of a small -g recording, installed).
    gc.set_threshold(GC_YOUNG_THRESHOLD, *GC_OLDER_THRESHOLDS)
    raise_open_files_limit()
    if argv is None and "_ARGCOMPLETE" in os.environ:
        # The shell asks for completions (argcomplete's protocol): they are
        # written to its descriptor and the process ends there.
        from perfdata.completion import complete
        complete(build_parser)
    argv = _join_dash_values(sys.argv[1:] if argv is None else argv)
    if not argv:
        # A bare `perfdata` lists the commands, with examples, on standard
        # output and exits 1: what a bare `perf` does (and `git`).
        build_parser().print_help(sys.stdout)
        return 1
    wanted = next((a for a in argv if not a.startswith("-")), None)
    if wanted is None and "--version" in argv:
        # (no command's parser, nor its module, is needed)
        sys.stdout.write(version_text())
        return 0
    if wanted == "script":
        from perfdata.scripting.command import keep_end_of_options
        argv = keep_end_of_options(argv)    # (-s FILE -- ARGS: the script's ARGS)
    parser = build_parser(wanted)
    args = parser.parse_args(argv)
    if getattr(args, "file_opt", None):
        args.file = args.file_opt
    from perfdata.format import PerfDataError
    from perfdata.views.errors import CommandError
    out = sys.stdout
    # perf writes a comm or a path as its bytes; a stream that cannot encode
    # one (PYTHONIOENCODING=ascii, a Latin-1 locale) writes it escaped rather
    # than ending the run on it.
    if getattr(out, "errors", None) == "strict" and hasattr(out, "reconfigure") and \
            (out.encoding or "").lower().replace("-", "") != "utf8":
        out.reconfigure(errors="backslashreplace")
    # The run makes millions of small objects and keeps caches of them:
    # CPython's default collector (a young-generation pass every 700
    # allocations, full passes over every cached frame as the caches grow)
    # costs a large part of a symbolizing run and finds nothing (no cycles
    # are made on the hot paths: see GC_YOUNG_THRESHOLD).  Collect rarely
    # (the thresholds set at the start of main).
    gc.freeze()
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
    except (PerfDataError, CommandError) as exc:
        if args.traceback:
            raise
        _flush_quietly(out)
        sys.stderr.write("perfdata: error: %s\n" % exc.describe())
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except Exception as exc:    # a bug of ours: one line, not a traceback
        if args.traceback:
            raise
        _flush_quietly(out)
        sys.stderr.write("perfdata: internal error: %s: %s (rerun with --traceback)\n"
                         % (type(exc).__name__, exc))
        return 1
    return 0


def _flush_quietly(out: TextIO) -> None:
    try:
        out.flush()
    except (BrokenPipeError, OSError):
        pass


def run() -> NoReturn:
    """The perfdata command: main(), then the process ends without tearing
    the interpreter down.  Freeing every object a run cached (symbol
    tables, frames, their text) takes a noticeable part of a small
    file's run, and nothing is left to do once the output is flushed and
    the exit handlers have run (an unpacked --archive's folder removed)."""
    import atexit
    code = main()
    for stream in (sys.stdout, sys.stderr):
        _flush_quietly(stream)
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    run()
