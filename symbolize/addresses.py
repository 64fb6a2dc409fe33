"""The one rule of the address vocabulary that every part needs."""


def address_for_lookup(address: int, is_return_address: bool) -> int:
    """The address to look up for a frame: a return address points after the
    call, so the call itself (and with it the right function and line, even
    after a noreturn call at a function's very end) is at address - 1."""
    return address - 1 if is_return_address and address > 0 else address


# x86 prefixes that may stand before a call: segment/notrack (2e 3e 26 36
# 64 65), operand and address size (66 67), and REX (40-4f, last).
_X86_LEGACY_PREFIXES = frozenset((0x2E, 0x3E, 0x26, 0x36, 0x64, 0x65, 0x66, 0x67))


def _x86_call_length(code: bytes, start: int) -> int | None:
    """The length of the call instruction at code[start:], or None when the
    bytes there are not one: `e8 rel32`, or `ff /2` (call r/m) with its
    ModRM, SIB and displacement, after prefixes."""
    i = start
    n = len(code)
    while i < n and code[i] in _X86_LEGACY_PREFIXES:
        i += 1
    if i < n and 0x40 <= code[i] <= 0x4F:
        i += 1
    if i >= n:
        return None
    op = code[i]
    if op == 0xE8:
        return i + 5 - start
    if op != 0xFF or i + 1 >= n:
        return None
    modrm = code[i + 1]
    if (modrm >> 3) & 7 != 2:
        return None
    mod, rm = modrm >> 6, modrm & 7
    length = i + 2 - start
    if mod == 3:
        return length
    if rm == 4:                         # a SIB byte
        if i + 2 >= n:
            return None
        sib_base = code[i + 2] & 7
        length += 1
        if mod == 0 and sib_base == 5:
            length += 4
    elif mod == 0 and rm == 5:          # rip-relative
        length += 4
    if mod == 1:
        length += 1
    elif mod == 2:
        length += 4
    return length


def ends_call(code: bytes, machine: str | None) -> bool | None:
    """Whether `code`, the bytes just before an address (up to 15), ends
    with a call instruction: True, False, or None when the machine's calls
    are not known here. x86_64/i386: some call whose length reaches exactly
    the end; aarch64: BL, BLR or BLRA* as the last word."""
    if machine in ("EM_X86_64", "EM_386"):
        n = len(code)
        for length in range(2, min(n, 15) + 1):
            if _x86_call_length(code, n - length) == length:
                return True
        return False
    if machine == "EM_AARCH64":
        if len(code) < 4:
            return None
        word = int.from_bytes(code[-4:], "little")
        return (word & 0xFC000000) == 0x94000000 or (word & 0xFFFFFC1F) == 0xD63F0000 \
            or (word & 0xFEFFF800) == 0xD63F0800
    return None
