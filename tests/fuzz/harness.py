"""Structure-aware fuzzing of the whole perfdata pipeline.

Seeds are the bundled recordings (samples/*.data) and the shared corpus, cut
to their first records so that one input runs in milliseconds.  Each seed is
analysed once with the reader: where the header fields, the attrs, the
feature section table, every record and the count fields inside the samples
(callchain nr, branch nr, read nr, regs abi, stack sizes, raw size) are.
Mutations are hypothesis strategies over those places, so an input is a seed
plus a few edits that a shrinker can take apart.

`run_pipeline(path)` is the oracle: perfdata.open -> records in time order ->
every record parsed -> SampleSymbolizer (with a Symbolizer that can only read
samples/buildids) -> ScriptFormatter; then `stats`, `dump --json` and
`header -I` through cli.main with captured output.  Bad input may end in a
PerfDataError (exit status 2); anything else raised is a failure.

Used by tests/fuzz/test_fuzz_short.py (the short run in the test suite) and
tools/fuzz_long.py (the long run).
"""
import contextlib
import io
import os
import struct
import zlib
from pathlib import Path

import construct as cs
from hypothesis import strategies as st

import perfdata
from perfdata.format.constants import RecordType as RT, SampleType as ST
from perfdata.format.errors import PerfDataError
from perfdata.format.constants import USER_TYPE_START
from perfdata.format.sample import sample_schema

REPO = Path(__file__).resolve().parents[2]

SAMPLES = REPO / "samples"
BUILDIDS = SAMPLES / "buildids"
REGRESSIONS = REPO / "tests" / "regressions"


def corpus_dir():
    env = os.environ.get("PERFDATA_CORPUS")
    base = Path(env) if env else REPO.parent / "shared" / "corpus"
    sub = base / "perfdata"
    return sub if sub.is_dir() else base


# ------------------------------------------------------------------ seeds
class Seed:
    """A (cut) seed file and the places worth mutating in it."""

    def __init__(self, name, data):
        self.name = name
        self.data = bytes(data)
        self.little = True
        self.pipe = False
        self.data_start = self.data_end = None
        self.header_fields = []     # (offset, width)
        self.attr_fields = []       # (offset, width)
        self.feature_entries = []   # offset of a {offset, size} entry of the feature table
        self.feature_sections = []  # (offset, size)
        self.records = []           # (offset, size, type) of top-level records
        self.counts = []            # (offset, width, record offset, record size)
        self.strings = []           # (start, end) of a string area
        self.zstd = []              # (offset, size) of a COMPRESSED payload

    @property
    def u(self):
        return "<" if self.little else ">"

    def __repr__(self):
        return "<Seed %s %d bytes>" % (self.name, len(self.data))


def _sample_fields(ea, body):
    """(name, start, end) of each top-level field of a SAMPLE body."""
    schema = sample_schema(ea.sample_type, ea.read_format, ea.attr.get("branch_sample_type", 0),
                           ea.attr.get("sample_regs_user", 0), ea.attr.get("sample_regs_intr", 0),
                           ea.little)
    out, pos = [], 0
    for sub in schema.subcons:
        probe = cs.Struct("v" / sub, "end" / cs.Tell)
        try:
            end = pos + probe.parse(bytes(body[pos:])).end
        except (cs.ConstructError, ValueError):
            break
        out.append((sub.name, pos, end))
        pos = end
    return out


_COUNT_FIELDS = {"callchain": 8, "branch_stack": 8, "stack_user": 8, "aux": 8, "raw": 4,
                 "regs_user": 8, "regs_intr": 8}


def analyse(name, data):
    """A Seed for these bytes, found with the reader (None if it does not open)."""
    import tempfile
    seed = Seed(name, data)
    with tempfile.NamedTemporaryFile(suffix=".data") as tmp:
        tmp.write(data)
        tmp.flush()
        try:
            pf = perfdata.open(tmp.name)
        except PerfDataError:
            return None
        with pf:
            seed.little, seed.pipe = pf.little, pf.is_pipe
            if not pf.is_pipe:
                seed.header_fields = [(o, 8) for o in range(16, 72, 8)] + [(72, 8), (80, 8)]
                seed.data_start, seed.data_end = pf.data_range
                stride = pf.header["attr_size"]
                aoff = pf.header["attrs"]["offset"]
                for i in range(len(pf.attrs)):
                    base = aoff + i * stride
                    # size, sample_type, read_format, flags, regs_user, stack_user, ids
                    seed.attr_fields += [(base + 4, 4), (base + 24, 8), (base + 32, 8),
                                         (base + 40, 8), (base + 88, 8), (base + 96, 4),
                                         (base + stride - 16, 8), (base + stride - 8, 8)]
                for n, fid in enumerate(sorted(pf.features)):
                    seed.feature_entries.append(seed.data_end + 16 * n)
                    seed.feature_sections.append(pf.features[fid])
            try:
                for rec in pf.records(order="file", include_compressed=True):
                    if not rec.compressed:
                        seed.records.append((rec.offset, rec.size, rec.type))
                    else:
                        continue
                    _note_fields(seed, pf, rec)
            except PerfDataError:
                pass
    return seed


def _note_fields(seed, pf, rec):
    body_at = rec.offset + 8
    end = rec.offset + rec.size
    if rec.type == RT.SAMPLE and rec.attr is not None:
        for fname, start, stop in _sample_fields(rec.attr, rec.body):
            if fname in _COUNT_FIELDS:
                seed.counts.append((body_at + start, _COUNT_FIELDS[fname], rec.offset, rec.size))
            if fname == "read" and rec.attr.read_format & 8:     # PERF_FORMAT_GROUP: nr first
                seed.counts.append((body_at + start, 8, rec.offset, rec.size))
            if fname == "stack_user" and stop - start >= 16:     # dyn_size last
                seed.counts.append((body_at + stop - 8, 8, rec.offset, rec.size))
    elif rec.type == RT.COMM:
        seed.strings.append((body_at + 8, end))
    elif rec.type == RT.MMAP:
        seed.strings.append((body_at + 32, end))
    elif rec.type == RT.MMAP2:
        seed.strings.append((body_at + 64, end))
    elif rec.type == RT.COMPRESSED:
        seed.zstd.append((body_at, rec.size - 8))
    elif rec.type == RT.COMPRESSED2:
        seed.zstd.append((body_at + 8, rec.size - 16))
    elif rec.type in (RT.HEADER_ATTR, RT.HEADER_FEATURE, RT.HEADER_BUILD_ID, RT.ID_INDEX,
                      RT.HEADER_EVENT_TYPE, RT.EVENT_UPDATE, RT.HEADER_TRACING_DATA):
        for off in range(body_at, min(end, body_at + 32), 4):
            seed.counts.append((off, 4, rec.offset, rec.size))


def cut(data, samples=16, others=24):
    """A small file of the same kind: header, attrs, perf's own records, the
    first `others` kernel records and the first `samples` SAMPLEs (the first
    COMPRESSED records, as one zstd stream runs through them), then the
    feature sections, offsets fixed."""
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".data") as tmp:
        tmp.write(data)
        tmp.flush()
        try:
            pf = perfdata.open(tmp.name)
        except PerfDataError:
            return data
        with pf:
            keep, nsamples, nothers, ncomp, total = [], 0, 0, 0, 0
            try:
                for rec in pf.records(order="file", include_compressed=True):
                    if rec.compressed:
                        continue
                    total += 1
                    if rec.type in (RT.COMPRESSED, RT.COMPRESSED2):
                        if ncomp == len([k for k in keep if k[2]]) and ncomp < 6:
                            keep.append((rec.offset, rec.size, True))
                        ncomp += 1
                    elif rec.type == RT.SAMPLE:
                        if nsamples < samples:
                            keep.append((rec.offset, rec.size, False))
                        nsamples += 1
                    elif rec.type < USER_TYPE_START or rec.type == RT.FINISHED_ROUND:
                        if nothers < others:
                            keep.append((rec.offset, rec.size, False))
                        nothers += 1
                    elif rec.type not in (RT.AUXTRACE, RT.HEADER_TRACING_DATA):
                        keep.append((rec.offset, rec.size, False))
                    elif len(keep) == total - 1:
                        keep.append((rec.offset, rec.size, False))
            except PerfDataError:
                pass
            if len(keep) == total:
                return data
            body = b"".join(data[o:o + s] for o, s, _ in keep)
            start, end = pf.data_range
            if pf.is_pipe:
                return data[:start] + body
            return splice(data, pf.little, end, start, end, body,
                          feature_table=end if pf.features else None,
                          nfeatures=len(pf.features))


def splice(data, little, data_end, start, stop, new, feature_table=None, nfeatures=0):
    """Replace data[start:stop] (inside the data section of a file-mode
    perf.data) by `new`, and fix the header's data size and the offsets of
    what lies after (feature sections, attr ids)."""
    u = "<" if little else ">"
    delta = len(new) - (stop - start)
    out = bytearray(data[:start] + new + data[stop:])
    if data[:8] not in (b"PERFILE2", b"2ELIFREP", b"PERFFILE") or len(out) < 104:
        return bytes(out)
    data_off, data_size = struct.unpack_from(u + "QQ", out, 40)
    struct.pack_into(u + "Q", out, 48, max(0, data_size + delta) & ((1 << 64) - 1))
    if feature_table is not None:
        table = feature_table + delta
        for n in range(nfeatures):
            pos = table + 16 * n
            if pos + 16 > len(out):
                break
            off = struct.unpack_from(u + "Q", out, pos)[0]
            if off >= stop:       # (an earlier edit may have made it anything)
                struct.pack_into(u + "Q", out, pos, (off + delta) & ((1 << 64) - 1))
    return bytes(out)


_SEEDS = None
MAX_SEED_BYTES = 400_000


def seed_files():
    files = sorted(p for p in SAMPLES.glob("*.data") if p.is_file())
    corpus = corpus_dir()
    if corpus.is_dir():
        files += sorted(p for p in corpus.iterdir()
                        if p.is_file() and p.stat().st_size <= MAX_SEED_BYTES)
    return files


def load_seeds():
    """Every seed, cut and analysed (cached)."""
    global _SEEDS
    if _SEEDS is None:
        seeds = []
        for path in seed_files():
            data = path.read_bytes()
            seed = analyse(path.name, cut(data))
            if seed is not None and seed.records:
                seeds.append(seed)
        _SEEDS = seeds
    return _SEEDS


# -------------------------------------------------------------- mutations
INTERESTING = (0, 1, 2, 7, 8, 9, 15, 16, 63, 64, 127, 128, 255, 256, 0x7FFF, 0x8000, 0xFFFF,
               0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, 1 << 40, 1 << 60,
               (1 << 62), (1 << 63) - 1, 1 << 63, (1 << 64) - 1)


def _int_for(width):
    top = (1 << (8 * width)) - 1
    return st.one_of(st.sampled_from([v & top for v in INTERESTING]),
                     st.integers(0, top))


def _put(buf, little, offset, width, value):
    if offset < 0 or offset + width > len(buf):
        return
    fmt = {1: "B", 2: "H", 4: "I", 8: "Q"}[width]
    struct.pack_into(("<" if little else ">") + fmt, buf, offset, value & ((1 << (8 * width)) - 1))


_BOMB = None


def zstd_bomb(total=96 << 20):
    """A zstd frame of `total` zero bytes (a few KiB)."""
    global _BOMB
    if _BOMB is None:
        import zstandard
        cobj = zstandard.ZstdCompressor(level=1).compressobj()
        block = bytes(1 << 20)
        parts = [cobj.compress(block) for _ in range(total >> 20)]
        parts.append(cobj.flush())
        _BOMB = b"".join(parts)
    return _BOMB


@st.composite
def mutation(draw, seed):
    """One edit of a seed: (kind, function bytearray -> bytearray)."""
    kinds = ["byte", "record_size", "record_type", "truncate", "splice_garbage"]
    if seed.header_fields:
        kinds.append("header")
    if seed.attr_fields:
        kinds.append("attr")
    if seed.feature_entries:
        kinds += ["feature_entry", "feature_body"]
    if seed.counts:
        kinds += ["count", "count"]
    if seed.strings:
        kinds.append("string")
    if seed.zstd:
        # a bomb costs a 64 MiB decompression per stage: rarer than the rest
        kinds += ["zstd", "zstd", "zstd", "zstd_bomb"]
    kind = draw(st.sampled_from(kinds))
    little = seed.little

    if kind == "header":
        off, width = draw(st.sampled_from(seed.header_fields))
        value = draw(_int_for(width))
        return kind, lambda b: _put(b, little, off, width, value)
    if kind == "attr":
        off, width = draw(st.sampled_from(seed.attr_fields))
        value = draw(_int_for(width))
        return kind, lambda b: _put(b, little, off, width, value)
    if kind == "feature_entry":
        entry = draw(st.sampled_from(seed.feature_entries))
        which = draw(st.sampled_from((0, 8)))
        value = draw(st.one_of(_int_for(8), st.integers(0, len(seed.data) + 64)))
        return kind, lambda b: _put(b, little, entry + which, 8, value)
    if kind == "feature_body":
        off, size = draw(st.sampled_from(seed.feature_sections))
        at = off + draw(st.integers(0, max(0, min(size, 256) - 4)))
        how = draw(st.sampled_from(("u32", "noterm")))
        if how == "u32":
            value = draw(_int_for(4))
            return kind, lambda b: _put(b, little, at, 4, value)

        def noterm(b, off=off, size=size):
            # Strings without a terminator: fill the section with letters.
            end = min(len(b), off + size)
            b[at:end] = b"A" * max(0, end - at)
        return kind, noterm
    if kind == "count":
        off, width, roff, rsize = draw(st.sampled_from(seed.counts))
        value = draw(st.one_of(_int_for(width), st.integers(0, rsize // 8 + 2),
                               st.sampled_from([rsize, rsize // 8, rsize // 8 + 1])))
        return kind, lambda b: _put(b, little, off, width, value)
    if kind == "string":
        start, end = draw(st.sampled_from(seed.strings))
        fill = draw(st.sampled_from((b"A", b"/", b"\xff", b".")))

        def noterm(b):
            b[start:end] = fill * (end - start)
        return kind, noterm
    if kind == "zstd":
        off, size = draw(st.sampled_from(seed.zstd))
        at = off + draw(st.integers(0, max(0, size - 1)))
        value = draw(st.integers(0, 255))
        return kind, lambda b: _put(b, little, at, 1, value)
    if kind == "zstd_bomb":
        off, size = draw(st.sampled_from(seed.zstd))

        def bomb(b):
            frame = zstd_bomb()
            n = min(size, len(frame))
            b[off:off + n] = frame[:n]
        return kind, bomb
    if kind == "record_size":
        roff, rsize, _ = draw(st.sampled_from(seed.records))
        value = draw(st.one_of(st.sampled_from([0, 1, 4, 7, 8, 9, rsize - 1, rsize + 1,
                                                rsize + 8, 0xFFFF, rsize * 2]),
                               st.integers(0, 0xFFFF)))
        return kind, lambda b: _put(b, little, roff + 6, 2, value)
    if kind == "record_type":
        roff, _, _ = draw(st.sampled_from(seed.records))
        value = draw(st.one_of(st.sampled_from([int(t) for t in RT]), st.integers(0, 0xFFFFFFFF)))
        misc = draw(st.one_of(st.none(), st.integers(0, 0xFFFF)))

        def retype(b):
            _put(b, little, roff, 4, value)
            if misc is not None:
                _put(b, little, roff + 4, 2, misc)
        return kind, retype
    if kind == "truncate":
        roff, rsize, _ = draw(st.sampled_from(seed.records))
        at = roff + draw(st.integers(0, rsize))

        def truncate(b):
            del b[at:]
        return kind, truncate
    if kind == "splice_garbage":
        roff, rsize, _ = draw(st.sampled_from(seed.records))
        garbage = draw(st.binary(min_size=0, max_size=64))
        remove = draw(st.integers(0, rsize))

        def garbage_in(b):
            if seed.pipe or seed.data_end is None:
                b[roff:roff + remove] = garbage
                return
            new = splice(bytes(b), little, seed.data_end, roff, roff + remove, garbage,
                         feature_table=seed.data_end if seed.feature_entries else None,
                         nfeatures=len(seed.feature_entries))
            b[:] = new
        return kind, garbage_in
    # kind == "byte"
    at = draw(st.integers(0, len(seed.data) - 1))
    value = draw(st.integers(0, 255))
    return kind, lambda b: _put(b, little, at, 1, value)


class FuzzCase(tuple):
    """(seed name, [mutation kinds], bytes), printed short."""

    def __repr__(self):
        name, kinds, data = self
        return "<FuzzCase %s %s: %d bytes, saved as %s>" % (name, "+".join(kinds), len(data),
                                                            input_name(data))


@st.composite
def fuzz_input(draw, seeds=None):
    """A FuzzCase: a seed and 1-4 edits of it."""
    seeds = seeds if seeds is not None else load_seeds()
    seed = draw(st.sampled_from(seeds))
    edits = draw(st.lists(mutation(seed), min_size=1, max_size=4))
    buf = bytearray(seed.data)
    for _, edit in edits:
        edit(buf)
    return FuzzCase((seed.name, [k for k, _ in edits], bytes(buf)))


# ----------------------------------------------------------------- oracle
def make_symbolizer():
    """A Symbolizer that can read nothing but samples/buildids."""
    from symbolize import DebugInfoLocator, Symbolizer, SymbolizerOptions
    from symbolize.symbols.kallsyms import KernelSymbols
    locator = DebugInfoLocator(debug_dirs=[str(BUILDIDS)], symfs=str(BUILDIDS),
                               buildid_dir=None, system_debug=None)
    return Symbolizer(locator, SymbolizerOptions(inline=True, kallsyms=KernelSymbols()))


CLI_COMMANDS = (("stats",), ("dump", "--json"), ("header", "-I"))


def run_pipeline(path, cli=True, timings=None):
    """Everything perfdata does with one file.  Returns a short outcome string;
    raises on a failure (anything but PerfDataError, or a CLI exit status
    other than 0 and 2, or a traceback printed).  `timings`, a dict, gets the
    CPU seconds each stage took (records, script, stats, dump, header): a
    loop that never ends spends CPU, and a loaded machine's waits do not
    count against the stage)."""
    import time
    from perfdata.resolve.symbolized import SampleSymbolizer
    from perfdata.views.script_formatter import ScriptFormatter
    timings = {} if timings is None else timings
    outcome = []
    t0 = time.process_time()
    try:
        with perfdata.open(str(path)) as pf:
            for rec in pf.records():
                try:
                    rec.parse()
                except PerfDataError:
                    pass
        outcome.append("records")
    except PerfDataError:
        outcome.append("records-error")
    t1 = time.process_time()
    timings["records"] = t1 - t0
    try:
        with perfdata.open(str(path)) as pf:
            fmt = ScriptFormatter(pf)
            out = io.StringIO()
            for sample in SampleSymbolizer(pf, make_symbolizer()):
                out.write(fmt.format(sample))
        outcome.append("script")
    except PerfDataError:
        outcome.append("script-error")
    timings["script"] = time.process_time() - t1
    if cli:
        import cli as cli_module
        for command in CLI_COMMANDS:
            t0 = time.process_time()
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = cli_module.main(list(command) + [str(path)])
            timings[command[0]] = time.process_time() - t0
            if rc not in (0, 2) or "Traceback" in err.getvalue():
                raise AssertionError("%s exited %s: %s" % (command, rc, err.getvalue()[-2000:]))
            if rc == 2 and not err.getvalue().splitlines()[-1].startswith(
                    "perfdata: error: %s" % path):
                raise AssertionError("%s: error line %r" % (command, err.getvalue()[-300:]))
            outcome.append("%s=%d" % (command[0], rc))
    return " ".join(outcome)


def input_name(data):
    return "fuzz-%08x.data" % (zlib.crc32(data) & 0xFFFFFFFF)


def save_failure(data, directory=REGRESSIONS):
    """Keep a failing input under tests/regressions/ (replayed by test_fuzz_short)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / input_name(data)
    if not path.exists():
        path.write_bytes(data)
    return path


def regression_files():
    if not REGRESSIONS.is_dir():
        return []
    return sorted(p for p in REGRESSIONS.iterdir() if p.name.startswith("fuzz-"))
