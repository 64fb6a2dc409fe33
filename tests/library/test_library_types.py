"""The library's face is typed (issue 35): `mypy --strict` on a small client
written against it (perfdata.profile and what it returns) finds no error,
and no expression of the client is Any (--disallow-any-expr: an untyped
name of the face would be Any, which every check lets through); a client
that misuses a type is refused, so the check can fail."""
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

CLIENT = textwrap.dedent('''
    from __future__ import annotations

    import perfdata
    from perfdata import ResolveOptions


    def by_hand(path: str) -> perfdata.Profile:
        options = ResolveOptions(debug_dirs=("debug",), dsos=frozenset({"libc.so.6"}))
        prof = perfdata.Profile(path, options)
        kept: ResolveOptions = prof.options
        del kept
        return prof


    def top(path: str) -> list[tuple[float, str]]:
        prof: perfdata.Profile = perfdata.profile(path, debug_dirs=["debug"], inline=None,
                                                  unwind="fp", pids=[1, 2], time="10%/2")
        table: perfdata.ReportTable = prof.report(sort="comm,dso,sym")
        rows: list[tuple[float, str]] = []
        for row in table:
            name: str | None = row.symbol
            rows.append((row.overhead, name or "?"))
        first: perfdata.ReportRow = table[0]
        some: tuple[perfdata.ReportRow, ...] = table[1:3]
        children: float | None = first.children
        del some, children
        return rows


    def leaves(prof: perfdata.Profile) -> dict[str, int]:
        counts: dict[str, int] = {}
        for sample in prof:
            s: perfdata.Sample = sample
            leaf: perfdata.Frame | None = s.leaf
            if leaf is not None and leaf.function is not None:
                line: str | None = leaf.srcline()
                counts[leaf.function] = counts.get(leaf.function, 0) + s.period
                del line
        folded: dict[str, int] = prof.folded(weight="samples")
        graph: perfdata.FlameGraph = prof.flamegraph()
        node: perfdata.FlameNode = graph.root
        depth_names = [(depth, n.name) for depth, n in node.walk()]
        svg: str = graph.svg(width=800)
        warnings: list[str] = prof.warnings
        compared: perfdata.DiffTable = prof.diff(perfdata.profile("new.data"), sort="dso,sym")
        first_change: perfdata.DiffRow = compared[0]
        changes = [(r.symbol or "?", r.delta, r.base_period, r.new_period) for r in compared]
        stacks: dict[str, tuple[int, int]] = prof.diff_folded(perfdata.profile("new.data"))
        del folded, depth_names, svg, warnings, first_change, changes, stacks
        version: str = perfdata.__version__
        del version
        return counts
''')

MISUSE = CLIENT + textwrap.dedent('''

    def wrong(prof: perfdata.Profile) -> str:
        return prof.report()[0].overhead
''')


def mypy(tmp_path, text):
    client = tmp_path / "client.py"
    client.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--disallow-any-expr",
         "--follow-imports=silent", "--python-version", "3.10", "--no-incremental",
         "--cache-dir", str(tmp_path / "cache"), str(client)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={"MYPYPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_client_of_the_face_is_typed_strictly(tmp_path):
    pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")
    out = mypy(tmp_path, CLIENT)
    assert out.returncode == 0 and "Success: no issues found in 1 source file" in out.stdout, \
        out.stdout[-3000:] + out.stderr[-2000:]
    out = mypy(tmp_path, MISUSE)
    assert out.returncode == 1 and 'Incompatible return value type (got "float", ' \
        'expected "str")' in out.stdout, out.stdout[-3000:]
