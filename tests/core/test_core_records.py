"""The compiled record walk of `perfdata stats` (perfdata/core/_records.c,
perfdata/core/records.py): the same bytes out as the pure-Python path
(PERFDATA_CORE=pure) on every bundled recording, the corpus, the fuzz
regressions and mutated recordings; the layouts it reads are the schemas';
and walk_block itself refuses bad tables and survives any bytes."""
from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
from array import array
from pathlib import Path

import pytest

import perfdata
from conftest import run_cli
from perfdata.core import layout
from perfdata.core import records as core_records
from perfdata.format import plausibility
from perfdata.format.constants import RecordType as RT
from perfdata.format.records import body_schemas, event_header_schema

_records = pytest.importorskip("perfdata.core._records",
                               reason="the compiled record walk is not built")

REPO = Path(__file__).resolve().parents[2]
SAMPLES = sorted(p for p in (REPO / "samples").glob("*.data"))
REGRESSIONS = sorted(p for p in (REPO / "tests" / "regressions").glob("*.data"))


def _stats(path: Path | str, pure: bool, monkeypatch: pytest.MonkeyPatch) -> tuple:
    if pure:
        monkeypatch.setenv("PERFDATA_CORE", "pure")
    else:
        monkeypatch.delenv("PERFDATA_CORE", raising=False)
    return run_cli(["stats", str(path)])


def _assert_same(path: Path | str, monkeypatch: pytest.MonkeyPatch) -> None:
    pure = _stats(path, True, monkeypatch)
    compiled = _stats(path, False, monkeypatch)
    assert compiled == pure, path


# ------------------------------------------------------------------ layouts
@pytest.mark.parametrize("little", [True, False])
def test_header_layout_is_the_schemas(little: bool) -> None:
    head = layout.header_layout(little)
    raw = event_header_schema(little).build({"type": 0x11223344, "misc": 0x5566,
                                              "size": 0x7788})
    order = "<" if little else ">"
    assert len(raw) == head.size
    assert struct.unpack_from(order + "I", raw, head.type_off)[0] == 0x11223344
    assert struct.unpack_from(order + "H", raw, head.misc_off)[0] == 0x5566
    assert struct.unpack_from(order + "H", raw, head.size_off)[0] == 0x7788


def test_name_and_lost_offsets_are_the_schemas() -> None:
    # the walker's own name offsets (derived there too) and a built body
    assert layout.name_offsets() == plausibility.NAME_OFFSETS
    comm = body_schemas(True)[RT.COMM].build({"pid": 1, "tid": 2, "comm": "xyz"})
    assert comm[layout.name_offsets()[int(RT.COMM)]:].startswith(b"xyz\0")
    lost = body_schemas(True)[RT.LOST_SAMPLES].build({"lost": 0x0102030405060708})
    assert struct.unpack_from("<Q", lost, layout.lost_samples_offset())[0] == 0x0102030405060708


def test_rules_are_the_walkers() -> None:
    assert core_records.CAREFUL_ONLY == plausibility.CAREFUL_ONLY
    # every type the C takes is one the walk knows, and none it applies or
    # expands but ID_INDEX, which the glue applies as the walk does
    tables = core_records.walk_tables(16, _records.NTYPES)
    take = tables[:_records.NTYPES]
    taken = {t for t in range(_records.NTYPES) if take[t]}
    assert taken <= plausibility.KNOWN_TYPES
    assert taken & core_records.APPLIED == core_records.APPLIED_HERE == {int(RT.ID_INDEX)}
    least = plausibility.least_sizes(16)
    assert all(take[t] == least[t] for t in taken)


# ----------------------------------------------------- the same bytes out
@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_same_stats_as_pure_on_samples(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _assert_same(path, monkeypatch)


def _walk_split(path: Path | str) -> tuple[bool, list, list]:
    """(whether the compiled walk applied, what each C stretch counted, the
    records the Python walker took)."""
    stretches: list = []
    taken: list = []
    with perfdata.open(str(path)) as pf:
        applied = core_records.walk_counting(pf, stretches.append, taken.append)
    return applied, stretches, taken


def test_compiled_walk_counts_the_file_mode_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    """It is the C that counts (not a silent fall-back): on every bundled
    file-mode recording without compressed data, all records but the last;
    with it, the records before the first COMPRESSED."""
    monkeypatch.delenv("PERFDATA_CORE", raising=False)
    counted = 0
    for path in SAMPLES:
        applied, stretches, taken = _walk_split(path)
        with perfdata.open(str(path)) as pf:
            if pf.is_pipe or pf.is_directory:
                assert not applied
                continue
            total = sum(1 for _ in pf.records(order="file", include_compressed=True))
        assert applied, path
        assert sum(c.total for c in stretches) + len(taken) == total
        if "zstd" in path.name:
            assert RT.COMPRESSED in {rec.type for rec in taken}
        else:
            assert len(taken) == 1, path
            counted += 1
    assert counted >= 20


def test_pure_env_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFDATA_CORE", "pure")
    assert _walk_split(REPO / "samples" / "two_events.data") == (False, [], [])
    with perfdata.open(str(REPO / "samples" / "two_events.data")) as pf:
        assert core_records.why_not(pf) == "PERFDATA_CORE=pure"


@pytest.mark.parametrize("path", REGRESSIONS, ids=lambda p: p.name)
def test_same_stats_as_pure_on_regressions(path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _assert_same(path, monkeypatch)


def test_same_stats_as_pure_on_corpus(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(p for p in (corpus / "perfdata").iterdir() if p.is_file())
    assert files
    for path in files:
        _assert_same(path, monkeypatch)


def _records_of(path: Path) -> list[tuple[int, int, int]]:
    with perfdata.open(str(path)) as pf:
        return [(rec.offset, rec.size, rec.type)
                for rec in pf.records(order="file", include_compressed=True)
                if not rec.compressed]


def _mutate(data: bytes, recs: list[tuple[int, int, int]], rng: random.Random) -> bytes:
    """One to three edits: a size set to a hostile value, a type changed, a
    bit flipped, eight bytes of garbage, or the file cut inside a record."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        off, size, _ = rng.choice(recs)
        kind = rng.random()
        if kind < 0.3:
            value = rng.choice([0, 1, 7, 8, 9, 16, size - 8, size + 8, 2 * size, 0xFFFF,
                                rng.randint(0, 0xFFFF)])
            struct.pack_into("<H", buf, off + 6, value & 0xFFFF)
        elif kind < 0.5:
            struct.pack_into("<I", buf, off, rng.choice(
                [0, 3, 9, 10, 13, 68, 69, 81, 200, rng.randint(0, (1 << 32) - 1)]))
        elif kind < 0.7:
            buf[rng.randrange(off, off + size)] ^= 1 << rng.randrange(8)
        elif kind < 0.85:
            at = rng.randrange(off, off + size)
            buf[at:at + 8] = bytes(rng.randrange(256) for _ in range(8))
        else:
            del buf[rng.randrange(off, off + size):]
            break
    return bytes(buf)


@pytest.mark.parametrize("name", ["two_events.data", "threads.fp.data", "plt_loop.fp.data",
                                  "tracepoint.data", "zstd.data", "buildid_mmap.data"])
def test_same_stats_as_pure_on_mutated_recordings(name: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Damaged files: the Python walk takes over where the C stops, with the
    state it would have there, and skips and warns as it would alone."""
    source = REPO / "samples" / name
    data = source.read_bytes()
    recs = _records_of(source)
    rng = random.Random(name)
    path = tmp_path / "mutated.data"
    for _ in range(60):
        path.write_bytes(_mutate(data, recs, rng))
        _assert_same(path, monkeypatch)


def test_walk_state_is_handed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SAMPLE far larger than every one before it (its size swallowing the
    records after it, followed by a sane header) is suspect only after 16
    samples: the Python walk that takes over from the C must know how many
    it saw and their largest size, or it takes the swallowed records as one."""
    source = REPO / "samples" / "plt_loop.fp.data"
    recs = _records_of(source)
    data = bytearray(source.read_bytes())
    seen = largest = 0
    for k, (off, size, rtype) in enumerate(recs):
        if rtype != RT.SAMPLE:
            continue
        seen += 1
        largest = max(largest, size)
        if seen < 40:
            continue
        # swallow the next records until past twice the largest (+64)
        total, j = size, k + 1
        while total <= 2 * largest + 64 and j < len(recs) - 2:
            total += recs[j][1]
            j += 1
        if total <= 0xFFF8 and recs[j][2] == RT.SAMPLE:
            struct.pack_into("<H", data, off + 6, total)
            break
    else:
        pytest.fail("no SAMPLE to enlarge")
    path = tmp_path / "swallow.data"
    path.write_bytes(bytes(data))
    pure = _stats(path, True, monkeypatch)
    assert "overlaps the next records" in pure[2] or "skipped" in pure[1]
    assert _stats(path, False, monkeypatch) == pure
    # The C stopped at that SAMPLE, the Python walk judged it and paused
    # after it, and the C went on.
    monkeypatch.delenv("PERFDATA_CORE", raising=False)
    stretches: list = []
    taken: list = []
    with perfdata.open(str(path)) as pf:
        assert core_records.walk_counting(pf, stretches.append, taken.append)
        assert [(offset, count) for _, offset, count, _ in pf.skipped] == [(off, size)]
    assert len(stretches) >= 2 and stretches[-1].total > 100 and len(taken) < 10


# ------------------------------------------------------------- walk_block
def _walk_args(nattrs: int = 1) -> tuple[array, array, array, array, array]:
    values = dict.fromkeys(_records.PARAM_NAMES, 0)
    values.update(little=1, misc_off=4, size_off=6, header_size=8, align_mask=7,
                  data_end=1 << 40, sample_id_pos=-1, trailer_id_pos=-1, single=0,
                  nattrs=nattrs, big_after=16, SAMPLE=9, LOST_SAMPLES=13, AUXTRACE_INFO=70,
                  FINISHED_ROUND=68, FINISHED_INIT=82, USER_TYPE_START=64)
    params = array("q", [values[n] for n in _records.PARAM_NAMES])
    tables = core_records.walk_tables(0, _records.NTYPES)
    state = array("Q", bytes(8 * (len(_records.STATE_NAMES) + _records.NTYPES + 2 * nattrs)))
    return params, tables, array("Q"), array("q"), state


def test_walk_block_refuses_bad_arguments() -> None:
    params, tables, ids, idx, state = _walk_args()
    block = bytes(64)
    with pytest.raises(ValueError):
        _records.walk_block(block, 0, params[:-1], tables, ids, idx, state)
    with pytest.raises(ValueError):
        _records.walk_block(block, 0, params, tables[:-1], ids, idx, state)
    with pytest.raises(ValueError):       # state too short for the events
        _records.walk_block(block, 0, params, tables, ids, idx, state[:-1])
    with pytest.raises(ValueError):       # ids not sorted
        _records.walk_block(block, 0, params, tables, array("Q", [5, 3]),
                            array("q", [0, 0]), state)
    with pytest.raises(ValueError):       # an id of an event that is not there
        _records.walk_block(block, 0, params, tables, array("Q", [3]), array("q", [1]), state)
    bad = array("q", params)
    bad[_records.PARAM_NAMES.index("size_off")] = 7     # a u16 past the header
    with pytest.raises(ValueError):
        _records.walk_block(block, 0, bad, tables, ids, idx, state)
    with pytest.raises(BufferError):      # read-only state
        _records.walk_block(block, 0, params, tables, ids, idx, bytes(state))


def test_walk_block_counts_and_stops() -> None:
    params, tables, ids, idx, state = _walk_args()
    sample = struct.pack("<IHH", 9, 0, 16) + bytes(8)
    round_ = struct.pack("<IHH", 68, 0, 8)
    block = sample * 3 + round_ + sample + struct.pack("<IHH", 999, 0, 8)
    used, why = _records.walk_block(block, 0, params, tables, ids, idx, state)
    # four samples and a round taken; the last sample is followed by an
    # unknown type: handed back there
    assert (used, why) == (16 * 3 + 8, _records.HANDBACK)
    nfixed = len(_records.STATE_NAMES)
    assert state[nfixed + 9] == 3 and state[nfixed + 68] == 1
    assert state[_records.STATE_NAMES.index("prev")] - 1 == 16 * 3
    assert state[nfixed + _records.NTYPES] == 3          # event 0's samples
    # a block that ends before the next record's following header: MORE
    state2 = _walk_args()[4]
    used, why = _records.walk_block(sample * 2, 0, params, tables, ids, idx, state2)
    assert (used, why) == (16, _records.MORE)


def test_walk_block_survives_any_bytes() -> None:
    """Random and hostile blocks: never a read outside (the sanitizer run,
    tools/fuzz-compiled.sh, checks that), always an answer inside the block."""
    rng = random.Random(7)
    params, tables, ids, idx, _ = _walk_args(nattrs=2)
    ids, idx = array("Q", [1, 2, 1 << 63]), array("q", [0, 1, 1])
    params[_records.PARAM_NAMES.index("single")] = -1
    params[_records.PARAM_NAMES.index("sample_id_pos")] = 1
    params[_records.PARAM_NAMES.index("trailer_id_pos")] = 1
    params[_records.PARAM_NAMES.index("sample_id_all")] = 1
    for n in range(3000):
        size = rng.choice([0, 1, 7, 8, 9, 15, 16, 64, 300, 4096])
        words = [rng.choice([0, 8, 9, 13, 68, 0xFFFF, 1 << 63, rng.getrandbits(64)])
                 for _ in range((size + 7) // 8)]
        block = struct.pack("<%dQ" % len(words), *words)[:size]
        state = array("Q", bytes(8 * (len(_records.STATE_NAMES) + _records.NTYPES + 4)))
        used, why = _records.walk_block(memoryview(block), n, params, tables, ids, idx, state)
        assert 0 <= used <= len(block)
        assert why in (_records.MORE, _records.HANDBACK, _records.APPLY)


# ------------------------------------------------------------ the sanitizers
def _asan_runtime() -> str | None:
    gcc = shutil.which("gcc")
    if gcc is None:
        return None
    path = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True,
                          text=True).stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


@pytest.mark.skipif(_asan_runtime() is None, reason="no gcc with AddressSanitizer here")
def test_fuzz_compiled_script_runs(tmp_path: Path) -> None:
    """tools/fuzz-compiled.sh, a short run: the extensions build with the
    sanitizers, the canary's read past its buffer is reported, mutated
    inputs go through, 0 findings."""
    env = dict(os.environ, FUZZ_COMPILED_WHOLE="0", TMPDIR=str(tmp_path))
    env.pop("PERFDATA_CORE", None)
    got = subprocess.run([str(REPO / "tools" / "fuzz-compiled.sh"), "40", "1", "3"],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:]
    assert "canary reported (heap-buffer-overflow)" in got.stdout
    assert "fuzz-compiled: 40 mutated inputs" in got.stdout and "findings: 0" in got.stdout
