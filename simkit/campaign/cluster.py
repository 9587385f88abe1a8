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
