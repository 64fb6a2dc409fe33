"""What a command cannot do for reasons other than its input file: an option
value it refuses, an output it cannot write, an optional package it needs.
Views and the layers beside them raise it; cli.py alone turns it into
`perfdata: error: ...` and exit status 2, as it does the reader's errors."""


class CommandError(Exception):
    """A command line perfdata refuses, or an output it cannot write."""

    def describe(self) -> str:
        return str(self)
