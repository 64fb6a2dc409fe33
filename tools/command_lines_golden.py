"""Write tests/expected/command_lines.txt from perf 6.1: each command line of
tests/command_lines.py, perf's verdict on it and its first line of
complaint.  Run from the repository's root: python3 tools/command_lines_golden.py"""
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from command_lines import COMMAND_LINES  # noqa: E402
from test_command_lines import GOLDEN, case_id, run_perf  # noqa: E402

with tempfile.TemporaryDirectory() as home:
    lines = []
    for command, args in COMMAND_LINES:
        verdict, message, _ = run_perf(command, args, home)
        lines.append("%s\t%s\t%s\n" % (case_id(command, args), verdict, message))
GOLDEN.write_text("".join(lines))
