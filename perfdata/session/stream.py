"""The session as a stream of typed events: records in, what they mean out.

`SessionStream` walks a PerfFile's records in the order asked for, keeps a
`Machine` up to date with them and hands out:

  Sample       a SAMPLE: its record, decoded fields, event (attr), thread
               (one per group member for a sample that reads a group, as
               perf's deliver_sample_group)
  SideEvent    a non-sample record of a type the caller asked for, with the
               thread it concerns
  LostSamples  a LOST_SAMPLES record's count (perf's "Total Lost Samples")
  BuildId      a build-id the records name for a path (MMAP2 records made
               with --buildid-mmap, pipe-mode HEADER_BUILD_ID records)

It knows nothing of symbols or binaries: the symbolizing layer consumes it
(perfdata/resolve/symbolized.py), and can have the stream build its own sample
objects (sample_class) so a sample is allocated once.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from ..format.constants import (MISC_CPUMODE_MASK, MISC_LOST_SAMPLES_BPF, RecordType as RT,
                                SampleType as ST)
from ..format.errors import PerfDataError
from .machine import KERNEL_DSO, Machine

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator

    from ..format.container import PerfFile
    from ..format.decoder import Record
    from ..format.eventattr import EventAttr
    from typing import TypeAlias

    from .threads import Thread

    # What the stream hands out.
    StreamEvent: TypeAlias = "Sample | SideEvent | LostSamples | BuildId"

# The records that change the session (threads, maps, kernel symbols).
SESSION_TYPES = frozenset((RT.COMM, RT.FORK, RT.EXIT, RT.MMAP, RT.MMAP2, RT.KSYMBOL))
# Side events whose thread is the one the record names; the others' is the
# one of their sample_id (perf script's print_event() arguments).
_OWN_THREAD_TYPES = frozenset((RT.COMM, RT.FORK, RT.EXIT, RT.MMAP, RT.MMAP2, RT.NAMESPACES))
_SAMPLE = RT.SAMPLE
_READ = int(ST.READ)      # (a plain int: an IntFlag makes & a Python call)
_U64 = (1 << 64) - 1
_LOST_SAMPLES = RT.LOST_SAMPLES
_LOST = RT.LOST
_MMAP2 = RT.MMAP2
_EXIT = RT.EXIT


def pid_t(value: int) -> int:
    """A sample's u32 pid or tid as perf reads it, a pid_t: the kernel
    writes -1 for a task already gone from its pid namespace (a sample
    taken in do_exit after exit_notify), which perf prints and groups as
    thread -1, comm ":-1"."""
    return value - (1 << 32) if value > 0x7FFFFFFF else value


class Sample:
    """One sample of one event, as the session sees it (the fields perf
    script prints first, taken out of the decoded ones)."""
    __slots__ = ("record", "fields", "event", "thread", "comm", "pid", "tid", "time", "cpu",
                 "period", "ip", "cpumode")

    def __init__(self, record: Record, fields: dict[str, Any], event: EventAttr,
                 thread: Thread | None) -> None:
        get = fields.get
        self.record = record
        self.fields = fields
        self.event = event
        self.thread = thread
        self.comm = thread.comm if thread is not None else ":-1"
        self.pid = get("pid", -1)       # (pid_t already: SessionStream)
        self.tid = get("tid", -1)
        self.time = get("time", 0)
        self.cpu = get("cpu")
        # Without PERIOD in sample_type perf reports the attr's sample_period.
        period = get("period")
        self.period = event.attr["sample_period"] if period is None else period
        self.ip = get("ip")
        self.cpumode = record.misc & MISC_CPUMODE_MASK


class SideEvent:
    """A non-sample record the caller asked to see, with the thread it
    concerns (after the record is applied, except EXIT; None where perf has
    none: a sample_id without a tid, FINISHED_ROUND)."""
    __slots__ = ("record", "fields", "thread")

    def __init__(self, record: Record, fields: dict[str, Any], thread: Thread | None) -> None:
        self.record = record
        self.fields = fields
        self.thread = thread


class LostSamples:
    """A LOST_SAMPLES record: `count` samples the kernel could not write.
    Those a BPF filter dropped (MISC_LOST_SAMPLES_BPF) are not handed out:
    the perf that records them (record --filter) counts them as dropped, not
    lost (perf 6.1 predates the flag and adds them in)."""
    __slots__ = ("record", "count")

    def __init__(self, record: Record, count: int) -> None:
        self.record = record
        self.count = count


class BuildId:
    """A build-id (hex) the records name for a file path."""
    __slots__ = ("path", "build_id")

    def __init__(self, path: str, build_id: str) -> None:
        self.path = path
        self.build_id = build_id


def recorded_build_ids(pf: PerfFile) -> dict[str, str]:
    """{path: build-id} the recording lists (BUILD_ID feature, or in pipe mode
    the HEADER_BUILD_ID records read so far), perf's kernel entry also under
    [kernel.kallsyms]."""
    out: dict[str, str] = {}
    for name, bid in pf.recorded_build_ids().items():
        out.setdefault(name, bid)
        if name.startswith(KERNEL_DSO):
            out.setdefault(KERNEL_DSO, bid)
    return out


def recorded_build_id_choices(pf: PerfFile) -> dict[str, list[str]]:
    """{path: its build-ids} for the paths the recording lists with more
    than one (several files under one path: see
    PerfFile.recorded_build_id_lists); which is a map's, only the map's
    file can tell."""
    return {name: bids for name, bids in pf.recorded_build_id_lists().items()
            if len(bids) > 1}


class CounterReads:
    """perf's deliver_sample_value() rule for samples that read counters
    (PERF_SAMPLE_READ): a counter's period is its growth since its last
    sample (u64: an inherited counter read in another thread may be behind,
    and the difference wraps), and a counter that did not grow delivers no
    sample.  One per pass over a file; each id is one cpu's or thread's
    counter, whose samples come in order."""
    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last: dict[int, int] = {}     # counter id -> its value at its last sample

    def growth(self, ident: int, value: int) -> int:
        """The counter's growth since its last sample (0: deliver nothing)."""
        grew = (value - self._last.get(ident, 0)) & _U64
        self._last[ident] = value
        return grew


class Shard(NamedTuple):
    """One of `jobs` workers' part of a sharded run: the samples in blocks
    of `block` SAMPLE records (in delivery order), of which this worker
    takes those takes(k) says.  The stream asks once a block, in order, at
    the first record of the block it has to place (a sample, or a side
    event it may hand out).  Here the blocks are dealt in turn (worker,
    worker + jobs, ...); a run whose workers share a counter gives each to
    the first worker to ask (sharded.ClaimedShard)."""
    block: int
    jobs: int
    worker: int         # (0 to jobs - 1)

    def takes(self, k: int) -> bool:
        """Whether block k is this worker's."""
        return k % self.jobs == self.worker


class SessionStream:
    """The typed events of an open PerfFile, one pass.

    side_events: the record types to hand out as SideEvent (--show-*-events);
    side_cpus: perf's filter_cpu() on them; order: 'time' (perf's delivery
    order) or 'file' (perf script --show-round-events); strict: a sample that
    does not decode ends the run (else it is skipped with a warning);
    sample_class(record, fields, event, thread): what a sample is built as;
    after_apply(rtype, record, fields): told of every record applied to the
    machine, before its SideEvent (if any) is handed out.

    shard: (block, jobs, index) or a Shard, for one of `jobs` workers of a
    sharded run: only the samples of the blocks it takes (blocks of `block`
    SAMPLE records in delivery order; a plain tuple takes index, index +
    jobs, ...) are decoded and handed out, and the side events that fall in
    those blocks; the machine still follows every record.  `ordinal`
    counts the SAMPLE records seen so far.

    What the recording lost is counted as the walk goes (lost_chunks,
    lost_events: the LOST records, each a time the kernel found the ring
    buffer full, and the records they stand for; lost_samples: the
    LOST_SAMPLES counts) and, at the walk's end, said in the file's
    warnings, with the fix, where perf script says it (see lost_warnings).
    """

    def __init__(self, pf: PerfFile, side_events: Iterable[int] = (),
                 side_cpus: Collection[int] | None = None, order: str = "time",
                 strict: bool = False, shard: tuple[int, int, int] | None = None,
                 sample_class: type[Sample] = Sample,
                 after_apply: Callable[[int, Record, dict[str, Any]], object] | None = None
                 ) -> None:
        self.pf = pf
        self.machine = Machine()
        self.side_events = frozenset(side_events)
        self.side_cpus = side_cpus
        self.order = order
        self.strict = strict
        self.shard = shard
        self.sample_class = sample_class
        self.after_apply = after_apply
        # sample_text(record, ordinal): true where it took the SAMPLE record
        # (the compiled core, which makes its text: perfdata/core/script.py);
        # then the stream neither decodes nor hands it out, but hands out
        # what it returned when that is a list (the texts made so far)
        self.sample_text: Callable[[Record, int], Any] | None = None
        # records: the records in delivery order from elsewhere, with lists
        # between them handed out as they are (the compiled core's walk,
        # which takes the samples it makes the text of and sets `ordinal`
        # before each record: perfdata/core/walk.py); None: pf.records(order)
        self.records: Iterable[Record | list[Any]] | None = None
        # block_taken(k), in a sharded run once the walk has begun: whether
        # block k is this worker's, each block asked once (the compiled walk
        # asks it for the samples it drops: perfdata/core/walk.py)
        self.block_taken: Callable[[int], bool] | None = None
        self.ordinal = 0
        self.lost_chunks = 0
        self.lost_events = 0
        self.lost_samples = 0
        self.samples_skipped = 0        # damaged samples (not strict)
        self._reads = CounterReads()
        self._announced: set[str] = set()  # paths of the HEADER_BUILD_ID build-ids handed out

    def __iter__(self) -> Iterator[StreamEvent]:
        pf = self.pf
        pf.resolve_event_names()
        machine = self.machine
        thread_of = machine.thread
        make_sample = self.sample_class
        sample_text = self.sample_text
        shard = self.shard
        mine: Callable[[], bool] | None = None
        if shard is not None:
            block = shard[0]
            takes = (shard if isinstance(shard, Shard) else Shard(*shard)).takes
            current, taken = -1, False      # the block last asked about, the answer

            def block_taken(k: int) -> bool:    # does block k belong to this worker?
                nonlocal current, taken
                if k != current:
                    current = k
                    taken = takes(k)
                return taken

            def record_taken() -> bool:     # ... the block of a record after `ordinal` samples?
                return block_taken(self.ordinal // block)
            mine = record_taken
            self.block_taken = block_taken
        for rec in pf.records(self.order) if self.records is None else self.records:
            if isinstance(rec, list):
                # (the texts the compiled core made, handed out as sample_text's)
                yield rec  # type: ignore[misc]
                continue
            rtype = rec.type
            if rtype == _SAMPLE:
                self.ordinal += 1
                if shard is not None:
                    # (block_taken(k) inlined: it is asked once a sample;
                    # the compiled walk, which drops the other workers'
                    # samples, has asked it already, and it said yes)
                    k = (self.ordinal - 1) // block
                    if k != current:
                        current = k
                        taken = takes(k)
                    if not taken:
                        continue
                if sample_text is not None:
                    took = sample_text(rec, self.ordinal)
                    if took:
                        # (its text made by the compiled core: perfdata.core;
                        # a list is the text it made so far, to go out now)
                        if took is not True:
                            yield took
                        continue
                ea = rec.attr
                try:
                    # (no attr: an AttributeError, taken as a damaged sample below)
                    fields = ea.decode_sample(rec.body)  # type: ignore[union-attr]
                except Exception:
                    fields = self._decode_damaged(rec)
                    if fields is None:
                        continue
                pid, tid = fields.get("pid", -1), fields.get("tid", -1)
                if pid > 0x7FFFFFFF or tid > 0x7FFFFFFF:
                    # (read as pid_t once, here, for the thread and the sample)
                    pid = fields["pid"] = pid_t(pid)
                    tid = fields["tid"] = pid_t(tid)
                thread = thread_of(pid, tid)
                if ea.reads_group:  # type: ignore[union-attr]  # (decoded: it has its attr)
                    yield from self._group_members(rec, fields, thread)
                    continue
                # (decoded: the sample has its attr)
                sample = make_sample(rec, fields, ea, thread)  # type: ignore[arg-type]
                if ea.sample_type & _READ and not self._read_growth(sample):  # type: ignore[union-attr]
                    continue
                yield sample
            elif rtype in SESSION_TYPES:
                yield from self._session_record(rec, rtype, mine)
            else:
                yield from self._other_record(rec, rtype, mine)
        pf.warnings.extend(self.lost_warnings())
        pf.warnings.extend(self.replaced_file_warnings())

    def _session_record(self, rec: Record, rtype: int, mine: Callable[[], bool] | None
                        ) -> Iterator[StreamEvent]:
        """A record the machine follows (COMM, FORK, EXIT, MMAP, ...),
        applied, and handed out where it is shown."""
        side_events, after_apply = self.side_events, self.after_apply
        # (the trailer only for a record shown: the machine reads none)
        fields = self._parsed(rec, rtype in side_events)
        if fields is None:
            return
        if rtype == _MMAP2 and fields.get("build_id"):
            yield BuildId(fields["filename"], fields["build_id"])
        shown = rtype in side_events and self._side_cpu_ok(rec, fields)
        if shown and mine is not None:
            shown = mine()
        if shown and rtype == _EXIT:
            # perf prints an EXIT before processing it.
            yield SideEvent(rec, fields, self._side_thread(rtype, fields))
        self.machine.apply(rtype, fields, rec.misc, rec.time or 0)
        if after_apply is not None:
            after_apply(rtype, rec, fields)
        if shown and rtype != _EXIT:
            yield SideEvent(rec, fields, self._side_thread(rtype, fields))

    def _other_record(self, rec: Record, rtype: int, mine: Callable[[], bool] | None
                      ) -> Iterator[StreamEvent]:
        """The records the machine does not follow: what was lost, a
        stream's build-ids, and the side events shown."""
        side_events, warn = self.side_events, self.pf.warnings.append
        if rtype == _LOST or rtype == _LOST_SAMPLES and not rec.misc & MISC_LOST_SAMPLES_BPF:
            try:
                lost = rec.parse().get("lost", 0) or 0
            except PerfDataError as exc:
                warn(str(exc))
                return
            if rtype == _LOST:
                self.lost_chunks += 1
                self.lost_events += lost
            else:
                self.lost_samples += lost
                yield LostSamples(rec, lost)
        elif rtype == RT.HEADER_BUILD_ID:
            # Pipe mode: the reader gathers these records; the table they
            # make so far, read as the BUILD_ID feature is.
            for path, bid in recorded_build_ids(self.pf).items():
                if path not in self._announced:
                    self._announced.add(path)
                    yield BuildId(path, bid)
        if rtype in side_events:
            fields = self._parsed(rec)
            if fields is None:
                return
            if mine is not None and not mine():
                return
            if rtype >= RT.HEADER_ATTR:     # perf's own: FINISHED_ROUND, ...
                yield SideEvent(rec, fields, None)
            elif self._side_cpu_ok(rec, fields):
                yield SideEvent(rec, fields, self._side_thread(rtype, fields))

    def replaced_file_warnings(self) -> list[str]:
        """A path mapped as more files (device and inode) than the recording
        lists build-ids for it: perf record reads them when it ends, from
        the file then at the path (a container's through its process's
        mount namespace while that lives), so a file replaced during the
        recording (a program rebuilt and run again, a package upgraded) or
        a container's gone by then has none of its own, and its samples are
        named from another file's symbols, by perf as by perfdata.  Only
        the MMAP2 records' build-ids (perf record --buildid-mmap) tell."""
        listed = self.pf.recorded_build_id_lists()
        out = []
        for path, ids in sorted(self.machine.file_ids.items()):
            bids = listed.get(path)
            if bids and len(ids) > len(bids):
                out.append("%s: %d different files were mapped under this path (%s) and the "
                           "profile has %d build-id%s for it, read when perf record ended: "
                           "samples in the other file%s may be named from another's symbols; "
                           "record with --buildid-mmap to keep each mapping's build-id"
                           % (path, len(ids), ", ".join("%02x:%02x inode %d" % i
                                                        for i in sorted(ids)[:4]),
                              len(bids), "" if len(bids) == 1 else "s",
                              "" if len(ids) - len(bids) == 1 else "s"))
        return out

    def lost_warnings(self) -> list[str]:
        """What the walk so far says the recording lost, as warnings: every
        LOST record (perf script warns of any: "lost N chunks! Check IO/CPU
        overload!"), and LOST_SAMPLES counts above 5% of the samples (perf's
        drop rate threshold) when no LOST record explains them."""
        where = self.pf.path
        total = self.ordinal + self.lost_samples
        if self.lost_chunks:
            dwarf = any(ea.sample_type & ST.STACK_USER for ea in self.pf.attrs)
            lost = ("%d samples (%.2f%% of %d)" % (self.lost_samples,
                                                   100.0 * self.lost_samples / total, total)
                    if self.lost_samples else "%d records" % self.lost_events)
            return ["%s: %d times perf record's ring buffer was full (PERF_RECORD_LOST): "
                    "%s lost, missing from counts and stacks; record with a bigger buffer "
                    "(-m 1024), a lower rate (-F)%s"
                    % (where, self.lost_chunks, lost,
                       ", or a smaller stack copy (--call-graph=dwarf,4096)" if dwarf else "")]
        if self.lost_samples and self.lost_samples > 0.05 * total:
            return ["%s: the kernel lost %d of %d samples (%.2f%%, PERF_RECORD_LOST_SAMPLES)"
                    % (where, self.lost_samples, total, 100.0 * self.lost_samples / total)]
        return []

    def _parsed(self, rec: Record, with_trailer: bool = True) -> dict[str, Any] | None:
        """A side record's fields (with its trailer's sample_id unless
        with_trailer is False), or None (with the reader's warning)."""
        try:
            return rec.parse(with_trailer)
        except PerfDataError as exc:
            self.pf.warnings.append(str(exc))
            return None

    def _decode_damaged(self, rec: Record) -> dict[str, Any] | None:
        """The fields of a sample the fast decoder refused, by the reader's
        own decoder; None (with a warning) when it is damaged, unless strict."""
        try:
            return rec.parse()      # the reader's error, with the offset
        except PerfDataError as exc:
            if self.strict:
                raise
            # One damaged sample: say where, and go on with the others.
            self.pf.warnings.append("%s (sample skipped)" % exc)
            self.samples_skipped += 1
            return None

    def _read_growth(self, sample: Sample) -> bool:
        """A sample that reads its own counter (PERF_SAMPLE_READ, no group):
        its period is the counter's growth since the last sample of that
        counter, and it is not delivered without growth (perf's
        deliver_sample_value).  False: leave it out."""
        read = sample.fields.get("read") or {}
        ident = read.get("id")
        if ident is None or ident not in self.pf.id_to_attr:
            return True                 # perf finds no counter: the period as recorded
        grew = self._reads.growth(ident, read.get("value", 0))
        if not grew:
            return False
        sample.period = grew
        return True

    def _group_members(self, rec: Record, fields: dict[str, Any], thread: Thread
                       ) -> list[Sample]:
        """A sample that reads a whole group stands for one sample per member
        whose counter grew (perf's deliver_sample_group)."""
        read = fields.get("read") or {}
        id_to_attr = self.pf.id_to_attr
        growth = self._reads.growth
        out = []
        for value in read.get("values", ()):
            ident = value.get("id")
            member = id_to_attr.get(ident)
            if member is None:
                continue
            # The period of each member is its counter's growth since the
            # last sample; perf's deliver_sample_value delivers no sample of
            # period 0 ("no reason to deliver sample for zero period").
            period = growth(ident, value["value"])
            if not period:
                continue
            sample = self.sample_class(rec, dict(fields), member, thread)
            sample.period = period
            out.append(sample)
        return out

    def _side_thread(self, rtype: int, fields: dict[str, Any]) -> Thread | None:
        """The thread perf script's print_event() names: the record's own
        pid/tid, or its sample_id's (none without a tid)."""
        if rtype in _OWN_THREAD_TYPES:
            return self.machine.thread(fields["pid"], fields["tid"])
        sid = fields.get("sample_id") or {}
        tid = sid.get("tid", -1)
        if tid in (-1, 0xffffffff):
            return None
        return self.machine.thread(sid.get("pid", -1), tid)

    def _side_cpu_ok(self, rec: Record, fields: dict[str, Any]) -> bool:
        """perf's filter_cpu() for a side event: its sample_id's cpu (0
        without sample_id_all; none, which passes, without PERF_SAMPLE_CPU)."""
        cpus = self.side_cpus
        if cpus is None:
            return True
        ea = rec.attr
        if ea is not None and not ea.sample_id_all:
            cpu: int | None = 0
        else:
            cpu = (fields.get("sample_id") or {}).get("cpu")
        return cpu is None or cpu in cpus
