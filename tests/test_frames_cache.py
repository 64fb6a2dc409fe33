"""FrameResolver.dwarf_stack's cache of whole stacks: a stack whose every
address lies in a code map is kept while data maps come and go; one with
an address outside any code map is made again after any map change (a map
arriving there changes its frames)."""

from perfdata.frames import FrameResolver
from perfdata.session.machine import Machine
from perfdata.session.maps import Map


class _NoSymbols:
    def lookup(self, path, build_id, svma, file_offset=None, is_return_address=False):
        return []


class _Sample:
    def __init__(self, thread):
        self.thread = thread
        self.pid = thread.pid


def _resolver():
    machine = Machine()
    thread = machine.thread(7, 7)
    return FrameResolver(machine, _NoSymbols(), {}, [], dwarf_inline=False), thread


def _dsos(frames):
    return [f.dso for f in frames]


def test_a_stack_in_code_maps_is_kept_while_data_maps_arrive():
    resolver, thread = _resolver()
    maps = thread.maps
    maps.insert(Map(0x400000, 0x10000, 0, "/bin/a"))
    sample = _Sample(thread)
    user = [0x400100, 0x400200, 0x400300]
    first = resolver.dwarf_stack(sample, (), user, ())
    assert _dsos(first) == ["/bin/a"] * 3
    generation = maps.generation
    maps.insert(Map(0x800000, 0x1000, 0, "[heap]", prot=3, is_data=True))
    maps.insert(Map(0x800000, 0x5000, 0, "[heap]", prot=3, is_data=True))
    assert maps.generation != generation
    assert resolver.dwarf_stack(sample, (), user, ()) is first       # kept
    # The code map replaced: made again, from the new map.
    maps.insert(Map(0x400000, 0x10000, 0, "/bin/b"))
    again = resolver.dwarf_stack(sample, (), user, ())
    assert _dsos(again) == ["/bin/b"] * 3


def test_a_stack_outside_code_maps_follows_every_map_change():
    resolver, thread = _resolver()
    maps = thread.maps
    maps.insert(Map(0x400000, 0x10000, 0, "/bin/a"))
    sample = _Sample(thread)
    user = [0x400100, 0x900010]
    assert _dsos(resolver.dwarf_stack(sample, (), user, ())) == ["/bin/a", "[unknown]"]
    # A data map arrives over the unmapped address: its frame names it now.
    maps.insert(Map(0x900000, 0x1000, 0, "//anon", prot=3, is_data=True))
    assert _dsos(resolver.dwarf_stack(sample, (), user, ())) == ["/bin/a", "//anon"]
    # And a data map that grows: the stack follows it too.
    maps.insert(Map(0x8ff000, 0x3000, 0, "[heap]", prot=3, is_data=True))
    assert _dsos(resolver.dwarf_stack(sample, (), user, ())) == ["/bin/a", "[heap]"]
