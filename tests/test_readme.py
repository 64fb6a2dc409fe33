"""The README's examples run as written, and its set-up commands name files
that exist."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_python_examples_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) >= 2
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for block in blocks:
            # The first example reads "perf.data": point it at a sample.
            code = block.replace('"perf.data"', '"samples/two_events.data"')
            exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "hot_plt_loop" in out or "strlen" in out
    assert "__libc_start_call_main" in out or "None" in out


def test_main_job_command_runs():
    line = next(l for l in README.splitlines() if l.startswith("pip install . && perfdata"))
    command = line.split("&&", 1)[1].split("|")[0].split()
    assert command[0] == "perfdata"
    result = subprocess.run([sys.executable, "-c", "import cli, sys; sys.exit(cli.main())"]
                            + command[1:], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "strlen@plt" in result.stdout


def test_ci_runs_the_readme_test_command():
    test_line = next(l for l in README.splitlines() if l.startswith("pip install -e '.[test]'"))
    pytest_cmd = test_line.split("&&", 1)[1].strip()
    ci = (ROOT / ".ci" / "run").read_text()
    assert pytest_cmd in ci
