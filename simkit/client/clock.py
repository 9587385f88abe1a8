"""The device's view of time: its own (possibly skewed) wall clock, and waiting.

A device reads time only through ``now_ms`` and waits only through ``sleep``, so
under simulation both run on Trio's virtual clock.
"""

from typing import Protocol

import trio

from simkit.realtime import epoch_ms


class Clock(Protocol):
    def now_ms(self) -> int:
        """The device's wall-clock reading in epoch milliseconds."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""
        ...


class SystemClock:
    """The real default: the OS wall clock and Trio's sleep."""

    def now_ms(self) -> int:
        return epoch_ms()

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)
