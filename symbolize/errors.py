"""The one exception hierarchy of symbolize/.

Lookups mostly answer None and record a warning; these are raised only where a
caller asked for something that cannot be given (an invalid build-id string
passed to a function that must build a path from it, for instance).
"""


class SymbolizeError(Exception):
    """Base of every error symbolize/ raises."""


class BinaryError(SymbolizeError):
    """A file could not be opened or read as an ELF binary."""


class NotELFError(BinaryError):
    """The file is readable but is not ELF (or is cut before its headers)."""


class InvalidBuildIdError(SymbolizeError, ValueError):
    """A build-id string is not 2-64 lowercase hex digits of even length."""
