"""Issue 40's measures, for symbolize/ (counted from the source): no module
over 600 lines, no function over 80, no constructor over 8 parameters; and
every module a cache format tag is made of exists (cachedir.code_tag
digests the files it is given, and one that moved would silently drop out
of the tag, leaving stale caches in use)."""
from __future__ import annotations

import ast
import os
import re

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SYMBOLIZE = os.path.join(ROOT, "symbolize")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
MAX_CONSTRUCTOR_PARAMETERS = 8
# Constructors still over the bound, (module, class): none (the Symbolizer
# takes a SymbolizerOptions).
CONSTRUCTORS_LEFT: set[tuple[str, str]] = set()


def python_modules(package: str = SYMBOLIZE) -> list[tuple[str, str]]:
    """(path from the checkout, text) of each .py file below `package`."""
    out = []
    for dirpath, _dirs, files in os.walk(package):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    out.append((os.path.relpath(path, ROOT), fh.read()))
    return sorted(out)


def measures(modules: list[tuple[str, str]]) -> list[str]:
    """What goes over a bound, one line each."""
    over = []
    for rel, text in modules:
        lines = text.count("\n")
        if lines > MAX_MODULE_LINES:
            over.append(f"{rel}: {lines} lines")
        tree = ast.parse(text, rel)
        for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                    a = fn.args
                    n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) - 1
                    if n > MAX_CONSTRUCTOR_PARAMETERS and (rel, cls.name) not in CONSTRUCTORS_LEFT:
                        over.append(f"{rel}: {cls.name}() takes {n} parameters")
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = fn.end_lineno - fn.lineno + 1  # type: ignore[operator]
                if length > MAX_FUNCTION_LINES:
                    over.append(f"{rel}: {fn.name}() is {length} lines")
    return over


def test_symbolize_modules_and_functions_are_small():
    modules = python_modules()
    assert len(modules) > 40
    assert measures(modules) == []


def test_the_count_sees_what_is_too_big():
    body = "".join("    x = %d\n" % i for i in range(81))
    planted = [("symbolize/big.py", "def f():\n" + body + "\n" * 600),
               ("symbolize/ctor.py", "class C:\n    def __init__(self, a, b, c, d, e, f, g, h, i):"
                                     "\n        pass\n")]
    assert measures(planted) == ["symbolize/big.py: 682 lines", "symbolize/big.py: f() is 82 lines",
                                 "symbolize/ctor.py: C() takes 9 parameters"]


def test_cache_tags_name_modules_that_exist():
    """Every 'dir/module.py' a symbolize module names (the lists of the
    modules whose code decides a cache entry) is a file under symbolize/."""
    named = []
    for rel, text in python_modules():
        for node in ast.walk(ast.parse(text, rel)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    re.fullmatch(r"[a-z_/]+\.py", node.value):
                named.append((rel, node.value))
    assert len(named) > 20
    assert [(rel, name) for rel, name in named
            if not os.path.isfile(os.path.join(SYMBOLIZE, name))] == []
