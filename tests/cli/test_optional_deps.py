"""Without the `fleet` extra (dask, pyarrow) the commands that need it end
in one line naming the extra, exit 2; the others do not notice.  (The
packages are hidden from a child interpreter: sys.modules[name] = None.)
The pip command a hint names is the one for how perfdata is installed
(perfdata.extras): the clone's folder for an install from a clone."""
import subprocess
import sys
from pathlib import Path

from perfdata.extras import hint_for, install_hint

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"

HIDE = ("import sys\n"
        "for name in ('pyarrow', 'pyarrow.parquet', 'distributed', 'dask'):\n"
        "    sys.modules[name] = None\n"
        "from perfdata import cli\n"
        "sys.exit(cli.main(sys.argv[1:]))\n")


def run_hidden(*args):
    return subprocess.run([sys.executable, "-c", HIDE] + [str(a) for a in args],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def test_parquet_export_without_pyarrow(tmp_path):
    proc = run_hidden("export", SAMPLES / "plt_loop.fp.data", "--format", "parquet",
                      "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr == "perfdata: error: parquet output needs pyarrow " \
        "(%s)\n" % install_hint("fleet")


def test_fleet_without_dask():
    proc = run_hidden("fleet", "collapse", SAMPLES / "plt_loop.fp.data")
    assert proc.returncode == 2
    assert proc.stderr == "perfdata: error: fleet commands need Dask: " \
        "%s (dask[distributed])\n" % install_hint("fleet")


def test_single_file_commands_without_the_extra():
    proc = run_hidden("collapse", SAMPLES / "plt_loop.fp.data", "--debug-dir",
                      SAMPLES / "buildids")
    assert proc.returncode == 0 and "hot_plt_loop" in proc.stdout, proc.stderr


def test_hint_names_how_perfdata_was_installed():
    """pip's direct_url.json (PEP 610) of the installation: a folder (a
    clone), editable or not; none (from an index); a wheel file.  Run from a
    checkout that no installation knows: the checkout's folder."""
    clone = {"url": "file:///home/me/src/perf%20data", "dir_info": {}}
    assert hint_for("fleet", clone, None) == "pip install '/home/me/src/perf data[fleet]'"
    editable = {"url": "file:///home/me/perfdata", "dir_info": {"editable": True}}
    assert hint_for("pprof", editable, "/home/me/perfdata") == \
        "pip install -e '/home/me/perfdata[pprof]'"
    assert hint_for("fleet", None, None) == "pip install 'perfdata[fleet]'"
    wheel = {"url": "file:///tmp/perfdata-0.1.0-py3-none-any.whl", "archive_info": {}}
    assert hint_for("native", wheel, None) == "pip install 'perfdata[native]'"
    assert hint_for("fleet", None, "/src/perfdata") == "pip install '/src/perfdata[fleet]'"


def test_pprof_export_without_protobuf(tmp_path):
    code = HIDE.replace("('pyarrow', 'pyarrow.parquet', 'distributed', 'dask')",
                        "('google.protobuf', 'google')")
    proc = subprocess.run([sys.executable, "-c", code, "export",
                           str(SAMPLES / "plt_loop.fp.data"), "--format", "pprof",
                           "-o", str(tmp_path / "p.pb.gz")],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == "perfdata: error: pprof output needs the protobuf package " \
        "(%s)\n" % install_hint("pprof")


def test_library_arrow_tables_without_pyarrow():
    code = ("import sys\n"
            "sys.modules['pyarrow'] = None\n"
            "import perfdata\n"
            "try:\n"
            "    perfdata.to_arrow(sys.argv[1])\n"
            "except ImportError as exc:\n"
            "    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(SAMPLES / "plt_loop.fp.data")],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.stdout == "perfdata's Arrow tables need pyarrow (%s)\n" % install_hint("fleet"), \
        proc.stderr
