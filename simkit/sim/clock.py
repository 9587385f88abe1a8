"""Virtual time for Trio, and the wall clocks on top of it: skewed, drifting, stepping
devices and the relay's reference clock.

A reading is ``epoch + offset + elapsed * (1 + drift) + the steps taken so far``.
Virtual time is rounded to whole microseconds first, and drift is a whole number
of ppm, so the rest is exact integer arithmetic: a reading never depends on how
a float happened to round.
"""

import heapq
import itertools
import math
from collections.abc import Callable, Iterable

import attrs
import trio

from simkit.errors import SimkitError
from simkit.protocol.entropy import SeededEntropy

DEFAULT_EPOCH_MS = 1_767_225_600_000
"""The default world start, 2026-01-01T00:00:00Z, as epoch milliseconds."""

_PPM = 1_000_000


class ClockError(SimkitError, ValueError):
    """A clock parameter breaks its rule (stated in the message)."""


def _require_int(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ClockError(f"{attribute.name} must be an integer, got {value!r}")


def _require_drift(instance: object, attribute: attrs.Attribute, value: int) -> None:
    _require_int(instance, attribute, value)
    if not -_PPM < value < _PPM:
        raise ClockError(f"drift_ppm must be within (-1000000, 1000000), got {value}")


def _require_time(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ClockError(f"{attribute.name} must be a finite virtual time >= 0, got {value!r}")


class VirtualClock(trio.abc.Clock):
    """Trio's clock in a simulation: virtual time that starts at 0 and, whenever no
    task can run, jumps straight to the next wake-up or timer.

    ``MockClock(autojump_threshold=0)`` does the same at a higher price: it jumps in
    one pass of the run loop and wakes the sleepers in the next, and every
    ``trio.sleep`` builds a cancel scope whose expiry Trio delivers as a
    cancellation. Trio asks its clock how long to sleep only when no task is
    runnable, so this clock jumps right there. It keeps one heap of parked sleepers
    (``sleep_until``), which it reschedules directly, and of timers (``call_at``),
    which it calls right there: a timer that wakes nobody costs no pass of the run
    loop and no task switch. Trio's own deadlines (``move_on_after`` and the like)
    keep working: the clock jumps to whichever comes first. While ``frozen``, time
    stands still and the run loop waits for I/O (the fuzz driver freezes time
    between steps).
    """

    def __init__(self) -> None:
        self._now = 0.0
        # heap of [due, order, task or function (None once cancelled), timer args or None]
        self._due: list[list] = []
        self._order = itertools.count()
        self.frozen = False

    def start_clock(self) -> None:
        pass

    def current_time(self) -> float:
        return self._now

    def deadline_to_sleep_time(self, deadline: float) -> float:
        due = self._due
        while True:
            while due and due[0][2] is None:
                heapq.heappop(due)
            t = min(deadline, due[0][0] if due else math.inf)
            if t == math.inf or (self.frozen and t > self._now):
                return math.inf
            self._now = max(self._now, t)
            woke = False
            while due and due[0][0] <= self._now:
                _, _, target, args = heapq.heappop(due)
                if args is None:
                    if target is not None:
                        trio.lowlevel.reschedule(target)
                        woke = True
                else:
                    target(*args)
            # only timers ran: go on to the next instant unless one of them woke a task
            if woke or deadline <= self._now or _tasks_runnable():
                return 0.0

    def park(self, t: float, task: trio.lowlevel.Task) -> list:
        """Put ``task`` in the heap to be rescheduled at ``t``; returns its entry."""
        entry = [t, next(self._order), task, None]
        heapq.heappush(self._due, entry)
        return entry

    def call_at(self, t: float, fn: Callable[..., object], args: tuple) -> None:
        """Call ``fn(*args)`` at virtual time ``t``, from the run loop, not from a task:
        it must not block or raise (``Network.call_at`` wraps it to report errors).
        Timers due at the same time run in the order they were scheduled, before the
        tasks woken at that time."""
        heapq.heappush(self._due, [t, next(self._order), fn, args])


def _tasks_runnable() -> int:
    return trio.lowlevel.current_statistics().tasks_runnable


def virtual_clock() -> VirtualClock:
    """The running Trio clock, which must be a ``VirtualClock`` (``run_virtual`` uses one)."""
    clock = trio.lowlevel.current_clock()
    if not isinstance(clock, VirtualClock):
        raise ClockError(f"simulated time needs a VirtualClock, not {type(clock).__name__}")
    return clock


async def sleep_until(t: float) -> None:
    """``trio.sleep_until(t)`` in simulated time: the task parks in the clock's heap
    (no cancel scope) and wakes once every task runnable at ``t`` has run."""
    entry = virtual_clock().park(t, trio.lowlevel.current_task())

    def abort(_: object) -> trio.lowlevel.Abort:
        entry[2] = None  # cancelled: the clock drops the entry
        return trio.lowlevel.Abort.SUCCEEDED

    await trio.lowlevel.wait_task_rescheduled(abort)


@attrs.frozen
class ClockJump:
    """At virtual time ``at`` (seconds) the wall clock steps by ``step_ms`` (either sign),
    like an NTP step or a user setting the time by hand."""

    at: float = attrs.field(validator=_require_time)
    step_ms: int = attrs.field(validator=_require_int)


def _as_jumps(jumps: Iterable[ClockJump | tuple[float, int]]) -> tuple[ClockJump, ...]:
    steps = [j if isinstance(j, ClockJump) else ClockJump(*j) for j in jumps]
    return tuple(sorted(steps, key=lambda j: j.at))


@attrs.frozen
class DeviceClock:
    """One device's wall clock (the ``simkit.client.clock.Clock`` protocol).

    ``sleep`` waits on the device's monotonic timer, which runs at the same
    drifted rate as its wall clock but ignores jumps, as a real device's timers
    ignore a clock step. ``sleep(s)`` therefore takes ``s / (1 + drift)`` virtual
    seconds.
    """

    epoch_ms: int = attrs.field(default=DEFAULT_EPOCH_MS, validator=_require_int)
    offset_ms: int = attrs.field(default=0, validator=_require_int)
    drift_ppm: int = attrs.field(default=0, validator=_require_drift)
    jumps: tuple[ClockJump, ...] = attrs.field(default=(), converter=_as_jumps)

    @classmethod
    def drawn(
        cls,
        entropy: SeededEntropy,
        *,
        epoch_ms: int = DEFAULT_EPOCH_MS,
        max_offset_ms: int = 0,
        max_drift_ppm: int = 0,
        jumps: Iterable[ClockJump | tuple[float, int]] = (),
    ) -> "DeviceClock":
        """A clock whose offset and drift are uniform draws within ± the given bounds."""
        if max_offset_ms < 0 or max_drift_ppm < 0:
            raise ClockError("max_offset_ms and max_drift_ppm must be >= 0")
        offset = entropy.randbelow(2 * max_offset_ms + 1) - max_offset_ms
        drift = entropy.randbelow(2 * max_drift_ppm + 1) - max_drift_ppm
        return cls(epoch_ms, offset, drift, jumps)

    def reading_at(self, t: float) -> int:
        """The wall-clock reading (epoch ms) at virtual time ``t`` seconds."""
        elapsed_ms = round(t * 1_000_000) * (_PPM + self.drift_ppm) // (_PPM * 1000)
        stepped = sum(j.step_ms for j in self.jumps if j.at <= t) if self.jumps else 0
        return self.epoch_ms + self.offset_ms + elapsed_ms + stepped

    def now_ms(self) -> int:
        return self.reading_at(trio.current_time())

    async def sleep(self, seconds: float) -> None:
        await sleep_until(trio.current_time() + seconds * _PPM / (_PPM + self.drift_ppm))


def relay_clock(epoch_ms: int = DEFAULT_EPOCH_MS) -> Callable[[], int]:
    """The relay's clock: the reference, without offset, drift or jumps."""
    return DeviceClock(epoch_ms).now_ms


def relay_time_ms(t: float, epoch_ms: int = DEFAULT_EPOCH_MS) -> int:
    """What the relay's clock read at virtual time ``t`` (seconds)."""
    return DeviceClock(epoch_ms).reading_at(t)
