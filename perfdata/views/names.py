"""How perf 6.1 prints a demangled C++ name.

perf demangles without DMGL_PARAMS unless run with -v (symbol-elf.c), so it
prints `ns::Class<T>::method` where c++filt prints `ns::Class<T>::method(int)
const`, and drops the return type of template functions.  The symbolizer keeps
the full name; the perf-compatible views print this short form.
"""
import functools

_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_QUALIFIERS = (" const", " volatile", " &&", " &", " noexcept")


@functools.lru_cache(maxsize=65536)
def perf_short_name(name):
    if not name or "(" not in name or name.startswith("("):
        return name
    text = name
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
