"""Shell completion (argcomplete): the command answers the shell's requests
as bash's completion script makes them, command names, -F fields and
--sort keys (comma lists), file names; the script `perfdata completion
bash` prints completes a real bash command line."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

pytest.importorskip("argcomplete", reason="argcomplete is a dependency: pip install -e .")

IFS = "\013"


def complete(line, cwd=REPO, start=1):
    """The completions the command gives for `line` with the cursor at its
    end: argcomplete's protocol (_ARGCOMPLETE, COMP_LINE, COMP_POINT), the
    answer in the file _ARGCOMPLETE_STDOUT_FILENAME names instead of fd 8."""
    import tempfile
    with tempfile.NamedTemporaryFile("r") as out:
        env = dict(os.environ, _ARGCOMPLETE=str(start), COMP_LINE=line,
                   COMP_POINT=str(len(line)), _ARGCOMPLETE_STDOUT_FILENAME=out.name)
        proc = subprocess.run([sys.executable, str(REPO / "cli.py")], env=env, cwd=cwd,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        got = out.read()
    return sorted(c.rstrip(" ") for c in got.split(IFS)) if got else []


def test_command_names():
    assert complete("perfdata scr") == ["script"]
    assert complete("perfdata f") == ["flamegraph", "fleet"]
    assert complete("perfdata --strict rep") == ["report"]


def test_fields_of_script():
    assert complete("perfdata script -F ti") == ["tid", "time"]
    assert complete("perfdata script perf.data -F comm,ti") == ["comm,tid", "comm,time"]
    assert complete("perfdata script --fields=+sym") == ["--fields=+sym", "--fields=+symoff"]
    # (a field given already is not offered again)
    assert complete("perfdata script -F tid,ti") == ["tid,time"]


def test_sort_keys_of_report_and_fleet_report():
    assert complete("perfdata report --sort d") == ["dso"]
    assert complete("perfdata report -s dso,") == ["dso,comm", "dso,cpu", "dso,pid", "dso,sym"]
    assert complete("perfdata fleet report runs/ --sort s") == ["sym"]


def test_files_and_options(tmp_path):
    (tmp_path / "perf.data").write_bytes(b"")
    (tmp_path / "perf.data.old").write_bytes(b"")
    (tmp_path / "buildids").mkdir()
    assert complete("perfdata report perf.d", cwd=tmp_path) == ["perf.data", "perf.data.old"]
    assert complete("perfdata script --debug-dir b", cwd=tmp_path) == ["buildids/"]
    assert complete("perfdata script --str") == ["--strict"]
    assert complete("perfdata completion ") == ["--help", "--strict", "-h", "bash", "fish",
                                                 "zsh"]


@pytest.mark.parametrize("line,start,command", [
    ("perfdata scr", 1, None),
    ("perfdata script -F ti", 1, "script"),
    ("perfdata --strict report -s d", 1, "report"),
    ("perfdata fleet rep", 1, "fleet"),
    ("python3 cli.py script ", 2, "script"),
    ("python3 -m perfdata flamegraph perf.data -o ", 3, "flamegraph"),
])
def test_only_the_command_being_typed_is_built(monkeypatch, line, start, command):
    """A TAB after the command's name builds that command's parser alone
    (and imports its module alone); while the name is typed, all of them."""
    from perfdata.completion import command_being_completed
    monkeypatch.setenv("COMP_LINE", line)
    monkeypatch.setenv("COMP_POINT", str(len(line)))
    monkeypatch.setenv("_ARGCOMPLETE", str(start))
    assert command_being_completed() == command


def test_python_cli_py_form():
    """`python3 cli.py scr<TAB>` (argcomplete's _ARGCOMPLETE=2: the command
    line starts at the third word)."""
    assert complete("python3 cli.py scr", start=2) == ["script"]


def test_scripts_for_each_shell():
    from perfdata import cli
    # (argcomplete's bash and zsh scripts are one script that tells the two apart)
    for shell, mark in (("bash", "\n    complete -o nospace -o default -o bashdefault -F "
                                 "_python_argcomplete perfdata\n"),
                        ("zsh", "\n        compdef _python_argcomplete perfdata\n"),
                        ("fish", "\ncomplete --command perfdata ")):
        rc, out, err = _run(cli, ["completion", shell])
        assert rc == 0 and mark in out, (shell, err, out[:300])


def _run(cli, argv):
    import contextlib
    import io
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_with_the_printed_script(tmp_path):
    """The script of `perfdata completion bash`, sourced by bash, completes a
    command line through bash's own variables (COMP_WORDS, COMP_CWORD) and
    the `perfdata` found on PATH (here the checkout's, by a wrapper)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "perfdata"
    wrapper.write_text("#!/bin/sh\nexec '%s' '%s' \"$@\"\n" % (sys.executable, REPO / "cli.py"))
    wrapper.chmod(0o755)
    script = r"""
source <(perfdata completion bash) || exit 3
ask() {
    COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
    read -ra COMP_WORDS <<< "$1"; [[ "$1" == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
    _python_argcomplete perfdata "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf '%s|' "${COMPREPLY[@]}"; echo
}
ask "perfdata scr"
ask "perfdata script -F ti"
ask "perfdata script -F comm,ti"
ask "perfdata report -s dso,s"
"""
    env = dict(os.environ, PATH="%s%s%s" % (bin_dir, os.pathsep, os.environ.get("PATH", "")))
    proc = subprocess.run(["bash", "-c", script], env=env, cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["script |", "tid|time|", "comm,tid|comm,time|",
                                        "dso,sym |"], proc.stderr
