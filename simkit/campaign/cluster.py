"""The Dask cluster a campaign runs on: an embedded ``LocalCluster`` (one
single-threaded worker process per core) or an existing scheduler's.

One thread per worker because a chunk is pure Python: threads in one process would
share one interpreter lock, processes each get a core. A LocalCluster's processes
start with Ctrl-C ignored, so that Ctrl-C reaches the campaign alone, which stops
its chunks at their next example and reports what they found (a terminal sends it
to the whole process group, which would kill the workers mid-chunk).
"""

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator

from simkit.errors import InputError

CONNECT_S = 10.0


class ClusterError(InputError):
    """No Dask scheduler answers at the address given."""


def cores() -> int:
    """The cores this process may run on (one worker each)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


@contextlib.contextmanager
def connect(workers: int | None = None, scheduler: str | None = None) -> Iterator[object]:
    """A ``distributed.Client``: of the scheduler at ``scheduler``, or of a
    LocalCluster of ``workers`` processes (default: one per core) closed on exit."""
    from distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_S)
        except (OSError, ValueError) as exc:
            raise ClusterError(
                f"--scheduler {scheduler}: no Dask scheduler to connect to ({exc}); start one "
                "with `dask scheduler` (docs/campaigns.md)"
            ) from None
        with client:
            yield client
        return
    with _without_ctrl_c():
        cluster = LocalCluster(
            n_workers=workers or cores(),
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # any free port: the default 8787 may be taken
            silence_logs=logging.ERROR,
        )
    with cluster, Client(cluster) as client:
        yield client


@contextlib.contextmanager
def _without_ctrl_c():
    """Ignore SIGINT while child processes start: they inherit the setting (and a
    nanny passes it on to the workers it restarts)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class DaskCluster:
    """The campaign driver's view of a Dask cluster (``connect``'s client): where a
    chunk runs, how the campaign stops its chunks, which failures lose a chunk."""

    local = False

    def __init__(self, client) -> None:
        from distributed import KilledWorker

        self.client, self.address = client, str(client.scheduler.address)
        self.lost: tuple[type[BaseException], ...] = (KilledWorker,)

    def workers(self) -> dict[str, int]:
        return dict(sorted(self.client.nthreads().items()))

    def submit(self, fn, *args):
        return self.client.submit(fn, *args, pure=False)

    def stop_event(self, name: str):
        """A Dask ``Event`` every chunk polls (``simkit.campaign.chunk``)."""
        from distributed import Event

        return Event(name, client=self.client)

    def wait_any(self, futures, timeout: float) -> None:
        from distributed import wait

        with contextlib.suppress(TimeoutError):
            wait(list(futures), timeout=timeout, return_when="FIRST_COMPLETED")


class LocalPool:
    """Worker processes forked from this one, for ``simkit fuzz`` on every core: no
    scheduler to start and nothing to import again (a LocalCluster's workers take about
    a second to be ready, as long as many mutants take to be found; docs/lab/performance.md,
    round 9). The campaign driver runs on it as on a Dask cluster."""

    local = True

    def __init__(self, workers: int) -> None:
        import concurrent.futures
        import multiprocessing

        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self._stop = context.Event()
        # examples and steps the chunks have begun, counted as they go: a chunk sends its
        # counts back only when it ends, and the first runs the whole budget
        self.begun = context.Array("q", 2)
        self._workers = workers
        self.address = f"{workers} local processes"
        self.lost: tuple[type[BaseException], ...] = (concurrent.futures.BrokenExecutor,)
        self.pool = concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=context, initializer=_local_worker,
            initargs=(self._stop, self.begun),
        )  # fmt: skip

    def workers(self) -> dict[str, int]:
        return {f"process {i}": 1 for i in range(self._workers)}

    def submit(self, fn, *args):
        return self.pool.submit(fn, *args)

    def stop_event(self, name: str):
        """The one event every process of the pool was handed (its name is not needed)."""
        return self._stop

    def wait_any(self, futures, timeout: float) -> None:
        import concurrent.futures

        concurrent.futures.wait(list(futures), timeout, concurrent.futures.FIRST_COMPLETED)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


LOCAL_STOP = "local"  # a chunk's ``stop`` on a ``LocalPool``: the event its process holds
_local_stop = None  # that event, in a ``LocalPool`` process
_local_begun = None  # and the pool's count of examples and steps begun


def _local_worker(stop, begun) -> None:
    """A ``LocalPool`` process starts: Ctrl-C is the driver's to handle (it stops the
    chunks at their next example), and the stop event and the count are kept for
    ``local_stop`` and ``local_begun``."""
    global _local_stop, _local_begun
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _local_stop, _local_begun = stop, begun


def local_stop():
    """The stop event of the ``LocalPool`` this process belongs to (None: none)."""
    return _local_stop


def local_begun():
    """The ``LocalPool``'s shared count of examples and steps begun (None: none)."""
    return _local_begun


@contextlib.contextmanager
def local_pool(workers: int) -> Iterator[LocalPool]:
    pool = LocalPool(workers)
    try:
        yield pool
    finally:
        pool.close()
