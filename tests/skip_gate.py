"""The skip gate of CI: a run fails when a test skips for a reason that is not
listed in tests/ci_allowed_skips.txt.

.ci/run installs every tool the tests use, so on CI a skip for a missing
package means the suite checked less than it claims; only the listed reasons
(each with a comment saying why no package can fix it) may remain.  The gate is
on when PERFDATA_SKIP_GATE=1 (.ci/run exports it); the listed file can be
another one with PERFDATA_ALLOWED_SKIPS.  tests/conftest.py registers it;
`pytest -p skip_gate` does too (the gate's own tests).

With pytest-xdist the workers' reports reach the controller's
pytest_runtest_logreport and pytest_collectreport hooks, so the gate runs
in the controller only and judges there, in pytest_sessionfinish.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

ENV_ON = "PERFDATA_SKIP_GATE"
ENV_LIST = "PERFDATA_ALLOWED_SKIPS"
DEFAULT_LIST = Path(__file__).resolve().parent / "ci_allowed_skips.txt"
PLUGIN_NAME = "perfdata-skip-gate"


class AllowedSkip:
    """One listed reason: a regular expression the whole reason must match,
    and the comment above it saying why no package can fix it."""

    def __init__(self, pattern: str, why: str, line: int) -> None:
        self.pattern = pattern
        self.regex = re.compile(pattern)
        self.why = why
        self.line = line

    def allows(self, reason: str) -> bool:
        return self.regex.fullmatch(reason) is not None


def read_allowed(path: Path) -> list[AllowedSkip]:
    """The listed reasons of `path`: '#' lines are the comment of the patterns
    below them, up to a blank line (a pattern without one is refused)."""
    allowed: list[AllowedSkip] = []
    comment: list[str] = []
    after_pattern = False
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line:
            comment, after_pattern = [], False
        elif line.startswith("#"):
            if after_pattern:
                comment, after_pattern = [], False
            comment.append(line.lstrip("#").strip())
        else:
            if not comment:
                raise ValueError("%s:%d: pattern %r has no comment saying why no package "
                                 "can fix it" % (path, number, line))
            try:
                allowed.append(AllowedSkip(line, " ".join(comment), number))
            except re.error as exc:
                raise ValueError("%s:%d: bad pattern %r: %s" % (path, number, line, exc)) from None
            after_pattern = True
    return allowed


def skip_reason(report: Any) -> str:
    """The reason a skipped report gives, without pytest's 'Skipped: '."""
    longrepr = report.longrepr
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3:
        reason = str(longrepr[2])
    else:
        reason = str(longrepr)
    return reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason


class SkipGate:
    """Gathers every skip of the session (tests and whole modules) and fails
    the session when one has a reason not listed."""

    def __init__(self, listed: Path) -> None:
        self.listed = listed
        self.allowed = read_allowed(listed)
        self.skips: dict[str, str] = {}   # test id -> reason, each once

    def _note(self, report: Any) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self.skips.setdefault(report.nodeid, skip_reason(report))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._note(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._note(report)

    def unlisted(self) -> list[tuple[str, str]]:
        return sorted((nodeid, reason) for nodeid, reason in self.skips.items()
                      if not any(a.allows(reason) for a in self.allowed))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.unlisted() and session.exitstatus in (pytest.ExitCode.OK,
                                                       pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        unlisted = self.unlisted()
        tr = terminalreporter
        for nodeid, reason in sorted(self.skips.items()):
            if (nodeid, reason) not in unlisted:
                tr.write_line("listed skip %s: %s" % (nodeid, reason))
        if not unlisted:
            tr.write_line("skip gate: %d skipped, every reason listed in %s"
                          % (len(self.skips), self.listed.name))
            return
        tr.write_sep("=", "skip gate: %d of %d skips have a reason not listed in %s"
                     % (len(unlisted), len(self.skips), self.listed), red=True)
        for nodeid, reason in unlisted:
            tr.write_line("UNLISTED SKIP %s: %s" % (nodeid, reason))
        tr.write_line("Install what the test needs (in .ci/run), or list the reason with "
                      "a comment saying why no package can fix it.")


def register(config: pytest.Config) -> None:
    """Turn the gate on for this session when PERFDATA_SKIP_GATE=1, in the
    process that sees every report (not in an xdist worker)."""
    if os.environ.get(ENV_ON) != "1" or hasattr(config, "workerinput"):
        return
    if config.pluginmanager.has_plugin(PLUGIN_NAME):
        return
    listed = Path(os.environ.get(ENV_LIST) or DEFAULT_LIST)
    config.pluginmanager.register(SkipGate(listed), PLUGIN_NAME)


def pytest_configure(config: pytest.Config) -> None:
    register(config)
