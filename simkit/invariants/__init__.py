"""simkit.invariants: named checkers over a world's state and trace.

``Monitor(world, honest)`` holds one instance of each applicable invariant:
``step()`` after every step, ``final()`` at quiescence. Each returns violations
naming the invariant, graph, devices, records and trace position.
"""

from simkit.invariants.alarms import BOUND_S, AlarmCompleteness, AlarmSoundness
from simkit.invariants.base import Invariant, Violation
from simkit.invariants.blindness import Blindness
from simkit.invariants.convergence import Convergence, LastWriteWins, NoLostWrite
from simkit.invariants.epochs import Epochs, KeyWraps
from simkit.invariants.liveness import Liveness
from simkit.invariants.log import SeqAndLog
from simkit.invariants.paging import Paging
from simkit.invariants.revocation import Revocation

ALL = (
    Convergence,
    LastWriteWins,
    NoLostWrite,
    SeqAndLog,
    Epochs,
    KeyWraps,
    Blindness,
    AlarmSoundness,
    AlarmCompleteness,
    Liveness,
    Revocation,
    Paging,
)
NAMES = tuple(cls.name for cls in ALL)


class Monitor:
    """The invariants that apply to a world: all of them with an honest relay; those
    that hold whatever the relay does (and alarm-completeness) with a malicious one."""

    def __init__(self, honest: bool) -> None:
        self.invariants = [
            cls()
            for cls in ALL
            if (honest or not cls.honest_only) and not (honest and cls is AlarmCompleteness)
        ]

    @property
    def names(self) -> list[str]:
        return [inv.name for inv in self.invariants]

    def step(self, world) -> list[Violation]:
        return [v for inv in self.invariants for v in inv.step(world)]

    def final(self, world) -> list[Violation]:
        return [v for inv in self.invariants for v in (*inv.step(world), *inv.final(world))]


__all__ = ["ALL", "BOUND_S", "NAMES", "Invariant", "Monitor", "Violation"]
