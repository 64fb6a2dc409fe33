"""The Dask side of a fleet run: a client, and the tree reduction.

By default a local cluster of worker processes, one per core with one
thread each (symbolizing is Python: processes, not threads, run it in
parallel); or the cluster whose scheduler is at --scheduler ADDRESS (its
workers must be able to import perfdata, and see the files at the same
paths).  Each file is one task; partial results are merged pairwise, by
tasks on the workers, level by level (a tree: log2(N) levels, no worker
receives every partial); the client receives the last one.
"""
from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any, Iterator

from . import FleetError

if TYPE_CHECKING:
    from types import ModuleType

    import distributed

    from .partials import Partial

FAN_IN = 2


def _import_dask() -> ModuleType:
    try:
        import distributed
    except ImportError:
        from ..extras import install_hint
        raise FleetError("fleet commands need Dask: %s (dask[distributed])"
                         % install_hint("fleet"))
    return distributed


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None,
                timeout: float = 10.0) -> Iterator[distributed.Client]:
    """A connected distributed.Client, closed (with its local cluster) at exit."""
    distributed = _import_dask()
    for name in ("distributed", "distributed.client", "distributed.comm",
                 "distributed.core", "distributed.batched", "tornado"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    cluster = None
    if scheduler:
        probe(scheduler, timeout)
        client = _connect(distributed, scheduler, timeout)
    else:
        n = workers or os.cpu_count() or 1
        try:
            cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1,
                                               processes=True, dashboard_address=None,
                                               silence_logs=logging.CRITICAL)
            client = distributed.Client(cluster, set_as_default=False)
        except Exception as exc:
            if cluster is not None:
                cluster.close()
            raise FleetError("cannot start a local Dask cluster: %s" % exc)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _connect(distributed: ModuleType, address: str, timeout: float) -> distributed.Client:
    """A Client of the scheduler at `address`, or FleetError.  A Client that
    fails to connect complains from its finalizer (a traceback on stderr):
    that is silenced while it is collected."""
    import gc
    import sys
    failure = None
    hook = sys.unraisablehook
    sys.unraisablehook = lambda unraisable: None
    try:
        try:
            return distributed.Client(address, timeout=timeout, set_as_default=False)
        except Exception as exc:    # OSError, TimeoutError, a peer that is no scheduler
            text = str(exc).strip()
            failure = text.splitlines()[0] if text else type(exc).__name__
            del exc
        gc.collect()
    finally:
        sys.unraisablehook = hook
    raise FleetError("cannot reach the Dask scheduler at %s: %s" % (address, failure))


_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")


def probe(address: str, timeout: float) -> None:
    """Refuse an address that is not a scheduler's, or a tcp:// one nothing
    listens at, before a Client is made (a Client that fails to connect
    prints a traceback from its finalizer)."""
    import socket
    scheme, sep, rest = address.partition("://")
    if not sep or scheme not in _SCHEMES or not rest:
        raise FleetError("--scheduler %s: not a Dask address (tcp://HOST:PORT)" % address)
    if scheme != "tcp":
        return
    port: str | int                     # the text, then the number
    host, colon, port = rest.rpartition(":")
    host = host.strip("[]")
    try:
        port = int(port.rstrip("/"))
    except ValueError:
        raise FleetError("--scheduler %s: not a Dask address (tcp://HOST:PORT)" % address)
    try:
        socket.create_connection((host or "127.0.0.1", port), timeout=timeout).close()
    except OSError as exc:
        raise FleetError("cannot reach the Dask scheduler at %s: %s"
                         % (address, exc.strerror or exc))


def tree_reduce(client: distributed.Client, paths: list[str], kind: str, options: dict[str, Any],
                fan_in: int = FAN_IN) -> Partial:
    """The merged Partial of `paths`: one file_partial task per file, then
    merge_partials tasks over groups of `fan_in`, level by level."""
    return tree_result(submit_tree(client, paths, kind, options, fan_in))


def submit_tree(client: distributed.Client, paths: list[str], kind: str,
                options: dict[str, Any], fan_in: int = FAN_IN, name: str = ""
                ) -> distributed.Future:
    """The future of tree_reduce's result, its tasks submitted (several
    trees run at once: `fleet diff`'s two sets); name: a part of the
    tasks' keys."""
    import uuid
    from .partials import file_partial, merge_partials
    run = uuid.uuid4().hex[:12] + name     # keys unique on a shared scheduler
    futures = client.map(file_partial, paths, kind=kind, options=options, pure=False,
                         key=["perfdata-%s-%s-file-%d" % (kind, run, i) for i in range(len(paths))])
    level = 0
    while len(futures) > 1:
        level += 1
        nxt = []
        for i in range(0, len(futures), fan_in):
            group = futures[i:i + fan_in]
            if len(group) == 1:
                nxt.append(group[0])
            else:
                nxt.append(client.submit(merge_partials, *group, pure=False,
                                         key="perfdata-%s-%s-merge-%d-%d" % (kind, run, level, i)))
        futures = nxt
    return futures[0]


def tree_result(future: distributed.Future) -> Partial:
    """The Partial a submit_tree future gives, or FleetError."""
    try:
        result: Partial = future.result()
        return result
    except Exception as exc:    # a worker lost, or one that cannot import perfdata
        text = str(exc).strip()
        raise FleetError("the Dask cluster failed: %s: %s" % (
            type(exc).__name__, text.splitlines()[0] if text else "(no message)"))
