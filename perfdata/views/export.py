"""`perfdata export`: the profile in speedscope's JSON format or as pprof.

`--format pprof`: pprof's profile.proto (github.com/google/pprof,
proto/profile.proto), gzip-compressed, encoded with the stdlib (no protobuf
package): sample types `samples/count` and `<event>/<unit>` (the period;
`cpu/nanoseconds` for the software clock events), one Sample per distinct
(stack, pid, tid) with labels `pid`, `tid` (numbers) and `comm`, leaf first,
one Location per printed frame (its name and dso) with one Line and Function
(the function's file is the dso), Mappings by dso with their build-ids.

`--format speedscope`:

https://www.speedscope.app/file-format-schema.json (speedscope's
src/lib/file-format-spec.ts): a `shared.frames` table and one `sampled`
profile per thread (per event and thread when the file has several events
with samples).  Each input sample is one entry of `samples` (its stack as
frame indices, outermost call first) with its weight at the same index of
`weights`: the sample's period by default (`unit` nanoseconds for the
software clock events, whose period is in ns, else none), or 1 with
`--weight samples`.  Frame names are the folded-stack names (perf's short
C++ names, `[dso]` for a frame without a symbol), `file` the dso path.
"""
import json
import sys

from .collapse import CollapseOptions, frame_names, open_output
from .options import SampleRun, add_input_argument, add_symbolize_options

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
_NS_EVENTS = ("cpu-clock", "task-clock")


def _unit(event, weight):
    if weight == "samples":
        return "none"
    base = event.name.split(":", 1)[0]
    return "nanoseconds" if base in _NS_EVENTS else "none"


class SpeedscopeBuilder:
    def __init__(self, weight="period", name=None):
        self.weight = weight
        self.name = name
        self.frames = []
        self.frame_index = {}
        self.profiles = {}      # (event index, pid, tid) -> dict
        self.order = []
        self.events = {}
        self._opts = CollapseOptions()
        self._stack_cache = {}

    def _frame(self, name, file, kernel):
        key = (name, file)
        idx = self.frame_index.get(key)
        if idx is None:
            idx = self.frame_index[key] = len(self.frames)
            entry = {"name": name}
            if file:
                entry["file"] = file
            self.frames.append(entry)
        return idx

    def _stack(self, frames):
        hit = self._stack_cache.get(id(frames))
        if hit is not None and hit[0] is frames:
            return hit[1]
        stack = []
        for fr in reversed(frames):
            # The dso as the profile names it (not where its copy was found).
            file = fr.dso if fr.dso and not fr.dso.startswith("[") else None
            for name in frame_names(fr, self._opts):
                stack.append(self._frame(name, file, fr.kernel))
        if len(self._stack_cache) > 100000:
            self._stack_cache.clear()
        self._stack_cache[id(frames)] = (frames, stack)
        return stack

    def add(self, sample):
        key = (sample.event.index, sample.pid, sample.tid)
        prof = self.profiles.get(key)
        if prof is None:
            prof = self.profiles[key] = {"comm": sample.comm, "event": sample.event,
                                         "samples": [], "weights": [],
                                         "first": sample.time, "last": sample.time}
            self.order.append(key)
            self.events[sample.event.index] = sample.event
        prof["comm"] = sample.comm      # the thread's latest name
        prof["samples"].append(self._stack(sample.frames))
        w = 1 if self.weight == "samples" else (sample.period or 0)
        prof["weights"].append(w)
        prof["last"] = sample.time

    def document(self):
        profiles = []
        several_events = len(self.events) > 1
        keys = sorted(self.order, key=lambda k: (k[0], k[1], k[2]))
        for key in keys:
            prof = self.profiles[key]
            event = prof["event"]
            name = "%s (%d/%d)" % (prof["comm"], key[1], key[2])
            if several_events:
                name += " " + event.name
            total = sum(prof["weights"])
            profiles.append({
                "type": "sampled",
                "name": name,
                "unit": _unit(event, self.weight),
                "startValue": 0,
                "endValue": total,
                "samples": prof["samples"],
                "weights": prof["weights"],
            })
        doc = {
            "$schema": SCHEMA,
            "shared": {"frames": self.frames},
            "profiles": profiles,
            "activeProfileIndex": 0,
            "exporter": _exporter(),
        }
        if self.name:
            doc["name"] = self.name
        return doc


def _exporter():
    """speedscope's recommended "name@version"."""
    try:
        from importlib.metadata import version
        return "perfdata@" + version("perfdata")
    except Exception:
        return "perfdata"


def run(args, out):
    import os
    if args.format == "pprof":
        return run_pprof(args, out)
    stream, close = open_output(args.output, out)
    if stream is None:
        sys.exit(2)
    builder = SpeedscopeBuilder(args.weight, name=os.path.basename(str(args.file)))
    for sample in SampleRun(args, "export"):
        builder.add(sample)
    doc = builder.document()
    if not doc["profiles"]:
        sys.stderr.write("perfdata: note: no samples; the profile is empty\n")
    try:
        json.dump(doc, stream, separators=(",", ":"))
        stream.write("\n")
    finally:
        if close:
            stream.close()



def register(subparsers):
    p = subparsers.add_parser("export", help="the profile in another tool's format (speedscope)")
    add_input_argument(p)
    p.add_argument("-o", "--output", help="write here (default: standard output)")
    p.add_argument("--format", default="speedscope", choices=("speedscope", "pprof"),
                   help="output format: speedscope (JSON) or pprof (gzipped profile.proto)")
    p.add_argument("--weight", choices=("period", "samples"), default="period",
                   help="sample weight: its period (default) or 1")
    add_symbolize_options(p)
    p.set_defaults(func=run)


# ------------------------------------------------------------------- pprof
def _varint(n, out):
    n &= (1 << 64) - 1          # int64 negatives as two's complement
    while True:
        b = n & 0x7f
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return


def _field_varint(num, value, out):
    if value:
        _varint(num << 3, out)
        _varint(value, out)


def _field_bytes(num, data, out):
    _varint((num << 3) | 2, out)
    _varint(len(data), out)
    out.extend(data)


def _field_packed(num, values, out):
    if values:
        body = bytearray()
        for v in values:
            _varint(v, body)
        _field_bytes(num, body, out)


class PprofBuilder:
    """Aggregates symbolized samples into pprof's profile.proto."""

    def __init__(self):
        self.strings = {"": 0}
        self.functions = {}      # (name, file) -> id
        self.locations = {}      # (name, dso) -> (id, function id, mapping id)
        self.mappings = {}       # dso -> (id, build-id)
        self.samples = {}        # (loc ids, pid, tid, comm) -> [count, period]
        self.event = None
        self._opts = CollapseOptions()
        self._stack_cache = {}
        self.first_time = None
        self.last_time = None

    def _s(self, text):
        idx = self.strings.get(text)
        if idx is None:
            idx = self.strings[text] = len(self.strings)
        return idx

    def _mapping(self, fr):
        dso = fr.dso or "[unknown]"
        hit = self.mappings.get(dso)
        if hit is None:
            hit = self.mappings[dso] = (len(self.mappings) + 1, fr.build_id)
        return hit[0]

    def _location(self, name, fr):
        dso = fr.dso or "[unknown]"
        key = (name, dso)
        hit = self.locations.get(key)
        if hit is None:
            fkey = (name, dso)
            fid = self.functions.get(fkey)
            if fid is None:
                fid = self.functions[fkey] = len(self.functions) + 1
            mid = self._mapping(fr) if dso != "[unknown]" else 0
            hit = self.locations[key] = (len(self.locations) + 1, fid, mid)
        return hit[0]

    def _stack(self, frames):
        hit = self._stack_cache.get(id(frames))
        if hit is not None and hit[0] is frames:
            return hit[1]
        ids = []
        for fr in frames:                       # leaf first, as pprof wants
            for name in reversed(frame_names(fr, self._opts)):
                ids.append(self._location(name, fr))
        ids = tuple(ids)
        if len(self._stack_cache) > 100000:
            self._stack_cache.clear()
        self._stack_cache[id(frames)] = (frames, ids)
        return ids

    def add(self, sample):
        if self.event is None:
            self.event = sample.event
        elif sample.event.index != self.event.index:
            return False
        key = (self._stack(sample.frames), sample.pid, sample.tid, sample.comm)
        acc = self.samples.get(key)
        if acc is None:
            acc = self.samples[key] = [0, 0]
        acc[0] += 1
        acc[1] += sample.period or 0
        if sample.time:
            if self.first_time is None:
                self.first_time = sample.time
            self.last_time = sample.time
        return True

    def encode(self):
        """The serialized Profile (not yet gzipped)."""
        event = self.event.name if self.event is not None else "samples"
        base = event.split(":", 1)[0]
        kind, unit = ("cpu", "nanoseconds") if base in _NS_EVENTS else (event, "count")
        out = bytearray()
        for t, u in (("samples", "count"), (kind, unit)):
            vt = bytearray()
            _field_varint(1, self._s(t), vt)
            _field_varint(2, self._s(u), vt)
            _field_bytes(1, vt, out)
        k_pid, k_tid, k_comm = self._s("pid"), self._s("tid"), self._s("comm")
        for (locs, pid, tid, comm), (count, period) in self.samples.items():
            sm = bytearray()
            _field_packed(1, locs, sm)
            _field_packed(2, (count, period), sm)
            for key, num in ((k_pid, pid), (k_tid, tid)):
                lb = bytearray()
                _field_varint(1, key, lb)
                _field_varint(3, num, lb)
                _field_bytes(3, lb, sm)
            lb = bytearray()
            _field_varint(1, k_comm, lb)
            _field_varint(2, self._s(comm), lb)
            _field_bytes(3, lb, sm)
            _field_bytes(2, sm, out)
        for dso, (mid, build_id) in self.mappings.items():
            mp = bytearray()
            _field_varint(1, mid, mp)
            _field_varint(5, self._s(dso), mp)
            if build_id:
                _field_varint(6, self._s(str(build_id)), mp)
            _field_varint(7, 1, mp)
            _field_bytes(3, mp, out)
        for (name, dso), (lid, fid, mid) in self.locations.items():
            loc = bytearray()
            _field_varint(1, lid, loc)
            _field_varint(2, mid, loc)
            line = bytearray()
            _field_varint(1, fid, line)
            _field_bytes(4, line, loc)
            _field_bytes(4, loc, out)
        for (name, dso), fid in self.functions.items():
            fn = bytearray()
            _field_varint(1, fid, fn)
            _field_varint(2, self._s(name), fn)
            _field_varint(3, self._s(name), fn)
            _field_varint(4, self._s(dso), fn)
            _field_bytes(5, fn, out)
        # Strings last: every index above is final now.
        pt = bytearray()
        _field_varint(1, self._s(kind), pt)
        _field_varint(2, self._s(unit), pt)
        _field_bytes(11, pt, out)
        if self.first_time is not None and self.last_time is not None:
            _field_varint(10, self.last_time - self.first_time, out)
        _field_varint(14, self._s(kind), out)
        for text in self.strings:       # insertion order = index order
            _field_bytes(6, text.encode("utf-8", "replace"), out)
        return bytes(out)


def run_pprof(args, out):
    import gzip
    if args.output is None or args.output == "-":
        stream = getattr(out, "buffer", None)
        close = False
        if stream is None:
            sys.stderr.write("perfdata: error: pprof output is binary: give -o FILE\n")
            sys.exit(2)
    else:
        try:
            stream = open(args.output, "wb")
        except OSError as exc:
            sys.stderr.write("perfdata: error: %s: %s\n" % (args.output, exc.strerror or exc))
            sys.exit(2)
        close = True
    builder = PprofBuilder()
    skipped = 0
    for sample in SampleRun(args, "export"):
        if not builder.add(sample):
            skipped += 1
    if skipped:
        sys.stderr.write("perfdata: note: pprof holds one event (%s); %d samples of other "
                         "events left out\n" % (builder.event.name, skipped))
    if not builder.samples:
        sys.stderr.write("perfdata: note: no samples; the profile is empty\n")
    try:
        stream.write(gzip.compress(builder.encode()))
    finally:
        if close:
            stream.close()
