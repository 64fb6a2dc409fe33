"""perf 6.1's symbol-table fixups stated one symbol at a time
(symbols__fixup_end, symbols__fixup_duplicate): what symbolize/symbols/symtab.py's
fixup_columns does by columns, kept here as the tests' reference."""
from operator import itemgetter

from symbolize.symbols.fixups import choose_best

_START = itemgetter(0)


def fixup_entries(ents: list[list], *, is_kallsyms: bool = False) -> list[list]:
    """fixup_symbols on [start, end, binding, name, source] lists already
    made (kallsyms makes them straight from its text); sorts them in place."""
    ents.sort(key=_START)               # stable: equal starts keep table order
    if not ents:
        return []
    for prev, curr in zip(ents, ents[1:]):
        if prev[1] == prev[0]:
            if is_kallsyms and (("[" in prev[3]) != ("[" in curr[3])):
                # Last kernel/module symbol: end of its page, not across the gap.
                prev[1] = ((prev[1] + 4096) + 4095) // 4096 * 4096
            else:
                prev[1] = curr[0]
    last = ents[-1]
    if last[1] == last[0]:
        last[1] = (last[0] + 4095) // 4096 * 4096 + 4096
    out = []
    curr = ents[0]
    for nxt in ents[1:]:
        if nxt[0] != curr[0]:
            out.append(curr)
            curr = nxt
        elif not choose_best(curr, nxt):
            curr = nxt
    out.append(curr)
    return out
