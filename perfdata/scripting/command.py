"""The `perfdata script` options of this package: -s FILE [ARGS] and -g LANG."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from ..views.errors import CommandError

if TYPE_CHECKING:
    import argparse

    from ..format.container import PerfFile


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
