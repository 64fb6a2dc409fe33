"""The unwinder's module lookup per address space (SampleUnwinder.module_finder):
it answers as a fresh maps.find + module_for would, while maps arrive and
leave: data maps (the heap growing) keep its cache, a code map leaving
drops it, an address with no map or a data map is never kept."""

from perfdata.session.maps import Map, MapGroup
from perfdata.resolve.unwinding import SampleUnwinder


class _NoBinaries:
    """A symbolizer that finds no binary: every module is (no CFI, bias =
    start - pgoff), which tells maps apart."""

    class _Choice:
        binary = None
        debug = None

    def binary_for(self, path, build_id):
        return self._Choice()


def _dso_of(m):
    return (m.path, None)


def _bias(module):
    return None if module is None else module.bias


def test_code_generation_moves_only_when_a_code_map_leaves():
    maps = MapGroup()
    maps.insert(Map(0x400000, 0x1000, 0, "/bin/a"))
    g = maps.code_generation
    maps.insert(Map(0x800000, 0x1000, 0, "[heap]", prot=3, is_data=True))
    maps.insert(Map(0x800000, 0x3000, 0, "[heap]", prot=3, is_data=True))   # the heap grows
    maps.insert(Map(0x500000, 0x1000, 0, "/bin/b"))                        # beside, not over
    assert maps.code_generation == g
    maps.insert(Map(0x400000, 0x1000, 0x2000, "/bin/c"))                   # over /bin/a
    assert maps.code_generation == g + 1
    maps.clear()
    assert maps.code_generation == g + 2


def test_module_finder_answers_as_a_fresh_lookup():
    unwinder = SampleUnwinder(_NoBinaries())
    maps = MapGroup()
    maps.insert(Map(0x400000, 0x1000, 0x1000, "/bin/a"))

    def check(find, addresses):
        for avma in addresses:
            m = maps.find(avma)
            want = None if m is None else unwinder.module_for(m, _dso_of(m))
            assert find(avma) is want, hex(avma)

    probes = (0x400010, 0x500010, 0x700010, 0x800010, 0x880010)
    find = unwinder.module_finder(maps, _dso_of)
    check(find, probes)
    assert _bias(find(0x400010)) == 0x400000 - 0x1000
    # A code map where there was none: the earlier "no map" was not kept.
    maps.insert(Map(0x500000, 0x1000, 0, "/bin/b"))
    check(unwinder.module_finder(maps, _dso_of), probes)
    assert find(0x500010) is not None
    # Data maps arrive and grow: the cache stays, and answers for them are
    # looked up afresh.
    maps.insert(Map(0x800000, 0x1000, 0, "[heap]", prot=3, is_data=True))
    check(find, probes)
    maps.insert(Map(0x7ff000, 0x90000, 0, "[heap]", prot=3, is_data=True))
    assert unwinder.module_finder(maps, _dso_of) == find
    check(find, probes)
    assert _bias(find(0x800010)) == 0x7ff000
    # A code map replaced: another cache, the new map's module.
    maps.insert(Map(0x400000, 0x1000, 0x3000, "/bin/c"))
    find = unwinder.module_finder(maps, _dso_of)
    check(find, probes)
    assert _bias(find(0x400010)) == 0x400000 - 0x3000


def test_memfd_code_is_stepped_by_frame_pointer_only_as_jit_code():
    """A memfd's code is JIT code (frame-pointer steps where it has no CFI)
    when the process wrote a perf map, else an image run from the memfd,
    as out of reach as a missing binary (no step): per address space, the
    same map asked both ways."""
    unwinder = SampleUnwinder(_NoBinaries())
    maps = MapGroup()
    maps.insert(Map(0x400000, 0x2000, 0x1000, "/memfd:image (deleted)"))
    maps.insert(Map(0x600000, 0x1000, 0, "//anon"))
    maps.insert(Map(0x700000, 0x1000, 0, "/bin/missing"))
    jit = unwinder.module_finder(maps, _dso_of, None, True)
    image = unwinder.module_finder(maps, _dso_of, None, False)
    assert jit(0x400010).frame_pointer_step and not image(0x400010).frame_pointer_step
    # anonymous code is JIT code and a binary not here has no step, either way
    assert jit(0x600010).frame_pointer_step and image(0x600010).frame_pointer_step
    assert not jit(0x700010).frame_pointer_step and not image(0x700010).frame_pointer_step
    assert jit(0x400010).frame_pointer_step      # the first answer was not replaced
