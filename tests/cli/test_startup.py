"""Start-up work: a `perfdata script` run imports only what it uses.

A tenth of a run's time on a 30k-sample file is imports; these modules were
each measured at 5-16 ms and are not needed to print a C program's -g
profile: the other commands' views, the network stack of the debuginfod
client, cxxfilt (no C++ name to demangle), pyelftools' ELFFile and its DWARF
modules (no inline lookup in a -g profile); and what the standard library
brings only for what a run may not do: the debuginfod client's URL parsing
(urllib.parse, ipaddress: no URL given), MiniDebugInfo's lzma, the shutil
(bz2, lzma) of argparse's default help width."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"

NOT_NEEDED = ("perfdata.views.flamegraph", "perfdata.views.report", "perfdata.views.export",
              "perfdata.views.diagnose", "perfdata.views.pprof", "urllib.request",
              "http.client", "cxxfilt", "ctypes", "elftools.elf.elffile",
              "elftools.dwarf.dwarfinfo",
              # issue 15: the fleet and Parquet dependencies, and their modules
              "dask", "distributed", "pyarrow", "perfdata.fleet.command", "perfdata.fleet",
              "perfdata.arrow", "perfdata.views.parquet",
              # construct's debugger and what two of its classes use (perfdata.cli.UNUSED_MODULES)
              "pdb", "inspect", "traceback", "pickle", "hashlib", "bdb",
              # no tracepoint in the profile: no tracepoint printer
              "perfdata.tracefmt",
              # no debuginfod URL, no .gnu_debugdata, no help text to lay out
              "urllib.parse", "ipaddress", "lzma", "shutil", "bz2",
              # construct's one question to it answered by its stand-in
              "platform")

PROBE = r"""
import gc, io, json, sys
at_start = set(sys.modules)     # (the interpreter's, its site's .pth files')
from perfdata import cli
from perfdata.cli import still_deferred
out = io.StringIO()
sys.stdout = out
collections = gc.get_stats()[0]["collections"]
rc = cli.main(sys.argv[1:])
collections = gc.get_stats()[0]["collections"] - collections
sys.stdout = sys.__stdout__
# (a deferred module's stand-in is in sys.modules; the module is not loaded)
print(json.dumps({"rc": rc, "lines": out.getvalue().count("\n"),
                  "modules": sorted(set(sys.modules) - set(still_deferred()) - at_start),
                  "young_collections": collections}))
"""


def without_site(code, *args):
    """`python -c code args` without site, whose .pth files may import what
    is looked for here (a virtualenv's do not): this interpreter's path
    instead."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-S", "-c", code] + list(args), capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=120)


def run_probe(*args):
    proc = without_site(PROBE, *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_script_imports_only_what_it_uses():
    got = run_probe("script", str(SAMPLES / "plt_loop.fp.data"), "--debug-dir",
                    str(SAMPLES / "buildids"), "--no-symbol-cache")
    assert got["rc"] == 0 and got["lines"] > 100
    loaded = set(got["modules"])
    assert not loaded & set(NOT_NEEDED), sorted(loaded & set(NOT_NEEDED))


def test_no_collection_while_the_command_imports():
    """The collector's thresholds are the run's from the start of main, not
    CPython's default (a young collection every 700 objects), so that the
    command's imports are not walked ~30 times over (6 ms of a small run)."""
    got = run_probe("script", str(SAMPLES / "plt_loop.fp.data"), "--debug-dir",
                    str(SAMPLES / "buildids"), "--no-symbol-cache")
    assert got["rc"] == 0 and got["lines"] > 100
    assert got["young_collections"] == 0, got["young_collections"]


def test_other_commands_still_load_their_modules():
    """The lazy imports are not lost: a C++ profile loads its demangler
    (libiberty through ctypes, else cxxfilt), the flamegraph command its view."""
    got = run_probe("script", str(SAMPLES / "cpp_inline.fp.data"), "--debug-dir",
                    str(SAMPLES / "buildids"), "--no-symbol-cache")
    assert "ctypes" in got["modules"] or "cxxfilt" in got["modules"]
    got = run_probe("flamegraph", str(SAMPLES / "plt_loop.fp.data"), "-o", "/dev/null")
    assert "perfdata.views.flamegraph" in got["modules"]
    loaded = set(got["modules"])
    assert not loaded & {"dask", "distributed", "pyarrow"}, sorted(loaded)


def test_stats_imports_no_symbolizing_layer():
    """`perfdata stats` reads records only: no script view, no symbolizer."""
    got = run_probe("stats", str(SAMPLES / "pipe.data"))
    assert got["rc"] == 0 and got["lines"] > 5
    loaded = set(got["modules"])
    assert not loaded & {"perfdata.views.script", "perfdata.resolve.symbolized", "symbolize",
                         "elftools.elf.structs"}, sorted(loaded)


def test_deferred_modules_work_when_used():
    """A module the command line defers, imported after perfdata, is the
    real one at its first use, for `import m`, `from m import name` and
    construct's own references alike; a name it lacks is still an
    AttributeError."""
    code = r"""
import sys
from perfdata import cli
import perfdata
from perfdata.cli import still_deferred
assert "pdb" in still_deferred() and "inspect" in still_deferred(), still_deferred()
import pdb
from inspect import signature
import construct.debug
assert "pdb" in still_deferred()
assert pdb.Pdb.__name__ == "Pdb" and construct.debug.pdb.post_mortem is pdb.post_mortem
assert str(signature(lambda a, b=1: 0)) == "(a, b=1)"
import traceback
assert "ZeroDivisionError" in "".join(traceback.format_exception(ZeroDivisionError("x")))
assert sys.modules["pdb"].Pdb is pdb.Pdb and "pdb" not in still_deferred()
import os, platform
from construct.lib import ONWINDOWS
# (construct asked platform.system() of the stand-in, which answered it)
assert "platform" in still_deferred() and ONWINDOWS is False
assert platform.system() == os.uname().sysname and "platform" in still_deferred()
assert platform.python_implementation() and "platform" not in still_deferred()
assert platform.system() == os.uname().sysname and platform.system.__module__ == "platform"
try:
    pdb.no_such_name
except AttributeError:
    print("ok")
"""
    proc = without_site(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_help_lists_every_command_without_the_network_stack():
    """`perfdata --help` imports every command's module to list it: none of
    them pulls in urllib.request (xml.sax.saxutils did, for the flame
    graph's escaping: 15 ms) nor the tracepoint printer."""
    code = r"""
import io, json, sys
from perfdata import cli
out = io.StringIO()
sys.stdout = out
try:
    cli.main(["--help"])
except SystemExit:
    pass
sys.stdout = sys.__stdout__
print(json.dumps({"help": out.getvalue(), "modules": sorted(sys.modules)}))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    from perfdata import cli
    for command in cli.BUILTIN_COMMANDS + tuple(cli.COMMAND_MODULES):
        assert "\n    %s " % command in got["help"], command
    loaded = set(got["modules"])
    assert not loaded & {"urllib.request", "http.client", "xml.sax", "perfdata.tracefmt"}, \
        sorted(loaded & {"urllib.request", "http.client", "xml.sax", "perfdata.tracefmt"})


def test_library_import_keeps_the_standard_modules():
    """Importing perfdata as a library defers nothing: construct's modules
    are the real ones, as the program importing perfdata expects."""
    code = r"""
import sys, types
import perfdata, perfdata.resolve.symbolized
perfdata.PerfFile    # (its module imports construct)
for name in ("pdb", "inspect", "traceback", "pickle", "hashlib"):
    m = sys.modules[name]
    assert m.__doc__ != "(imported at its first use)" and hasattr(m, "__file__"), name
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
