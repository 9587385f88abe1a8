"""One seed decides Trio's scheduling too (ARCHITECTURE.md, determinism rule 4).

Trio shuffles each batch of runnable tasks with a module-level ``random.Random``
(``trio._core._run._r``). For Hypothesis, Trio also has a switch,
``_ALLOW_DETERMINISTIC_SCHEDULING``: when it is on, every batch is first sorted by
task creation order and then shuffled with ``_r``. pytest-trio turns the switch on
and hands ``_r`` to Hypothesis to seed. We use the same mechanism: turn the switch
on, seed ``_r`` from the world's seed, and put both back afterwards.
"""

import contextlib
import gc
import hashlib
import random
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

import trio

from simkit.errors import SimkitError
from simkit.protocol.entropy import SeededEntropy
from simkit.sim.clock import VirtualClock
from simkit.sim.failure import surfaced

T = TypeVar("T")
Seed = int | bytes | str

_FLAG = "_ALLOW_DETERMINISTIC_SCHEDULING"


class DeterminismUnavailable(SimkitError):
    """This Trio lacks the deterministic-scheduling hooks that simkit relies on."""


def _trio_run_module():
    """Trio's run loop module, checked for the two hooks we drive."""
    from trio._core import _run

    if not hasattr(_run, _FLAG) or not isinstance(getattr(_run, "_r", None), random.Random):
        raise DeterminismUnavailable(
            f"trio {trio.__version__} has no trio._core._run.{_FLAG} and _r "
            "(the hooks Trio provides for Hypothesis); simkit cannot make its "
            "scheduler deterministic with this version"
        )
    return _run


def scheduler_seed(seed: Seed) -> int:
    """The integer that seeds Trio's scheduler: a labelled fork of the world's seed,
    so it never correlates with the draws a world makes from the same seed."""
    return int.from_bytes(SeededEntropy(seed).fork("trio-scheduler").token_bytes(32), "big")


@contextlib.contextmanager
def deterministic_trio(seed: Seed) -> Iterator[None]:
    """Within this block, every ``trio.run`` schedules tasks as a function of ``seed``.

    Restores Trio's switch and the state of ``_r`` on exit, so nesting this (or
    running under Hypothesis, which also seeds ``_r``) leaves no trace behind.
    """
    run = _trio_run_module()
    previous_flag = getattr(run, _FLAG)
    previous_state = run._r.getstate()
    # Touching Trio's private scheduler RNG is the documented Hypothesis mechanism.
    setattr(run, _FLAG, True)
    run._r.seed(scheduler_seed(seed))
    try:
        yield
    finally:
        setattr(run, _FLAG, previous_flag)
        run._r.setstate(previous_state)


def scheduler_state() -> str:
    """A digest of where Trio's seeded shuffle stands (``simkit.check.digest``)."""
    return hashlib.sha256(repr(_trio_run_module()._r.getstate()).encode()).hexdigest()


@contextlib.contextmanager
def collecting_rarely() -> Iterator[None]:
    """Within this block, the cyclic garbage collector runs a hundred times less often.

    A world holds millions of long-lived objects (stores, rosters, the trace), and
    with the default thresholds each full collection walks all of them: at 1,000
    devices that was half the wall time. Almost everything a world frees is freed
    by reference counting, so collecting cycles rarely costs little memory.
    """
    before = gc.get_threshold()
    gc.set_threshold(50_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*before)


def run_virtual(
    async_fn: Callable[..., Awaitable[T]],
    *args: object,
    seed: Seed,
    clock: VirtualClock | None = None,
) -> T:
    """``trio.run(async_fn, *args)`` under virtual time, scheduled from ``seed``.

    The clock is a ``VirtualClock`` (a fresh one unless given): it starts at 0 and
    jumps to the next deadline whenever every task is blocked, so a simulated day
    costs only the work done in it. An exception raised inside reaches the caller as
    itself, never as an exception group, with notes saying where and when
    (``simkit.sim.failure``).
    """
    clock = clock or VirtualClock()
    with deterministic_trio(seed), collecting_rarely():
        try:
            return trio.run(async_fn, *args, clock=clock)
        except BaseException as exc:
            failure = surfaced(exc, f"seed {seed!r}, virtual time {clock.current_time():.3f} s")
        raise failure
