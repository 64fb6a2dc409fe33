"""FrameResolver.dwarf_stack's cache of whole stacks: a stack whose every
address lies in a code map is kept while data maps come and go; one with
an address outside any code map is made again after any map change (a map
arriving there changes its frames)."""

from perfdata.resolve.dsos import RecordedBinaries
from perfdata.resolve.frames import FrameResolver
from perfdata.session.machine import Machine
from perfdata.session.maps import Map


class _NoSymbols:
    def lookup(self, path, build_id, svma, file_offset=None, is_return_address=False):
        return []

    def jit_file(self, path):
        return None

    def add_jit_file_place(self, path, place):
        pass


class _Sample:
    def __init__(self, thread):
        self.thread = thread
        self.pid = thread.pid


def _resolver():
    machine = Machine()
    thread = machine.thread(7, 7)
    return FrameResolver(machine, _NoSymbols(), RecordedBinaries(), [], dwarf_inline=False), thread


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


def _callchain_sample(thread):
    sample = _Sample(thread)
    sample.cpumode = 2          # user
    return sample


def test_callchain_cache_kept_while_stacks_repeat_dropped_when_they_do_not(monkeypatch):
    """-g stacks are kept while a quarter of the lookups hit (a hot loop);
    where they do not repeat (every process its own space, garbage return
    addresses) the resolver stops keying them, and goes back to keeping
    them when they repeat again; the frames are the same either way."""
    import perfdata.resolve.stack_caches as stack_caches
    monkeypatch.setattr(stack_caches, "STACK_WINDOW", 64)
    resolver, thread = _resolver()
    thread.maps.insert(Map(0x400000, 0x10000, 0, "/bin/prog"))
    sample = _callchain_sample(thread)
    hot = [0x401000, 0x402000, 0x403000]
    for _ in range(200):
        resolver.frames_for_callchain(sample, hot)
    assert resolver.keeps_stacks
    fresh, fresh_thread = _resolver()
    fresh_thread.maps.insert(Map(0x400000, 0x10000, 0, "/bin/prog"))
    unique = [[0x401000 + i, 0x402000 + i] for i in range(64 * 40)]
    for ips in unique:
        got = resolver.frames_for_callchain(sample, ips)
        want = fresh.frames_for_callchain(_callchain_sample(fresh_thread), ips)
        assert [(f.address, f.is_return_address) for f in got] == \
            [(f.address, f.is_return_address) for f in want]
    assert not resolver.keeps_stacks
    for _ in range(64 * 16 * 2):        # probes (1 in 16) see the hot stack again
        resolver.frames_for_callchain(sample, hot)
    assert resolver.keeps_stacks


def test_callchain_ends_at_a_value_that_is_no_context():
    """A word at or above PERF_CONTEXT_MAX that names no context (-1, -0x100:
    a frame-pointer walk read garbage) ends the stack: the frames before it
    stay, nothing after it is made a frame (perf 6.1 drops the whole chain,
    docs/differences.md's deliberate difference); a real context marker goes on."""
    from perfdata.format.constants import CallchainContext as CC
    resolver, thread = _resolver()
    thread.maps.insert(Map(0x400000, 0x10000, 0, "/bin/prog"))
    sample = _callchain_sample(thread)
    for garbage in ((1 << 64) - 1, (1 << 64) - 0x100, int(CC.MAX)):
        ips = [int(CC.USER), 0x401000, 0x402000, garbage, 0x403000, 0x404000]
        frames = resolver.frames_for_callchain(sample, ips)
        assert [f.avma for f in frames] == [0x401000, 0x402000]
    assert resolver.counts["invalid_context_samples"] == 3
    ips = [int(CC.USER), 0x401000, int(CC.USER), 0x403000]
    assert [f.avma for f in resolver.frames_for_callchain(sample, ips)] == [0x401000, 0x403000]
