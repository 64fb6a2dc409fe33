"""Without the `fleet` extra (dask, pyarrow) the commands that need it end
in one line naming the extra, exit 2; the others do not notice.  (The
packages are hidden from a child interpreter: sys.modules[name] = None.)"""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"

HIDE = ("import sys\n"
        "for name in ('pyarrow', 'pyarrow.parquet', 'distributed', 'dask'):\n"
        "    sys.modules[name] = None\n"
        "import cli\n"
        "sys.exit(cli.main(sys.argv[1:]))\n")


def run_hidden(*args):
    return subprocess.run([sys.executable, "-c", HIDE] + [str(a) for a in args],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def test_parquet_export_without_pyarrow(tmp_path):
    proc = run_hidden("export", SAMPLES / "plt_loop.fp.data", "--format", "parquet",
                      "-o", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr == "perfdata: error: parquet output needs pyarrow " \
        "(pip install 'perfdata[fleet]')\n"


def test_fleet_without_dask():
    proc = run_hidden("fleet", "collapse", SAMPLES / "plt_loop.fp.data")
    assert proc.returncode == 2
    assert proc.stderr == "perfdata: error: fleet commands need Dask: pip install " \
        "'perfdata[fleet]' (dask[distributed])\n"


def test_single_file_commands_without_the_extra():
    proc = run_hidden("collapse", SAMPLES / "plt_loop.fp.data", "--debug-dir",
                      SAMPLES / "buildids")
    assert proc.returncode == 0 and "hot_plt_loop" in proc.stdout, proc.stderr
