"""Devices with a planted bug: a background loop that raises. simkit must surface the
exception as itself, saying where (which device) and when (virtual time, seed, fuzz
step), from the library, ``simkit fuzz`` and ``simkit replay`` alike.
``simkit fuzz --variant tests.fuzz.crash_variants:a1_loop_raises``.
"""

import trio

from simkit.client import Device
from simkit.sim.variant import Variant


class LoopRaises(Device):
    """Device a1's background loop raises ``KeyError`` one virtual second after it starts."""

    crashing = ("a1",)

    async def run(self) -> None:
        if self.device_id not in self.crashing:
            return await super().run()
        await trio.sleep(1)
        raise KeyError(f"a bug in {self.device_id}'s loop")


class TwoLoopsRaise(LoopRaises):
    """Devices a1 and b1 both raise, at the same instant."""

    crashing = ("a1", "b1")


a1_loop_raises = Variant("a1-loop-raises", "a1's background loop raises", device=LoopRaises)
two_loops_raise = Variant(
    "two-loops-raise", "a1's and b1's loops raise at once", device=TwoLoopsRaise
)
