"""The one rule of the address vocabulary that every part needs."""


def address_for_lookup(address: int, is_return_address: bool) -> int:
    """The address to look up for a frame: a return address points after the
    call, so the call itself (and with it the right function and line, even
    after a noreturn call at a function's very end) is at address - 1."""
    return address - 1 if is_return_address and address > 0 else address
