"""The comparison with perf's text counts perf's known wrong stacks by kind
and still fails on any other difference: checked on stacks written out."""
from script_compare import compare

LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
HEADER = "prog 1 1.000000:    4000000 cpu-clock:u: "


def _text(*frames):
    return HEADER + "\n" + "".join("\t%16x %s (%s)\n" % f for f in frames) + "\n"


LEAF = (0x8a1f0, "____strtol_l_internal+0x30", LIBC)
ATOI = (0x107f, "atoi+0x3f", "inlined")
MAIN = (0x107f, "main+0x3f", "/x/prog")
START = (0x27249, "__libc_start_call_main+0x79", LIBC)


def test_perf_leaving_out_a_caller_is_counted_not_failed():
    # perf's libdw took rbp's word for the leaf's caller: main and the atoi
    # inlined at its call are left out, the rest is the same
    stats = compare(_text(LEAF, ATOI, MAIN, START), _text(LEAF, START))
    assert stats["other"] == []
    assert stats["caller-skipped"] == 2
    assert stats["equal"] == stats["perf_resolved"] == 2
    # ... or for the caller of the leaf's caller (a vdso leaf, libc's
    # clock_gettime, then main left out)
    vdso = (0xc7d, "__vdso_clock_gettime+0x4d", "[vdso]")
    gettime = (0xcf439, "__clock_gettime+0x19", LIBC)
    stats = compare(_text(vdso, gettime, MAIN, START), _text(vdso, gettime, START))
    assert stats["other"] == [] and stats["caller-skipped"] == 1


def test_perf_leaving_out_callers_often_is_a_difference():
    # sporadic in perf: in more than one sample in a hundred it is ours
    ours = _text(LEAF, MAIN, START) * 150
    stats = compare(ours, _text(LEAF, START) + _text(LEAF, MAIN, START) * 149)
    assert stats["other"] == [] and stats["caller-skipped"] == 1
    stats = compare(ours, _text(LEAF, START) * 2 + _text(LEAF, MAIN, START) * 148)
    assert len(stats["other"]) == 2


def test_a_frame_of_ours_perf_has_not_elsewhere_is_a_difference():
    mid = (0x1120, "mid+0x10", "/x/prog")
    # the leaf's caller left out, but what follows differs too
    stats = compare(_text(LEAF, MAIN, START), _text(LEAF, (0x29e40, "__libc_start_main+0x80",
                                                         LIBC)))
    assert len(stats["other"]) == 1 and stats["caller-skipped"] == 0
    # two callers left out is not one
    stats = compare(_text(LEAF, mid, MAIN, START), _text(LEAF, START))
    assert len(stats["other"]) == 1 and stats["caller-skipped"] == 0
    # an [unknown] of ours is no caller perf left out
    stats = compare(_text(LEAF, (0x2000, "[unknown]", "/x/prog"), START), _text(LEAF, START))
    assert len(stats["other"]) == 1 and stats["caller-skipped"] == 0
