#!/usr/bin/env python3
# PYTHON_ARGCOMPLETE_OK  (argcomplete's global completion looks for this line)
"""The perfdata command from a checkout: `python3 cli.py script perf.data`.

The command is perfdata.cli (installed as the `perfdata` script, and run by
`python -m perfdata`); this file is not installed.  Its names (main, run,
build_parser, ...) are perfdata.cli's, for the tests and benchmarks that run
the command in-process from the checkout (`import cli; cli.main([...])`)."""
from perfdata.cli import (BUILTIN_COMMANDS, COMMAND_MODULES, UNUSED_MODULES,  # noqa: F401
                          build_parser, main, run, still_deferred)

if __name__ == "__main__":
    run()
