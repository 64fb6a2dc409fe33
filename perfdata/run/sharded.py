"""A command's output made by several worker processes, printed in order.

perf script works on one core.  Here the samples are dealt out in blocks of
`block` SAMPLE records (in delivery order): each worker walks every record,
follows every one for the session (threads, maps), which costs little, and
decodes, symbolizes and formats the blocks it takes; this process prints the
blocks in order, so the bytes are those of one process.  A block goes to the
first worker to reach it (ClaimedShard: one counter the workers share), so
a worker busy with a costly block, or given less of the machine, takes
fewer: dealt in turn, the slowest worker's share set the run's time
(benchmarks/bench_real.py --jobs 2 on its make: the workers' shares took
0.67 and 0.74 s).  Each worker reads
the file itself (forked after the imports: cheap), and stops at the same
place when the file is damaged: what comes before the fault is printed,
then the fault is raised here.
"""
from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any, cast

from ..format import SampleType, PerfDataError
from ..session.stream import Shard

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Generator, Iterable, Iterator
    from multiprocessing.connection import Connection
    from multiprocessing.synchronize import Barrier

    from ..format import PerfFile, InputName
    from ..resolve import ResolveOptions
    from ..resolve.symbolized import SampleSymbolizer

    # A PerfDataError as plain data: (class name, message, path, offset)
    ErrorFields = tuple[str, str, InputName | None, int | None]
    # A worker's warning: (0 the file's, 1 the symbolizer's; the block the
    # worker was at when it was said, -1 before the first; the text)
    WorkerWarning = tuple[int, int, str]
    # run_sharded's produce(shard): yields (block index, text: str, or
    # bytes for a write that takes them), returns (SAMPLE records seen,
    # warnings, error or None)
    WorkerReturn = tuple[int | None, list[WorkerWarning], ErrorFields | None]
    Produce = Callable[[Shard], Generator[tuple[int, str | bytes], None, WorkerReturn]]
    # gather_sharded's compute(shard): (result, warnings, error or None)
    Compute = Callable[[Shard], tuple[Any, list[WorkerWarning], ErrorFields | None]]

# Below this much input one process is done before workers would start.
SHARD_MIN_BYTES = 512 << 10
# The barrier the workers of a run meet at once each has built its part of
# what the run needs (prepare_shard); made before they are forked.
_prepared: Barrier | None = None
# How long a worker waits there for the others (then it goes on: each
# builds what it lacks, as without the split).
PREPARE_WAIT = 300
# The blocks the workers of a run have taken so far (ClaimedShard): a
# shared counter made before they are forked.
_claimed: Any = None
# The first-run builds the workers of a run have taken so far
# (prepare_shard): a shared counter, as _claimed.
_builds_taken: Any = None
# In a worker: its two warning lists (the file's, the symbolizer's), and
# (block, length of each) as it reached each block (worker_warnings).
_watched: list[list[str]] = []
_marks: list[tuple[int, int, int]] = []


class ClaimedShard(Shard):
    """A worker's shard whose blocks go to the first worker to reach them:
    the workers walk the same records, each asks once a block, in order, so
    the counter of blocks taken is at k when the first of them reaches
    block k.  Outside a run's workers (no counter), dealt in turn."""
    __slots__ = ()

    def takes(self, k: int) -> bool:
        if _watched:
            # where each warning list stands as the worker reaches block k
            _marks.append((k, len(_watched[0]), len(_watched[1])))
        claimed = _claimed
        if claimed is None:
            return super().takes(k)
        with claimed.get_lock():
            if claimed.value > k:
                return False
            claimed.value = k + 1
            return True


def _worker(conn: Connection, produce: Produce, shard: Shard) -> None:
    """Runs in a forked process: produce(shard) yields (block index, text)
    for the blocks of shard and returns (SAMPLE records seen, warnings,
    error or None); each goes to this process as it comes."""
    try:
        it = produce(shard)
        while True:
            try:
                k, text = next(it)
            except StopIteration as stop:
                total, warnings, error = stop.value
                break
            conn.send(("block", k, text))
        conn.send(("end", total, warnings, error))
    except PerfDataError as exc:
        # Bad input or a refused option met before the first block (-C on a
        # file without cpus): this process says it as a one-process run does.
        _release_others()
        conn.send(("end", None, [], describe_error(exc)))
    except BaseException as exc:       # never a traceback from a worker
        _release_others()
        conn.send(("end", None, [], ("Exception", "%s: %s" % (type(exc).__name__, exc),
                                     None, None)))
    finally:
        conn.close()


@contextlib.contextmanager
def _forked(jobs: int, block: int, target: Callable[..., None], work: Any
            ) -> Iterator[list[Connection]]:
    """`jobs` forked processes running target(connection, work, shard) for
    shard = ClaimedShard(block, jobs, index), with the barrier of
    prepare_shard and the block counter made for them: the ends of their
    pipes, in worker order; closed, and the workers gone, on the way out."""
    import multiprocessing
    global _prepared, _claimed, _builds_taken
    # What every worker imports to symbolize, imported once here rather
    # than after the fork in each.
    from ..resolve import symbolized  # noqa: F401
    from ..format import parse_feature  # noqa: F401  (the header's features)
    ctx = multiprocessing.get_context("fork")
    _prepared = ctx.Barrier(jobs)
    _claimed = ctx.Value("q", 0)
    _builds_taken = ctx.Value("q", 0)
    conns, procs = [], []
    try:
        for index in range(jobs):
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=target, args=(send, work, ClaimedShard(block, jobs, index)),
                               daemon=True)
            proc.start()
            send.close()
            conns.append(recv)
            procs.append(proc)
        yield conns
    finally:
        for conn in conns:
            conn.close()
        for proc in procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()


def describe_error(exc: PerfDataError) -> ErrorFields:
    """A PerfDataError as plain data (it crosses a pipe)."""
    return (type(exc).__name__, exc.message, exc.path, exc.offset)


def run_sharded(jobs: int, block: int, produce: Produce, write: Callable[[Any], object]
                ) -> list[str]:
    """Run produce(shard) for shard = ClaimedShard(block, jobs, index) in
    `jobs` forked processes; write(text) the blocks in order here.  Returns
    the workers' warnings, each once, in a one-process run's order
    (merged_warnings);
    raises the error a worker met (after writing every block up to the
    one it met it in)."""
    from multiprocessing.connection import wait
    with _forked(jobs, block, _worker, produce) as conns:
        texts: dict[int, str | bytes] = {}  # blocks received, not yet written
        # The last block each worker sent: all its blocks up to there are
        # here (each sends its own in order); _ENDED once it has ended.
        sent = [-1] * jobs
        ends: list[Any] = [None] * jobs
        live = {conn: w for w, conn in enumerate(conns)}
        # (block of the fault, worker, the error described) of each fault
        errors: list[tuple[int, int, ErrorFields]] = []
        stop: int | None = None         # the block of the first fault
        k = 0                           # the next block to write
        while live:
            for conn in cast("list[Connection]", wait(list(live))):
                w = live[conn]
                try:
                    m = conn.recv()
                except EOFError:        # the worker died without a word
                    m = ("end", None, [], ("Exception", "worker %d died" % w, None, None))
                if m[0] == "block":
                    texts[m[1]] = m[2]
                    sent[w] = m[1]
                    continue
                if m[3] is not None:
                    # The output ends with the block of the fault: where the
                    # worker's count of samples stopped (when it died, the
                    # last block it sent).  Its blocks before are all here.
                    errors.append((m[1] // block if m[1] is not None else sent[w], w, m[3]))
                    stop = min(errors)[0]
                ends[w] = m
                sent[w] = _ENDED
                del live[conn]
            # Every block up to the least a worker is known past is whole.
            limit = min(sent)
            if stop is not None:
                limit = min(limit, stop)
            if limit == _ENDED:
                break
            while k <= limit:
                text = texts.pop(k, None)
                if text is not None:
                    write(text)
                k += 1
        warnings = merged_warnings(m[2] for m in ends)
        if stop is None:
            stop = max(m[1] // block for m in ends)
        for k in sorted(texts):
            if k > stop:
                if errors:
                    break               # (made past the fault by another worker)
                # Every worker walks the same records: a block past the end
                # they met means they disagree; never drop it.
                raise RuntimeError("a worker has block %d after the end of the samples" % k)
            write(texts[k])
        if errors:
            raise worker_error(min(errors)[2], warnings)
        return warnings


# (sent[w] of a worker that has ended: past every block)
_ENDED = 1 << 62


def add_jobs_argument(p: argparse.ArgumentParser) -> None:
    """-j/--jobs N: how many worker processes share the samples."""
    p.add_argument("-j", "--jobs", type=_jobs, default=None, metavar="N",
                   help="worker processes (default: the machine's cores, for inputs of "
                        "512 KiB and more); the output is the same as with -j 1")


def _jobs(text: str) -> int:
    import argparse
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError("-j wants a number of processes, 1 or more: %r" % text)
    return n


def worker_error(fields: ErrorFields, warnings: Iterable[str] = ()) -> Exception:
    """The exception of a worker's error fields (describe_error), carrying the
    run's warnings for the caller to print before it."""
    kind, message_text, path, offset = fields
    from .. import format as reader_errors
    if kind == "Exception":            # a bug: not bad input
        return RuntimeError(message_text)
    cls = getattr(reader_errors, kind, None)
    if not (isinstance(cls, type) and issubclass(cls, PerfDataError)):
        # bad input found outside the reader (an --archive that does not
        # unpack: ArchiveError) is bad input still
        cls = PerfDataError
    error = cls(message_text, path=path, offset=offset)
    error.warnings = list(warnings)  # type: ignore[attr-defined]  # (script.run reads it with getattr)
    return error


def default_jobs(args: Any, pf: PerfFile) -> int:
    """Worker processes for a run over pf: -j N (args.jobs) as given, else
    the machine's cores for an input of SHARD_MIN_BYTES or more; one for a
    pipe (it cannot be read again), for counter reads (PERF_SAMPLE_READ),
    and by default where stacks are unwound by DWARF (--call-graph=dwarf
    events, --unwind auto or dwarf).  Each worker would learn every stack's
    CFI rows and frames again, and index the DWARF units it asks about
    again: on the 600 MB eight-CPython-runs recording -j 2 took 1.3x the
    CPU of -j 1 and, on a busy machine (the scheduler's share is a
    session's, whatever its processes), longer wall time; sqlite's report
    took 0.48 s of CPU warm with two workers, 0.26 s with one (benchmarks/
    RESULTS.md, issue 33)."""
    jobs = args.jobs
    if jobs is not None and jobs <= 1 or pf.is_pipe:
        return 1
    if any(ea.sample_type & SampleType.READ for ea in pf.attrs):
        # A sample that reads counters takes its period from their growth
        # since the sample before, which another worker may hold.
        return 1
    if jobs is None:
        from ..resolve.symbolized import unwinds_by_dwarf
        if unwinds_by_dwarf(pf, getattr(args, "unwind", "auto")):
            return 1
        size = sum(os.path.getsize(p) for p in pf.input_paths if os.path.isfile(p))
        if size < SHARD_MIN_BYTES:
            return 1
        jobs = os.cpu_count() or 1
    return jobs


def _gather_worker(conn: Connection, compute: Compute, shard: Shard) -> None:
    try:
        conn.send(("done",) + tuple(compute(shard)))
    except PerfDataError as exc:       # (as in _worker)
        _release_others()
        conn.send(("done", None, [], describe_error(exc)))
    except BaseException as exc:       # never a traceback from a worker
        _release_others()
        conn.send(("done", None, [], ("Exception", "%s: %s" % (type(exc).__name__, exc),
                                      None, None)))
    finally:
        conn.close()


def gather_sharded(jobs: int, block: int, compute: Compute
                   ) -> tuple[list[Any], list[str], ErrorFields | None]:
    """Run compute(shard) for shard = (block, jobs, index) in `jobs` forked
    processes, each returning (result, warnings, described error or None),
    for results that add up whatever the order (folded stacks, flame graph
    paths).  Returns (results in worker order, the warnings each once in a
    one-process run's order, the first error described or None): the
    caller (add_up_parts) adds up the results, prints the warnings, then
    raises worker_error(error)."""
    with _forked(jobs, block, _gather_worker, compute) as conns:
        results, warnings, error = [], [], None
        for w, conn in enumerate(conns):
            try:
                _, result, texts, fields = conn.recv()
            except EOFError:            # the worker died without a word
                result, texts, fields = None, [], ("Exception", "worker %d died" % w, None, None)
            results.append(result)
            warnings.append(texts)
            if error is None and fields is not None:
                error = fields
        return results, merged_warnings(warnings), error


def compute_part(path: str, options: ResolveOptions, shard: Shard,
                 make: Callable[[SampleSymbolizer], Any],
                 fill: Callable[[PerfFile, SampleSymbolizer, Any], None]
                 ) -> tuple[Any, list[WorkerWarning], ErrorFields | None]:
    """gather_sharded's compute(shard) for a view that adds up parts: the
    shard's samples of the file at path (open_shard), the worker's part make(samples), filled
    with them by fill(pf, samples, part); (part, warnings, the fault
    described or None): a fault mid-file leaves the part holding the
    samples before it."""
    pf, samples = open_shard(path, options, shard)
    part = make(samples)
    error = None
    try:
        fill(pf, samples, part)
    except PerfDataError as exc:
        error = describe_error(exc)
    return part, worker_warnings(pf, samples), error


def add_up_parts(pf: PerfFile, jobs: int, block: int, compute: Compute,
                 merge: Callable[[Any], None]) -> None:
    """gather_sharded(jobs, block, compute), then merge(part) each worker's
    part (in worker order; none from a worker that died), then the run's
    warnings printed and the fault a worker met raised."""
    from .profile import print_warnings
    results, warnings, error = gather_sharded(jobs, block, compute)
    for part in results:
        if part is not None:
            merge(part)
    print_warnings(pf, warnings)
    if error is not None:
        raise worker_error(error)


def open_shard(path: str, options: ResolveOptions, shard: Shard
               ) -> tuple[PerfFile, SampleSymbolizer]:
    """(PerfFile, SampleSymbolizer of the shard's samples of the file at
    path) in a worker, with its part of the run's first builds done
    (prepare_shard)."""
    from ..resolve import build_sample_symbolizer
    from .profile import open_profile
    pf = open_profile(path, options.strict)
    samples = build_sample_symbolizer(pf, options, shard=shard)
    start_shard(pf, samples, shard)
    return pf, samples


def start_shard(pf: PerfFile, samples: SampleSymbolizer, shard: Shard) -> None:
    """What a worker does before its walk, whatever it makes of its
    samples: follow its warnings block by block (watch_warnings), and build
    its part of the run's first builds (prepare_shard)."""
    watch_warnings(pf, samples)
    prepare_shard(samples, shard)


def prepare_shard(samples: SampleSymbolizer, shard: Shard) -> None:
    """A first run's builds (symbol tables, native inline indexes, the
    parsed kallsyms) split between the workers through the cache directory:
    every worker would otherwise build all of them, at the same time.  The
    builds are taken largest first, each by the first worker free (one
    shared counter, as the blocks): sized in advance, the kallsyms parse and
    a compiler's table were misjudged, and one worker waited 0.3 s of the
    first 0.7 s of benchmarks/bench_real.py --jobs 2 on its make for the
    other.  What a build has to say is said
    where the run first meets the binary, as without the split.  Each worker
    then waits for the others; the run then reads what the others built.
    Nothing to do without a cache directory or a recorded build-id list."""
    from ..session.machine import KERNEL_DSO
    barrier = _prepared
    symbolizer = samples.symbolizer
    if barrier is None or not symbolizer.cache.enabled:
        return
    inline = samples.unwinder is not None and samples.dwarf_inline
    work = []
    for path, bid in sorted(samples.build_ids.items()):
        if path == KERNEL_DSO:
            work.append((KERNEL_COST, path, bid))
        elif path.startswith("/") and bid:
            try:
                cost = os.path.getsize(path)
            except OSError:
                cost = 1 << 20
            work.append((cost, path, bid))
    work.sort(key=lambda item: (-item[0], item[1]))
    for _cost, path, bid in _taken_builds(work, shard):
        try:
            if path == KERNEL_DSO:
                symbolizer.prepare_kernel(bid)
            else:
                symbolizer.prepare(path, bid, inline_names=inline)
        except Exception:       # the run's own lookup meets it again, and says why
            pass
    try:
        barrier.wait(PREPARE_WAIT)
    except Exception:           # a worker died or took too long: go on alone
        pass


def _taken_builds(work: list[tuple[int, str, str]], shard: Shard
                  ) -> Iterator[tuple[int, str, str]]:
    """The items of `work` this worker builds: each the next not yet taken
    when the worker is free (the shared counter); without one (a worker
    run alone), dealt by size to the least loaded worker."""
    taken = _builds_taken
    if taken is not None:
        while True:
            with taken.get_lock():
                i = taken.value
                taken.value = i + 1
            if i >= len(work):
                return
            yield work[i]
    _block, jobs, index = shard
    loads = [0] * jobs
    for item in work:
        w = loads.index(min(loads))
        loads[w] += item[0]
        if w == index:
            yield item


def _release_others() -> None:
    """A worker that stops before the barrier lets the others go on."""
    if _prepared is not None:
        try:
            _prepared.abort()
        except Exception:
            pass


# The kernel's part in the split: parsing a kallsyms costs about what
# indexing a binary of this size does.
KERNEL_COST = 32 << 20


def watch_warnings(pf: PerfFile, samples: SampleSymbolizer) -> None:
    """In a worker: note where its warning lists stand at each block it
    reaches (ClaimedShard.takes), for worker_warnings."""
    _watched[:] = [pf.warnings, samples.symbolizer.warnings]
    _marks.clear()


def worker_warnings(pf: PerfFile, samples: SampleSymbolizer) -> list[WorkerWarning]:
    """A worker's warnings, each with its list (the file's, then the
    symbolizer's, as a one-process run prints them) and the block the
    worker was at when it was said (watch_warnings; -1 before the first)."""
    out = []
    for which, said in enumerate((pf.warnings, samples.symbolizer.warnings)):
        at, block = 0, -1
        for j, text in enumerate(said):
            while at < len(_marks) and _marks[at][1 + which] <= j:
                block = _marks[at][0]
                at += 1
            out.append((which, block, text))
    return out



def merged_warnings(parts: Iterable[Iterable[WorkerWarning]]) -> list[str]:
    """The workers' warnings (each worker's worker_warnings, in worker
    order), each once, in the order a one-process run says them: the
    file's, then the symbolizer's, each by the block it was first said in
    (which worker took a block varies from run to run; this order does
    not)."""
    rows = sorted((which, block, w, j, text)
                  for w, part in enumerate(parts)
                  for j, (which, block, text) in enumerate(part))
    out, seen = [], set()
    for _, _, _, _, text in rows:
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def event_names(pf: PerfFile, tracepoints: bool = True) -> set[str]:
    """The file's distinct event names (tracepoints left out on request)."""
    from ..format import AttrType
    pf.resolve_event_names()
    return {ea.name for ea in pf.attrs
            if tracepoints or ea.attr["type"] != AttrType.TRACEPOINT}
