"""World snapshots: a driven world at quiescence, copied whole, continued in the copy.

A world between two steps (``WorldDriver``: time frozen, every task blocked) is more
than its data: each device's run loop, each timer and each request in flight is a
Trio task suspended at an ``await``, a coroutine frame Python can neither copy nor
pickle. Rebuilding those tasks from saved data would make a world that resembles the
original, with its own task order and its own wake-ups, not the same world. So a
snapshot is taken where all of it lives: the process. ``copy_world`` forks it (the
kernel copies pages only as either side writes them), the copy continues the world
from exactly where it stood (every party's state, the clocks, the random draws, the
relay's store, the ledger, the invariants' and models' state, and Trio's scheduler),
runs the caller's continuation, sends back its result and exits; the original waits
for it and goes on as if nothing had happened. A continuation in the copy gives the
same trace and the same verdicts as the same steps in the original
(``tests/fuzz/test_snapshot.py``).

The copy runs while the original's Trio thread waits inside a step, blocked on the
copy's answer: the two share Trio's wake-up socket and epoll instance, so they must
never wait on them at the same time, and never do. What a snapshot cannot hold: a
world in the middle of a step (``SnapshotError``), a platform without ``fork``
(``SnapshotUnavailable``); and it never leaves the machine: the portable form of a
world is its recipe (world parameters and steps), which a worker elsewhere replays
once and snapshots there (docs/checking.md).
"""

import os
import pickle
import sys
import threading
import traceback

from simkit.errors import SimkitError


class SnapshotError(SimkitError):
    """A world that cannot be copied now (it is not at quiescence)."""


class SnapshotUnavailable(SnapshotError):
    """This platform has no ``fork``: worlds are rebuilt from their recipe instead."""


class CopyFailed(SimkitError):
    """The copy failed: its continuation raised (the message carries the traceback), it
    died unanswered, or the fork itself failed."""


def available() -> bool:
    return hasattr(os, "fork")


def copy_world(driver, continuation, *args):
    """``continuation(driver, *args)`` run on a copy of ``driver``'s world as it stands
    now; its result (pickled back), or ``CopyFailed`` with what it raised. The world
    in ``driver`` is left exactly as it was."""
    if not available():
        raise SnapshotUnavailable("world snapshots need os.fork (Linux, macOS)")
    if threading.current_thread() is driver._thread:
        raise SnapshotError("a world cannot be copied from inside one of its own steps")
    if driver.busy or not driver.clock.frozen:
        raise SnapshotError("a world cannot be copied in the middle of a step (not quiescent)")
    lock = _entry_lock(driver._token)
    outcome = driver.between_steps(_fork, lock, driver, continuation, args)
    if isinstance(outcome, _Failed):
        raise CopyFailed(outcome.text)
    return outcome


class _Failed:
    def __init__(self, text: str) -> None:
        self.text = text


def _fork(lock, driver, continuation, args):
    """In the world's Trio thread, between steps: fork. The copy hands the world to a
    new controlling thread and lets its Trio loop go on; the original blocks here (its
    loop does not poll) until the copy has answered and exited. What goes wrong here is
    simkit's (no pipe, no fork, an answer cut short), never the world's: it comes back as
    ``_Failed``, not as an exception raised inside the world."""
    sys.stdout.flush()
    sys.stderr.flush()
    # The caller's thread holds Trio's entry-queue lock until just after the call that
    # brought us here was queued: a copy forked before it let go would inherit the lock
    # held by a thread it does not have, and its first call into the world would hang.
    with lock:
        try:
            read, write = os.pipe()
        except OSError as exc:
            return _Failed(f"no pipe for a world's copy: {exc}")
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(read)
            os.close(write)
            return _Failed(f"the world could not be copied (fork): {exc}")
    if pid == 0:  # the copy: this thread is now its only one
        os.close(read)
        threading.Thread(target=_continue, args=(driver, continuation, args, write)).start()
        return None
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        data = answer.read()
    os.waitpid(pid, 0)
    try:
        return pickle.loads(data) if data else _Failed(f"the copy (pid {pid}) died unanswered")
    except Exception as exc:
        return _Failed(f"the copy's answer (pid {pid}) does not read back: {exc}")


def _entry_lock(token):
    queue = getattr(token, "_reentry_queue", None)
    lock = getattr(queue, "lock", None)
    if lock is None:
        raise SnapshotUnavailable(
            "this Trio's token has no _reentry_queue.lock (simkit holds it across fork)"
        )
    return lock


def _continue(driver, continuation, args, write: int) -> None:
    """The copy's controlling thread: run the continuation, answer, exit at once (no
    interpreter shutdown: the copy shares the original's files and buffers)."""
    driver.busy = False  # the original's call that forked does not go on in the copy
    try:
        try:
            result = continuation(driver, *args)
        except BaseException:  # everything reaches the original, as text
            result = _Failed(traceback.format_exc())
        try:
            data = pickle.dumps(result)
        except Exception:
            data = pickle.dumps(_Failed(f"the copy's result does not pickle: {result!r}"))
        with os.fdopen(write, "wb") as answer:
            answer.write(data)
    finally:
        os._exit(0)
