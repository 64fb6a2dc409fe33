"""The command line as a user meets it: a bare `perfdata` lists the commands
(exit 1, as a bare `perf` does), `--version` says what runs, every command's
help ends with examples that parse, the global options work after the
command too, and an unknown -F field or --sort key is refused in one line
that names the valid ones."""
import importlib.util
import platform
import shlex
import subprocess
import sys

import pytest

from conftest import REPO, SAMPLES, run_cli
from perfdata import cli


def perfdata(*args, env=None):
    """`python -m perfdata ARGS` from the checkout."""
    import os
    return subprocess.run([sys.executable, "-m", "perfdata"] + [str(a) for a in args],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env=dict(os.environ, **(env or {})))


def every_command():
    """The names of every command's parser: "script", ..., "fleet collapse"."""
    import argparse

    def walk(parser, prefix):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield prefix + name, sub
                    yield from walk(sub, prefix + name + " ")
    return dict(walk(cli.build_parser(), ""))


def test_bare_command_lists_the_commands():
    """perf with no command prints its usage and command list on standard
    output and exits 1 (so does git): perfdata does the same."""
    got = perfdata()
    assert got.returncode == 1 and got.stderr == ""
    top = [name for name in every_command() if " " not in name]
    listed = [line.split()[0] for line in got.stdout.splitlines() if line.startswith("    ")
              and not line.startswith("     ")]
    assert listed == top
    assert "examples:\n  perfdata script perf.data --debug-dir ./buildids\n" in got.stdout
    assert got.stdout == perfdata("--help").stdout


def test_export_line_names_its_formats():
    import re
    line = re.search(r"^    export .*\n(?: {8,}.*\n)*", perfdata("--help").stdout, re.M).group()
    action = next(a for a in every_command()["export"]._actions if a.dest == "format")
    assert all(fmt in line for fmt in action.choices), line


def test_version_says_what_runs():
    from importlib import metadata

    from perfdata.core import describe
    got = perfdata("--version")
    assert got.returncode == 0, got.stderr
    lines = got.stdout.splitlines()
    try:
        version = metadata.version("perfdata")
    except metadata.PackageNotFoundError:
        import perfdata as package
        version = package.__version__
    assert lines[0] == "perfdata %s" % version
    assert lines[1] == describe() and lines[1].startswith("core: ")
    assert lines[2].startswith("python: %s %s " % (platform.python_implementation(),
                                                   platform.python_version()))
    present = importlib.util.find_spec("symbolic") is not None
    assert ("native DWARF index (symbolic): present" in lines) == present
    pure = perfdata("--version", env={"PERFDATA_CORE": "pure"})
    assert pure.stdout.splitlines()[1] == "core: pure Python (PERFDATA_CORE=pure)"


@pytest.mark.parametrize("name", sorted(every_command()))
def test_help_ends_with_examples_that_parse(name):
    """Each command's --help ends with 2-4 examples; each one's perfdata
    command line is accepted by the parser as written (the shell's part,
    a pipe or a redirection, left out)."""
    text = every_command()[name].format_help()
    head, _, examples = text.rpartition("\nexamples:\n")
    assert head, text
    lines = examples.splitlines()
    assert 2 <= len(lines) <= 4 and all(l.startswith("  ") for l in lines), examples
    parsed = 0
    for line in lines:
        words = shlex.split(line)
        if words[0] != "perfdata":      # (eval "$(perfdata completion bash)")
            continue
        words = words[1:next((i for i, w in enumerate(words) if w in ("|", ">")), len(words))]
        args = cli.build_parser(words[0]).parse_args(words)
        assert callable(args.func)
        parsed += 1
    assert parsed >= 1


@pytest.mark.parametrize("argv,strict,traceback", [
    (["script", "f"], False, False),
    (["--strict", "script", "f"], True, False),
    (["script", "--strict", "f"], True, False),
    (["script", "f", "--strict", "--traceback"], True, True),
    (["--traceback", "script", "f"], False, True),
    (["--strict", "fleet", "collapse", "f"], True, False),
    (["fleet", "collapse", "f", "--strict"], True, False),
])
def test_global_options_before_or_after_the_command(argv, strict, traceback):
    """A global option given before the command is not reset by the
    command's parser; given after it, it is taken."""
    command = next(a for a in argv if not a.startswith("-"))
    args = cli.build_parser(command).parse_args(argv)
    assert (args.strict, args.traceback) == (strict, traceback)


def test_strict_after_the_command_stops_at_a_corrupt_record(tmp_path):
    from test_recovery import PLT, _data_end, corrupt, top_records
    recs, little = top_records(PLT)
    victim = recs[len(recs) // 2]
    bad = tmp_path / "bad.data"
    bad.write_bytes(corrupt(PLT.read_bytes(), little, victim, "size_below_header",
                            _data_end(PLT)))
    debug = ["--debug-dir", str(SAMPLES / "buildids")]
    rc, _, err = run_cli(["script", str(bad)] + debug)
    assert rc == 0 and "offset %#x: skipped" % victim[0] in err, err
    got = perfdata("script", "--strict", bad, *debug)
    assert got.returncode == 2 and got.stderr.count("\n") == 1, got.stderr
    assert got.stderr.startswith("perfdata: error: %s: offset %#x" % (bad, victim[0]))


def test_unknown_field_names_the_valid_ones():
    """perf: "Invalid field requested." and a usage text listing the fields;
    perfdata: one line, exit 2, with every field -F takes."""
    from perfdata.views.script_fields import PERF_FIELDS, field_spec
    got = perfdata("script", "-F", "comm,bogus", SAMPLES / "plt_loop.fp.data")
    assert got.returncode == 2 and got.stdout == "" and got.stderr.count("\n") == 1
    prefix = "perfdata script: error: argument -F/--fields: Invalid field requested: " \
             "'bogus' (valid fields: "
    assert got.stderr.startswith(prefix) and got.stderr.endswith(")\n"), got.stderr
    named = got.stderr[len(prefix):-2].split(",")
    assert set(named) == PERF_FIELDS and len(named) == len(PERF_FIELDS)
    for field in named:     # (each one named is taken)
        assert field_spec(field) == field


def test_unknown_sort_key_names_the_valid_ones():
    from perfdata.views.report.sort_keys import SORT_KEYS, parse_sort
    for key, why in (("bogus", "unknown sort key 'bogus'"),
                     ("srcline", "sort key 'srcline' is perf's, not supported here")):
        got = perfdata("report", "--sort", "dso," + key, SAMPLES / "plt_loop.fp.data")
        assert got.returncode == 2 and got.stdout == "" and got.stderr.count("\n") == 1
        prefix = "perfdata: error: %s (valid keys: " % why
        assert got.stderr.startswith(prefix) and got.stderr.endswith(")\n"), got.stderr
        named = got.stderr[len(prefix):-2].split(", ")
        assert set(named) | {"symbol"} == set(SORT_KEYS)
        assert [parse_sort(k) for k in named] == [[k] for k in named]


@pytest.mark.parametrize("columns", [None, "100", "37", "0", "-5", "wide", ""])
def test_help_width_is_shutils(monkeypatch, columns):
    """cli.terminal_columns, which spares argparse's help its shutil import,
    gives shutil.get_terminal_size()'s columns for $COLUMNS set, unset, not
    a number or not positive (a pytest run has no terminal on standard
    output, so the fallback answers where $COLUMNS does not)."""
    import shutil
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert cli.terminal_columns() == shutil.get_terminal_size().columns
