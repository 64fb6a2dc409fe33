"""The type hints hold: mypy over the modules pyproject.toml's [tool.mypy]
lists (every module of perfdata/, symbolize/ and cli.py) reports no error."""
import subprocess
import sys

import pytest

from conftest import REPO


def test_mypy_finds_no_error(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")
    out = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "Success: no issues found in" in out.stdout
    checked = int(out.stdout.split("Success: no issues found in")[1].split()[0])
    assert checked >= 80
