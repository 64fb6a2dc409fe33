"""The kernel's symbol columns handed to the compiled core (core/script.py
_u64_copy): the same numbers as array("Q", column) for every form
KernelSymbols.bounds() gives (the cache file's memoryview, an array, a
list), one copy of the bytes for the cache file's (10fc849)."""
import mmap
from array import array

from perfdata.core.script import _u64_copy

NUMBERS = [0, 1, 0xffffffff81000000, 2**64 - 1, 4096, 123456789]


def test_copies_equal_the_numbers(tmp_path):
    path = tmp_path / "columns.bin"
    path.write_bytes(array("Q", NUMBERS * 50).tobytes())
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped).cast("Q")
        got = _u64_copy(view)
        assert type(got) is array and got.typecode == "Q" and got == array("Q", NUMBERS * 50)
        assert _u64_copy(view[::2]) == array("Q", (NUMBERS * 50)[::2])   # (not contiguous)
        del got, view
    assert _u64_copy(NUMBERS) == array("Q", NUMBERS)
    assert _u64_copy(array("Q", NUMBERS)) == array("Q", NUMBERS)
    assert _u64_copy(memoryview(array("q", [5, 7]))) == array("Q", [5, 7])
