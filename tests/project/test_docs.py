"""The examples of README.md and docs/*.md run as written, and the docs site
builds with MkDocs in strict mode (a warning is an error).

The convention, for a page's writer (docs/index.md says it too):

* A ```console block is run.  Its lines that start with `$ ` are commands (a
  line ending in `\\` goes on to the next); the lines after a command, up to
  the next command or the block's end, are its standard output, compared
  exactly but for two normalisations: trailing blanks of a line are ignored
  (perf's sample lines end in one, editors drop them), and a line `...` stands
  for any number of lines (output cut for the page).  Every command must exit
  0, each command of a pipeline too (bash's pipefail); standard error is not
  compared.
* The commands run in bash, in an empty scratch folder where `samples` is the
  repository's samples/ (so an example that writes a file leaves the checkout
  clean), with `perfdata` and `python3` this checkout's, HOME an empty folder
  (no ~/.debug build-id cache) and an empty symbol cache.  The outputs shown
  must not depend on the machine: examples keep to frames the repository can
  name (the bundled binaries in samples/buildids), not libc's, whose names come
  from the machine's libc debug file (`--max-stack` cuts a stack before libc).
* A ```python block is run from the repository's root; when a ```text block
  follows it (nothing but blank lines between), that is its standard output,
  compared as a command's is.
* ```sh blocks (set-up, perf record, ...) are shown, not run.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


@dataclass
class Block:
    page: Path
    line: int            # the fence's line number, 1-based
    lang: str
    text: str
    output: str | None = None   # a python block's ```text block, if any

    @property
    def where(self) -> str:
        return "%s:%d" % (self.page.relative_to(ROOT), self.line)


def blocks_of(page: Path) -> list[Block]:
    text = page.read_text()
    found: list[Block] = []
    previous_end = None
    for match in _FENCE.finditer(text):
        block = Block(page, text.count("\n", 0, match.start()) + 1, match.group(1),
                      match.group(2))
        if (block.lang == "text" and found and found[-1].lang == "python"
                and previous_end is not None
                and not text[previous_end:match.start()].strip()):
            found[-1].output = block.text
        else:
            found.append(block)
        previous_end = match.end()
    return found


def all_blocks(lang: str) -> list[Block]:
    return [b for page in PAGES for b in blocks_of(page) if b.lang == lang]


def console_steps(block: Block) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a console block."""
    steps: list[tuple[str, str]] = []
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            raise AssertionError("%s: output before any command: %r" % (block.where, line))
        command = line[2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + " " + lines[i].strip()
        i += 1
        out = []
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        steps.append((command, "\n".join(out)))
    return steps


def output_matches(expected: str, actual: str) -> bool:
    """Equal line for line but for trailing blanks; an expected line `...`
    stands for any number of actual lines."""
    want = [l.rstrip() for l in expected.splitlines()]
    got = [l.rstrip() for l in actual.splitlines()]
    while want and not want[-1]:
        want.pop()
    while got and not got[-1]:
        got.pop()
    pattern = "".join(r"(?:[^\n]*\n)*?" if l == "..." else re.escape(l + "\n") for l in want)
    return re.fullmatch(pattern, "".join(l + "\n" for l in got)) is not None


def test_output_matching_rule():
    assert output_matches("a \nb", "a\nb  \n\n")
    assert not output_matches("a\nb", "a\nc")
    assert not output_matches("a", "a\nb")
    assert output_matches("a\n...\nz", "a\nb\nc\nz")
    assert output_matches("a\n...\nz", "a\nz")
    assert not output_matches("a\n...\nz", "a\nb\ny")
    assert output_matches("...", "")


@pytest.fixture(scope="module")
def shell_env(tmp_path_factory) -> dict[str, str]:
    """bash's environment for the console examples (see the module's doc)."""
    bindir = tmp_path_factory.mktemp("bin")
    # `perfdata` as installed: the console script's entry point, run by this
    # interpreter, with this checkout first on the path.
    shim = bindir / "perfdata"
    # (The __main__ guard as pip's scripts have it: Dask's worker processes
    # are spawned, and a spawned child imports the parent's main script.)
    shim.write_text(
        "#!%s\n"
        "import sys\n"
        "from importlib.metadata import entry_points\n"
        "if __name__ == '__main__':\n"
        "    found = list(entry_points(group='console_scripts', name='perfdata'))\n"
        "    if found:\n"
        "        sys.exit(found[0].load()())\n"
        "    import runpy\n"
        "    runpy.run_module('perfdata', run_name='__main__', alter_sys=True)\n"
        % sys.executable)
    shim.chmod(0o755)
    # (a script, not a link: a virtualenv's python reached through a link
    # elsewhere does not find its pyvenv.cfg, hence none of its packages)
    python3 = bindir / "python3"
    python3.write_text('#!/bin/sh\nexec "%s" "$@"\n' % sys.executable)
    python3.chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("DEBUGINFOD_URLS", "PERFDATA_NATIVE", "PERFDATA_CORE")}
    env["PATH"] = "%s:%s" % (bindir, env.get("PATH", "/usr/bin:/bin"))
    env["PYTHONPATH"] = str(ROOT)
    env["HOME"] = str(tmp_path_factory.mktemp("home"))
    env["PERFDATA_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    env["LC_ALL"] = "C.UTF-8"
    env["COLUMNS"] = "80"
    return env


CONSOLE = all_blocks("console")
PYTHON = all_blocks("python")


def test_pages_have_examples():
    """The convention is in use: the README shows the common commands, and
    the pages have console and python examples to run."""
    readme = [b for b in CONSOLE if b.page.name == "README.md"]
    commands = {c.split()[1] for b in readme for c, _ in console_steps(b)
                if c.startswith("perfdata ")}
    assert {"script", "report", "flamegraph", "collapse", "diagnose", "buildids",
            "export"} <= commands
    assert len(CONSOLE) >= 15
    assert len(PYTHON) >= 4


@pytest.mark.parametrize("block", CONSOLE, ids=[b.where for b in CONSOLE])
def test_console_example(block: Block, shell_env: dict[str, str], tmp_path: Path):
    (tmp_path / "samples").symlink_to(ROOT / "samples")
    for command, expected in console_steps(block):
        result = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=tmp_path,
                                env=shell_env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, "%s: `%s` exited %d:\n%s" % (
            block.where, command, result.returncode, result.stderr)
        assert output_matches(expected, result.stdout), (
            "%s: `%s` printed:\n%s\nthe page shows:\n%s" % (
                block.where, command, result.stdout, expected))


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_python_example(block: Block, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("DEBUGINFOD_URLS", raising=False)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.text, block.where, "exec"), {"__name__": "__docs__"})
    if block.output is not None:
        assert output_matches(block.output, out.getvalue()), (
            "%s printed:\n%s\nthe page shows:\n%s" % (block.where, out.getvalue(), block.output))


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return []


def test_nav_lists_every_page():
    """Every page of docs/ is in mkdocs.yml's nav (MkDocs only notes one
    left out), and the nav names no page that is not there."""
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    listed = _nav_pages(config["nav"])
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert sorted(listed) == pages


def test_site_builds_strict(tmp_path: Path):
    """`mkdocs build --strict`: a broken link, a page missing from the nav's
    files or any other warning fails the build."""
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]')")
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                             "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    assert (site / "index.html").is_file()
    for page in (ROOT / "docs").glob("*.md"):
        name = "index.html" if page.stem == "index" else page.stem + "/index.html"
        assert (site / name).is_file(), name
    assert (site / "images" / "flamegraph.png").is_file()


def test_install_page_holds_the_readme_commands():
    """docs/install.md shows the README's two set-up commands as they are
    (the README's are the ones CI runs: the blocks after its markers)."""
    readme = (ROOT / "README.md").read_text()
    install = [b.text for b in blocks_of(ROOT / "docs" / "install.md") if b.lang == "sh"]
    for marker in ("setup-command", "test-command"):
        command = re.search(r"<!-- %s -->\n```sh\n(.*?)```" % marker, readme, re.S).group(1)
        assert command in install, marker


def test_layout_page_names_every_package():
    """docs/layout.md names every package of perfdata/ and symbolize/ (a new
    one goes on the page)."""
    layout = (ROOT / "docs" / "layout.md").read_text()
    packages = sorted({str(p.parent.relative_to(ROOT)) + "/"
                       for top in ("perfdata", "symbolize")
                       for p in (ROOT / top).rglob("__init__.py")})
    assert "perfdata/" in packages and "symbolize/unwind/" in packages
    missing = [p for p in packages if p not in layout]
    assert not missing, "docs/layout.md does not name %s" % missing


# The pages besides docs/commands.md that hold a command's option reference.
OPTION_PAGES = {"diff": ["diff.md"], "flamegraph": ["diff.md"], "offcpu": ["offcpu.md"],
                "fleet": ["fleet.md", "diff.md"]}     # (fleet diff: on diff.md)


def test_every_option_is_in_the_reference():
    """The option reference moved from the README to docs/commands.md (the
    README links it as "every command and option"): each option of each
    command's parser is named there, or on the command's own page."""
    import argparse

    from perfdata import cli

    def commands(parser, prefix):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield prefix + name, sub
                    yield from commands(sub, prefix + name + " ")

    reference = (ROOT / "docs" / "commands.md").read_text()
    missing = []
    for name, parser in commands(cli.build_parser(), ""):
        text = reference + "".join((ROOT / "docs" / page).read_text()
                                   for page in OPTION_PAGES.get(name.split()[0], []))
        for action in parser._actions:
            spelled = [o for o in action.option_strings if o not in ("-h", "--help")]
            if spelled and action.help != argparse.SUPPRESS and \
                    not any(re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(o), text)
                            for o in spelled):
                missing.append("%s %s" % (name, "/".join(spelled)))
    assert not missing, "options named on no docs page: %s" % missing
