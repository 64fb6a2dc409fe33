"""The `perfdata script` options of this package: -s FILE [ARGS] and -g LANG."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Sequence, TextIO

from ..views.errors import CommandError

if TYPE_CHECKING:
    from ..format import PerfFile

# What `--` after -s FILE becomes before argparse sees it (which would end
# -s's arguments there and take what follows for the input file): a word
# no command line can hold (no argument has a NUL), made `--` again below.
_END_OF_OPTIONS = "\0--"


def keep_end_of_options(argv: list[str]) -> list[str]:
    """`perfdata script` argv with a `--` after -s FILE kept for the script's
    arguments (perf: `perf script -s flamegraph.py -- -f json`)."""
    for i, arg in enumerate(argv):
        if arg == "--":
            return argv            # (before any -s: argparse's own `--`)
        if arg in ("-s", "--script") or arg.startswith("--script="):
            break
    else:
        return argv
    # (--script=FILE as two words: argparse would give -s FILE alone and
    # take the words after it for its own)
    head = ["--script", argv[i][len("--script="):]] if argv[i].startswith("--script=") \
        else [argv[i]]
    return argv[:i] + head + [_END_OF_OPTIONS if a == "--" else a for a in argv[i + 1:]]


class ScriptArguments(argparse.Action):
    """-s FILE [ARGS], by perf's rule: perf takes its own options up to the
    first word that is none, or up to `--`, and the script gets the rest as
    its sys.argv[1:] (`-s x.py -i DATA` reads DATA; `-s x.py -- -f json`
    gives the script `-f json`; `-s x.py -f json` is perf's -f, --force,
    and the script's `json`).  The option takes every word after it
    (nargs=REMAINDER); the perfdata options among them are parsed here."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        words = list(values or ())
        if not words or words[0] == _END_OF_OPTIONS:
            parser.error("argument -s/--script: expected one argument")
        own, script_args = _own_options(parser, words[1:])
        setattr(namespace, self.dest, [words[0]] + script_args)
        if own:
            # (parse_args sets a positional its words leave out, the input
            # file, to its default: what came before -s is kept)
            positionals = {a.dest: getattr(namespace, a.dest)
                           for a in parser._actions if not a.option_strings}
            parser.parse_args(own, namespace)
            for dest, value in positionals.items():
                setattr(namespace, dest, value)


def _own_options(parser: argparse.ArgumentParser, words: list[str]
                 ) -> tuple[list[str], list[str]]:
    """(perfdata's options and their values, the script's arguments) of
    the words after -s FILE."""
    # (argparse's table of option strings: no public face gives an option's
    # action, which says whether a value follows it)
    table = parser._option_string_actions
    i = 0
    while i < len(words):
        word = words[i]
        if word == _END_OF_OPTIONS:
            return words[:i], words[i + 1:]
        if not word.startswith("-") or word == "-":
            break
        name = word.split("=", 1)[0] if word.startswith("--") else word[:2]
        action = table.get(name)
        if action is None and word.startswith("--"):
            # (argparse takes an unambiguous prefix of a long option)
            hits = [a for n, a in table.items() if n.startswith(name)]
            action = hits[0] if len(set(map(id, hits))) == 1 else None
        joined = "=" in word if word.startswith("--") else len(word) > 2
        i += 1 if action is None or action.nargs == 0 or joined else 2
    return words[:i], [("--" if w == _END_OF_OPTIONS else w) for w in words[i:]]


def run_scripting(pf: PerfFile, args: argparse.Namespace, out: TextIO) -> None:
    """-g LANG writes the starter script (and stops, as perf does); -s FILE
    [ARGS] runs FILE with ARGS as its sys.argv[1:]."""
    if args.gen_script:
        from .starter import generate_script
        path = generate_script(pf, args.gen_script)
        sys.stderr.write("generated Python script: %s\n" % path)
        return
    script, *script_args = args.script
    if script.startswith("python:"):
        script = script[len("python:"):]
    if not script.endswith(".py"):
        # perf picks the language by the extension; Perl is not run here
        raise CommandError("Couldn't find language for script %s (perfdata runs Python "
                           "scripts, *.py)" % script)
    from .engine import run_script
    run_script(pf, args, script, script_args, out)
