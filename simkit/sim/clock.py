"""Wall clocks on top of Trio's virtual time: skewed, drifting, stepping devices and
the relay's reference clock.

A reading is ``epoch + offset + elapsed * (1 + drift) + the steps taken so far``.
Virtual time is rounded to whole microseconds first, and drift is a whole number
of ppm, so the rest is exact integer arithmetic: a reading never depends on how
a float happened to round.
"""

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
        stepped = sum(j.step_ms for j in self.jumps if j.at <= t)
        return self.epoch_ms + self.offset_ms + elapsed_ms + stepped

    def now_ms(self) -> int:
        return self.reading_at(trio.current_time())

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds * _PPM / (_PPM + self.drift_ppm))


def relay_clock(epoch_ms: int = DEFAULT_EPOCH_MS) -> Callable[[], int]:
    """The relay's clock: the reference, without offset, drift or jumps."""
    return DeviceClock(epoch_ms).now_ms
