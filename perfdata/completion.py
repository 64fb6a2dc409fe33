"""Shell completion of the perfdata command, by argcomplete: the scripts to
source (`perfdata completion bash|zsh|fish`) and the answers to them.

The shell runs `perfdata` with argcomplete's environment (_ARGCOMPLETE,
COMP_LINE, COMP_POINT) on each TAB; the command line's main() hands that
run to complete(), which builds the parser of the command being typed (all
of them while its name is), lets argcomplete answer and ends the process.
argcomplete is imported only then: a normal run never pays for it."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterable, Sequence
    from typing import NoReturn

# The option values completed from a list, by the parser's dest: -F's fields
# (perfdata.views.script_fields) and --sort's keys
# (perfdata.views.report.sort_keys), each a comma-separated list; the others
# complete file names (argcomplete's default), or folders where the option
# wants one.
_DIRECTORY_METAVARS = ("DIR", "ROOT")


def shell_script(shell: str) -> str:
    """The script that makes `shell` complete perfdata's command lines."""
    from .views.errors import CommandError
    try:
        import argcomplete
    except ImportError:
        raise CommandError("shell completion needs argcomplete (pip install 'argcomplete>=3.1')")
    return str(argcomplete.shellcode(["perfdata"], shell=shell))


def complete(build_parser: Callable[[str | None], argparse.ArgumentParser]) -> NoReturn:
    """Answer the shell's completion request and end the process."""
    try:
        import argcomplete
    except ImportError:
        os._exit(1)     # (no completions: the shell completes nothing)
    parser = build_parser(command_being_completed())
    attach_completers(parser)
    argcomplete.autocomplete(parser)
    os._exit(1)     # (autocomplete() ends the process; not reached)


def command_being_completed() -> str | None:
    """The command named on the line before the word being completed, or
    None while it is being typed (every command's parser is needed then)."""
    from argcomplete.lexers import split_line
    line = os.environ.get("COMP_LINE", "")
    try:
        point = int(os.environ.get("COMP_POINT", len(line)))
        # (1: `perfdata ...`, 2: `python cli.py ...`, 3: `python -m perfdata ...`)
        start = int(os.environ.get("_ARGCOMPLETE", "1")) - 1
    except ValueError:
        return None
    words = split_line(line, point)[3][start + 1:]
    return next((w for w in words if not w.startswith("-")), None)


def attach_completers(parser: argparse.ArgumentParser) -> None:
    """-F's fields, --sort's keys and folders for the options that take
    one, on every command's parser (fleet's own commands too)."""
    import argparse

    from argcomplete.completers import DirectoriesCompleter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                attach_completers(sub)
        elif action.dest == "fields":
            action.completer = comma_list_completer(_script_fields)  # type: ignore[attr-defined]
        elif action.dest == "sort":
            action.completer = comma_list_completer(_sort_keys)  # type: ignore[attr-defined]
        elif action.metavar in _DIRECTORY_METAVARS:
            action.completer = DirectoriesCompleter()  # type: ignore[attr-defined]


def _script_fields() -> Sequence[str]:
    from .views.script_fields import valid_fields
    return valid_fields()


def _sort_keys() -> Sequence[str]:
    from .views.report.sort_keys import VALID_SORT_KEYS
    return VALID_SORT_KEYS


def comma_list_completer(names: Callable[[], Sequence[str]]) -> Callable[..., list[str]]:
    """An argcomplete completer of a comma-separated list of `names`: the
    words so far stay, the last one is completed, a name given already is
    not offered again.  -F's `type:` prefix and `+`/`-` signs are kept."""

    def completer(prefix: str, **_: Any) -> list[str]:
        return complete_comma_list(prefix, names())

    return completer


def complete_comma_list(prefix: str, names: Iterable[str]) -> list[str]:
    """The completions of a comma-separated list whose text so far is `prefix`."""
    kind, colon, body = prefix.rpartition(":") if ":" in prefix else ("", "", prefix)
    done, _, last = body.rpartition(",")
    head = kind + colon + (done + "," if done else "")
    sign = last[:1] if last[:1] in ("+", "-") else ""
    given = {w.lstrip("+-") for w in done.split(",") if w}
    return [head + sign + name for name in names
            if name.startswith(last[len(sign):]) and name not in given]
