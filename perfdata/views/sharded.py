"""A command's output made by several worker processes, printed in order.

perf script works on one core.  Here the samples are dealt out in blocks of
`block` SAMPLE records (in delivery order): worker i of N decodes, symbolizes
and formats the blocks i, i + N, i + 2N, ... and follows every other record
only for the session (threads, maps), which costs little; this process
prints the blocks in order, so the bytes are those of one process.  Each
worker reads the file itself (forked after the imports: cheap), and stops at
the same place when the file is damaged: what comes before the fault is
printed, then the fault is raised here.
"""
import multiprocessing

from ..format.errors import PerfDataError


def _worker(conn, produce, share):
    """Runs in a forked process: produce(share) yields (block index, text)
    for the blocks of share and returns (SAMPLE records seen, warnings,
    error or None); each goes to this process as it comes."""
    try:
        it = produce(share)
        while True:
            try:
                k, text = next(it)
            except StopIteration as stop:
                total, warnings, error = stop.value
                break
            conn.send(("block", k, text))
        conn.send(("end", total, warnings, error))
    except BaseException as exc:       # never a traceback from a worker
        conn.send(("end", None, [], ("Exception", "%s: %s" % (type(exc).__name__, exc),
                                     None, None)))
    finally:
        conn.close()


def describe_error(exc):
    """A PerfDataError as plain data (it crosses a pipe)."""
    return (type(exc).__name__, exc.message, exc.path, exc.offset)


def run_sharded(jobs, block, produce, write):
    """Run produce(share) for share = (block, jobs, index) in `jobs` forked
    processes; write(text) the blocks in order here.  Returns the workers'
    warnings, each once, in the order first seen; raises the error a worker
    met (after writing every block before it)."""
    ctx = multiprocessing.get_context("fork")
    conns, procs = [], []
    try:
        for index in range(jobs):
            recv, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_worker, args=(send, produce, (block, jobs, index)),
                               daemon=True)
            proc.start()
            send.close()
            conns.append(recv)
            procs.append(proc)
        pending = [None] * jobs

        def message(w):
            if pending[w] is None:
                try:
                    pending[w] = conns[w].recv()
                except EOFError:        # the worker died without a word
                    pending[w] = ("end", None, [], ("Exception", "worker %d died" % w,
                                                    None, None))
            return pending[w]

        k, last, errors = 0, None, []
        while last is None or k <= last:
            w = k % jobs
            m = message(w)
            if m[0] == "block":
                if m[1] == k:
                    write(m[2])
                    pending[w] = None
                # (m[1] > k: block k had nothing for its worker to print)
            else:
                total = m[1]
                last = max(last or 0, total // block if total is not None else k)
            k += 1
        warnings, seen = [], set()
        for w in range(jobs):
            m = message(w)
            if m[0] == "block":
                # Every worker walks the same records: a block past the end
                # another worker met means they disagree; never drop it.
                raise RuntimeError("worker %d has block %d after the end of the samples"
                                   % (w, m[1]))
            for text in m[2]:
                if text not in seen:
                    seen.add(text)
                    warnings.append(text)
            if m[3] is not None:
                errors.append(m[3])
        if errors:
            kind, message_text, path, offset = errors[0]
            from ..format import errors as reader_errors
            cls = getattr(reader_errors, kind, None)
            if not (isinstance(cls, type) and issubclass(cls, PerfDataError)):
                raise RuntimeError(message_text)
            error = cls(message_text, path=path, offset=offset)
            error.warnings = warnings           # printed by the caller before the error
            raise error
        return warnings
    finally:
        for conn in conns:
            conn.close()
        for proc in procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()

