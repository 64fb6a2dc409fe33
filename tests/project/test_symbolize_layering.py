"""symbolize's import graph, read from its source: the floor (errors,
buildid, elffile and its elf* parts, cachedir, addresses, warninglog), three packages standing
on it side by side (debuginfo, symbols, unwind) with no import from one into
another, and the facade (symbolizer, __init__) over them; nothing in
symbolize imports perfdata or the command line."""
from __future__ import annotations

import ast
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PACKAGES = ("debuginfo", "symbols", "unwind")
# The facade's modules: the only ones that may stand on all three packages.
FACADE = ("symbolize", "symbolize.symbolizer")


def _module_name(path: str, root: str) -> str:
    rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
    return rel[:-len(".__init__")] if rel.endswith(".__init__") else rel


def imports_of(root: str, package: str = "symbolize") -> dict[str, set[str]]:
    """Each module of `package` under `root` -> the modules it imports (at
    the top, in functions and under TYPE_CHECKING alike), absolute; a
    `from P import name` counts as importing P.name where that is a module
    (P, a package, is imported before any of its modules anyway) and P
    otherwise."""
    graph: dict[str, set[str]] = {}
    for dirpath, _dirs, files in os.walk(os.path.join(root, package)):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(dirpath, f)
            name = _module_name(path, root)
            is_pkg = f == "__init__.py"
            here = name if is_pkg else name.rpartition(".")[0]
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            found: set[str] = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    found.update(a.name for a in node.names)
                elif isinstance(node, ast.ImportFrom):
                    if node.level:
                        base = here.split(".")
                        base = base[:len(base) - (node.level - 1)]
                        target = ".".join(base + ([node.module] if node.module else []))
                    else:
                        target = node.module or ""
                    for a in node.names:
                        sub = os.path.join(root, *(target + "." + a.name).split("."))
                        is_module = os.path.isfile(sub + ".py") or os.path.isdir(sub)
                        found.add(target + "." + a.name if is_module else target)
            graph[name] = found
    return graph


def _room(module: str) -> str:
    """'floor', 'facade' or the package a symbolize module is in."""
    if module in FACADE:
        return "facade"
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in PACKAGES:
        return parts[1]
    return "floor"


def violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for module, imported in sorted(graph.items()):
        room = _room(module)
        for target in sorted(imported):
            top = target.split(".")[0]
            if top in ("perfdata", "cli"):
                bad.append(f"{module} imports {target} (symbolize never imports perfdata)")
                continue
            if top != "symbolize":
                continue
            to = _room(target)
            if room == "facade" or to == room:
                continue
            if to == "facade":
                bad.append(f"{module} imports the facade {target}")
            elif room == "floor" and to in PACKAGES:
                bad.append(f"{module} (the floor) imports {target}")
            elif room in PACKAGES and to in PACKAGES:
                bad.append(f"{module} imports {target} sideways ({room} -> {to})")
    return bad


def test_symbolize_layers_are_one_way():
    graph = imports_of(ROOT)
    assert "symbolize.unwind.unwinder" in graph and "symbolize.symbols.symtab" in graph
    assert violations(graph) == []


def test_checker_sees_sideways_and_upward_imports(tmp_path):
    """The checker itself, on a planted tree: each kind of wrong import is
    named (so an empty list above means something)."""
    files = {
        "symbolize/__init__.py": "from .symbolizer import S\n",
        "symbolize/symbolizer.py": "from .symbols import plt\nfrom .unwind import cfi\n",
        "symbolize/elffile.py": "from .symbols.plt import x\n",
        "symbolize/symbols/__init__.py": "",
        "symbolize/symbols/plt.py": "def f():\n    from ..unwind.unwinder import K\n",
        "symbolize/unwind/__init__.py": "",
        "symbolize/unwind/cfi.py": "import perfdata.format\nfrom ..elffile import Binary\n",
        "symbolize/unwind/unwinder.py": "from . import cfi\nfrom .. import symbolizer\n",
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert violations(imports_of(str(tmp_path))) == [
        "symbolize.elffile (the floor) imports symbolize.symbols.plt",
        "symbolize.symbols.plt imports symbolize.unwind.unwinder sideways (symbols -> unwind)",
        "symbolize.unwind.cfi imports perfdata.format (symbolize never imports perfdata)",
        "symbolize.unwind.unwinder imports the facade symbolize.symbolizer",
    ]
