"""Symbol name demangling: C++ (Itanium) and Rust (legacy, v0).

C++ names are demangled by libiberty's cp-demangle, the code perf 6.1 uses
(`cplus_demangle`), reached through ctypes in the libbfd that binutils ships
(it exports libiberty). cp-demangle parses the name into a tree and prints
it; without DMGL_PARAMS it leaves out the function's own parameter list, its
return type, its cv-qualifiers and `[clone ...]` suffixes, structurally
(parameters inside template arguments stay): that is perf's form
(`ns::apply<main::{lambda(auto:1)#2}>`), and `params=True` (perf -v's
DMGL_PARAMS|DMGL_ANSI) gives the full signature. Where no libbfd can be
loaded, libstdc++'s `__cxa_demangle` (through cxxfilt) gives the full form
and perf's form is cut from it (`strip_signature`).

Rust names (legacy and v0) are decoded in rust_demangle.py.  Any name that
does not decode is returned unchanged.
"""
from __future__ import annotations

import functools
import os
import re
from typing import TYPE_CHECKING, Any, Literal

from .rust_demangle import demangle_rust_legacy, demangle_rust_v0

__all__ = ["demangle", "strip_signature", "demangle_rust_legacy", "demangle_rust_v0"]

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    # (cplus_demangle_v3, free, the library's path, ctypes.string_at)
    _Libiberty = tuple[Any, Any, str, Callable[[int], bytes]]

_cxxfilt = None      # imported at the first C++ name: its import runs
                     # ctypes.util.find_library, a good part of start-up
_iberty: _Libiberty | Literal[False] | None = None   # from libbfd, or False

_SUFFIX = re.compile(r"(@plt|@@?[A-Za-z0-9_.]+)\Z")

DMGL_PARAMS = 1 << 0
DMGL_ANSI = 1 << 1


def demangle_flags(params: bool) -> int:
    """cplus_demangle_v3's options for a name with its signature (params)
    or without: what this module and the compiled tables (fixup) pass."""
    return DMGL_PARAMS | DMGL_ANSI if params else 0

_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
             "/usr/lib", "/lib/x86_64-linux-gnu", "/lib64", "/usr/local/lib")


def demangle(name: str, *, enabled: bool = True, params: bool = True) -> str:
    """The readable form of a symbol name, or the name itself.

    params=False: perf 6.1's form (no parameter list, return type or clone
    suffix); True: the full signature (c++filt's). A `@plt` or `@VERSION`
    suffix is kept and the part before it demangled.
    """
    if not enabled or not name or not isinstance(name, str):
        return name
    suffix = ""
    m = _SUFFIX.search(name)
    if m and m.start() > 0:
        name, suffix = name[:m.start()], m.group(0)
    if name.startswith("_R") or name.startswith("__R"):
        out = demangle_rust_v0(name)
    elif name.startswith(("_ZN", "__ZN")):
        out = demangle_rust_legacy(name)
        if out is None:
            out = _cxx(name, params)
    elif name.startswith("_Z") or name.startswith("___Z"):
        out = _cxx(name, params)
    else:
        out = None
    return (out if out is not None else name) + suffix


def _libbfd_candidates() -> Iterator[str]:
    """$PERFDATA_LIBIBERTY, then each directory's libbfd, the highest
    version first; a directory is listed only when no file before it
    loaded (a library directory holds thousands of files)."""
    import glob
    yield os.environ.get("PERFDATA_LIBIBERTY", "")
    for d in _LIB_DIRS:
        yield from sorted(glob.glob(os.path.join(d, "libbfd*.so*")), reverse=True)


def _libiberty() -> _Libiberty | Literal[False]:
    global _iberty
    if _iberty is None:
        import ctypes           # (at the first C++ name: start-up time)
        _iberty = False
        for path in _libbfd_candidates():
            if not path or not os.path.isfile(path):
                continue
            try:
                lib = ctypes.CDLL(path)
                fn = lib.cplus_demangle_v3
                libc = ctypes.CDLL(None)
                free = libc.free
            except (OSError, AttributeError):
                continue
            fn.restype = ctypes.c_void_p
            fn.argtypes = [ctypes.c_char_p, ctypes.c_int]
            free.argtypes = [ctypes.c_void_p]
            free.restype = None
            _iberty = (fn, free, path, ctypes.string_at)
            break
    return _iberty


def load_into(core: Any) -> bool:
    """Load the library _libiberty() loads (or would) into the compiled
    symbol tables (symbolize.symbols._symtab's demangler(), which fixup()
    demangles the names it compares with): the same file, tried in the same
    order, so that C and this module give the same names.  Whether one
    loaded; once per process."""
    global _loaded_into
    if _loaded_into is None:
        if _iberty:
            _loaded_into = core.demangler((_iberty[2],)) == 0
        elif _iberty is False:
            _loaded_into = False
        else:
            _loaded_into = any(path and os.path.isfile(path) and core.demangler((path,)) == 0
                               for path in _libbfd_candidates())
    return _loaded_into


_loaded_into: bool | None = None


def _cxx(name: str, params: bool) -> str | None:
    lib = _libiberty()
    if lib:
        try:
            raw = name.encode("utf-8", "surrogateescape")
        except UnicodeError:
            return None
        if b"\0" in raw:
            return None
        ptr = lib[0](raw, demangle_flags(params))
        if not ptr:
            return None
        try:
            out = lib[3](ptr).decode("utf-8", "replace")
        finally:
            lib[1](ptr)
        return out if out and out != name else None
    full = _cxxfilt_full(name)
    if full is None or params:
        return full
    return strip_signature(full)


def _cxxfilt_full(name: str) -> str | None:
    global _cxxfilt
    if _cxxfilt is None:
        try:
            import cxxfilt
        except ImportError:     # pragma: no cover - cxxfilt is a declared dependency
            cxxfilt = False
        _cxxfilt = cxxfilt
    if _cxxfilt is False:
        return None
    try:
        out = _cxxfilt.demangle(name)
    except Exception:       # cxxfilt.InvalidName, or anything from the C side
        return None
    return out if out and out != name else None


_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_QUALIFIERS = (" const", " volatile", " &&", " &", " noexcept")
_CLONE = re.compile(r"( \[clone [^\]]*\])+\Z")


@functools.lru_cache(maxsize=65536)
def strip_signature(name: str) -> str:
    """perf's form cut from a full demangled signature, for where libiberty
    cannot be loaded (string surgery: a demangler's tree is better)."""
    if not name or name.startswith("("):
        return name
    text = _CLONE.sub("", name)
    if "(" not in text:
        return text
    # Trailing cv/ref qualifiers of a member function.
    stripped = True
    while stripped:
        stripped = False
        for q in _QUALIFIERS:
            if text.endswith(q):
                text = text[:-len(q)]
                stripped = True
    if not text.endswith(")"):
        return name
    # The parameter list: the last top-level (...) group.
    depth = 0
    start = None
    for i in range(len(text) - 1, -1, -1):
        c = text[i]
        if c in _CLOSE:
            depth += 1
        elif c in _OPEN:
            depth -= 1
            if depth == 0 and c == "(":
                start = i
                break
    if start is None or start == 0:
        return name
    head = text[:start]
    # A return type before a template function's name: "int foo<int>" -> "foo<int>".
    depth = 0
    cut = 0
    for i, c in enumerate(head):
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == " " and depth == 0 and not head[:i].endswith("operator"):
            if not head[i + 1:].startswith(("const", "volatile")):
                cut = i + 1
    if cut and head.endswith(">"):
        head = head[cut:]
    return head
