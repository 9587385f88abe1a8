"""simkit.invariants: named checkers over a world's state and trace.

``Monitor(honest)`` holds one instance of each applicable invariant: ``step()``
after every step, ``final()`` at quiescence. Both first hand each trace event
written since the last call to the invariants that observe it and to the world's
behaviour coverage (one pass, no rescans). Each returns violations naming the
invariant, graph, devices, records and trace position.
"""

from simkit.invariants.alarms import AlarmCompleteness, AlarmSoundness
from simkit.invariants.approval import ApprovalGate
from simkit.invariants.base import Invariant, Violation, event_key
from simkit.invariants.blindness import Blindness
from simkit.invariants.blobs import BlobPolicies
from simkit.invariants.compat import LogUnverified, NoPartition, PersistedState
from simkit.invariants.convergence import Convergence, LastWriteWins, NoLostWrite
from simkit.invariants.epochs import Epochs, KeyWraps
from simkit.invariants.forgery import Forgery
from simkit.invariants.liveness import Liveness
from simkit.invariants.log import SeqAndLog
from simkit.invariants.model import AgreesWithDeviceModel, AgreesWithRelayModel
from simkit.invariants.paging import Paging
from simkit.invariants.revocation import PostRevocationConfidentiality, Revocation, RotationOwed
from simkit.invariants.secrecy import Secrecy
from simkit.invariants.work import Work

ALL = (
    Convergence,
    LastWriteWins,
    NoLostWrite,
    SeqAndLog,
    Epochs,
    KeyWraps,
    ApprovalGate,
    Blindness,
    Secrecy,
    AlarmSoundness,
    AlarmCompleteness,
    Liveness,
    Revocation,
    RotationOwed,
    PostRevocationConfidentiality,
    BlobPolicies,
    Forgery,
    Paging,
    AgreesWithRelayModel,
    AgreesWithDeviceModel,
    Work,
    NoPartition,
    LogUnverified,
    PersistedState,
)
NAMES = tuple(cls.name for cls in ALL)


class Monitor:
    """The invariants that apply to a world: all of them with an honest relay; those
    that hold whatever the relay does with a malicious one."""

    def __init__(
        self, honest: bool, only: tuple[str, ...] | None = None, observers: tuple = ()
    ) -> None:
        """``only``: just these invariants (a scenario's ``expect.invariants``);
        ``observers``: more readers of every event (``observe(event)``), such as a
        scenario's expectations."""
        self.invariants = [
            cls()
            for cls in ALL
            if (honest or not cls.honest_only) and (only is None or cls.name in only)
        ]
        self._observers: dict[str, list[Invariant]] = {}
        for invariant in self.invariants:
            for key in invariant.observes:
                self._observers.setdefault(key, []).append(invariant)
        self._read = 0
        self._readers = observers

    def relay_turned(self) -> None:
        """The relay turned malicious mid-run: from now on only the invariants that
        hold whatever the relay does judge (what ran before stands)."""
        self.invariants = [inv for inv in self.invariants if not inv.honest_only]
        for key, observing in list(self._observers.items()):
            self._observers[key] = [inv for inv in observing if not inv.honest_only]

    @property
    def names(self) -> list[str]:
        return [inv.name for inv in self.invariants]

    def _observe(self, world) -> list[Violation]:
        out = []
        observers, readers = self._observers, (world.coverage, world.situations, *self._readers)
        trace = world.trace
        for event in trace.since(self._read):
            for reader in readers:
                reader.observe(event)
            for invariant in observers.get(event_key(event), ()):
                out.extend(invariant.observe(world, event))
        self._read = len(trace)
        if trace.streaming:
            trace.release(self._read)  # every reader has it; the file keeps it
        return out

    def step(self, world) -> list[Violation]:
        out = self._observe(world)
        out += [v for inv in self.invariants for v in inv.step(world)]
        self._forget(world)
        return out

    def final(self, world) -> list[Violation]:
        out = self._observe(world)
        out += [v for inv in self.invariants for v in (*inv.step(world), *inv.final(world))]
        self._forget(world)
        return out

    @staticmethod
    def _forget(world) -> None:
        """Drop what the world kept for one check, read by now or judged by no invariant
        of this monitor (a bench's monitor runs none): a long run's memory stays flat. A
        simulated day world kept every request it sent for ``secrecy`` while no invariant
        drained them: 172 MiB at 2 h, 506 MiB at 8 h (docs/lab/performance.md)."""
        world.ledger.served.clear()
        channels = getattr(world, "channels", None)
        if channels is not None:
            channels.drain()


__all__ = ["ALL", "NAMES", "Invariant", "Monitor", "Violation"]
