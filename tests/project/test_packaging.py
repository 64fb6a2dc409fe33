"""`pip install .` as a user runs it, into a fresh virtualenv: it installs the
packages perfdata and symbolize and the `perfdata` script, and no top-level
module of a generic name (the repository's cli.py stays in the checkout);
the installed `perfdata --version` and `python -m perfdata --help` run, and
a missing-extra hint names the folder it was installed from.

The checkout's sources are copied first (pip builds in the source tree: the
checkout's build/ is left alone).  The virtualenv reads this environment's
packages (construct, ...) through a .pth line instead of downloading them
(--no-deps; with setuptools here, --no-index: no network)."""
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import REPO

SOURCES = ("pyproject.toml", "setup.py", "README.md", "cli.py", "perfdata", "symbolize")


# The installed copy under test, not this checkout: without the PYTHONPATH
# conftest sets for the programs other tests start.
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run(*args, **kwargs):
    kwargs.setdefault("env", _ENV)
    return subprocess.run(*args, **kwargs)


def _pip_supports_python_option():
    proc = _run([sys.executable, "-m", "pip", "--python", sys.executable, "--version"],
                          capture_output=True, text=True, timeout=120)
    return proc.returncode == 0


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(source folder, venv folder, venv python) of perfdata installed by pip."""
    if not _pip_supports_python_option():
        pytest.skip("pip is older than 22.3 (no --python)")
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "perfdata src"          # (a blank: the hint must quote it)
    src.mkdir()
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.o", "*.pyc")
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=skip)
        else:
            shutil.copy2(path, src / name)
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    site = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True,
                          timeout=60).stdout.strip()
    # This environment's packages, after the venv's own (a .pth line adds a
    # folder to the path; the .pth files in it, an editable perfdata's
    # finder among them, are not run).
    ours = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    Path(site, "outer.pth").write_text("".join(p + "\n" for p in sorted(ours)))
    # (setuptools from this environment where it can build a wheel: its own
    # bdist_wheel from 70.1, the wheel package's before; else pip fetches it
    # for an isolated build, as `pip install .` does: a virtualenv made by
    # the README's command has an older setuptools and no wheel)
    import importlib.util
    can_build = importlib.util.find_spec("setuptools") is not None and (
        importlib.util.find_spec("setuptools.command.bdist_wheel") is not None
        or importlib.util.find_spec("wheel") is not None)
    offline = ["--no-index", "--no-build-isolation"] if can_build else []
    proc = _run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--no-deps"] + offline + [str(src)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return src, venv, python


def _record(python):
    """The installed files, as `pip show -f perfdata` lists them (RECORD)."""
    code = ("from importlib import metadata; "
            "print('\\n'.join(str(f) for f in metadata.distribution('perfdata').files))")
    return _run([str(python), "-c", code], capture_output=True, text=True,
                          check=True, timeout=60, cwd="/").stdout.split()


def test_no_top_level_cli_module(installed):
    src, venv, python = installed
    files = _record(python)
    top = {f.split("/")[0] for f in files if not f.startswith("..")}
    assert top == {"perfdata", "symbolize", "perfdata-%s.dist-info" % _version()}, sorted(top)
    assert "perfdata/cli.py" in files and "perfdata/__main__.py" in files
    assert not [f for f in files if f.split("/")[-1] == "cli.py" and f != "perfdata/cli.py"]
    assert (src / "cli.py").is_file()       # (there to be left out)
    show = _run([sys.executable, "-m", "pip", "--python", str(python), "show", "-f",
                           "perfdata"], capture_output=True, text=True, timeout=120)
    listed = [line.strip() for line in show.stdout.splitlines() if line.startswith("  ")]
    assert "perfdata/cli.py" in listed and "cli.py" not in listed, show.stdout


def test_installed_commands_run(installed, tmp_path):
    src, venv, python = installed
    got = _run([str(venv / "bin" / "perfdata"), "--version"], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines()[0] == "perfdata %s" % _version()
    assert got.stdout.splitlines()[1].startswith("core: ")
    got = _run([str(python), "-m", "perfdata", "--help"], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path)
    assert got.returncode == 0 and "\n    script " in got.stdout, got.stderr
    # (the installed copy ran, not the checkout's)
    where = _run([str(python), "-c", "import perfdata.cli; print(perfdata.cli.__file__)"],
                           capture_output=True, text=True, timeout=60, cwd=tmp_path).stdout
    assert where.startswith(str(venv)), where


def test_hint_names_the_folder_installed_from(installed, tmp_path):
    import shlex
    src, venv, python = installed
    got = _run([str(python), "-c", "from perfdata.extras import install_hint; "
                          "print(install_hint('fleet'))"], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert got.stdout == "pip install %s\n" % shlex.quote("%s[fleet]" % src), got.stderr


def _version():
    import perfdata
    return perfdata.__version__
