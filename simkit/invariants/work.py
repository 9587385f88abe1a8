"""work: a client does not amplify its own writes.

A client that converges can still be broken: one that syncs in a tight loop, writes a
record again each time it receives it, or publishes checkpoints that cause more
checkpoints costs the relay and every device without end. The bound is generous
(about four times what an honest fleet of simkit's client does under every fault the
fuzzer draws) and about rates, not constants:

- every log entry of an application record is one write some client made (an
  application's write, its re-stamp after a clock repair, a member's other client, a
  forged record): the log never holds more application versions than were written;
- a device publishes its checkpoint at a boundary at most twice (once, and once more
  after a crash between the write and its bookkeeping) per record store: an import
  wipes the store, and the device folds the log and publishes again;
- a device's requests stay within ``REQUESTS_PER_UNIT`` per unit of work: a write in
  any graph it follows, five seconds of virtual time (one poll), plus a margin.
"""

from collections import Counter

from simkit.invariants.base import Invariant
from simkit.protocol.ids import storage_key

REQUESTS_PER_UNIT = 40
UNIT_S = 5.0  # a poll interval
MARGIN_UNITS = 10


class Work(Invariant):
    name = "work"
    judges_events = True
    observes = (
        "app.write",
        "other.write",
        "record.restamped",
        "checkpoint.published",
        "app.reimport",
    )

    def __init__(self) -> None:
        self._writes: Counter = Counter()  # storage key -> versions written
        self._total = 0
        self._published: Counter = Counter()  # (device, graph, boundary) -> publications
        self._checkpoints: dict[str, set[str]] = {}  # storage key -> checkpoint record IDs
        self._flagged: set[str] = set()
        self._stores: Counter = Counter()  # device -> record stores it wiped (imports)

    def observe(self, world, event):
        fields = event.fields
        if fields["name"] == "app.reimport":
            self._stores[event.actor] += 1
            return ()
        sk = storage_key(fields["graph"], world.slots[event.actor].member)
        self._writes[sk] += 1
        self._total += 1
        if fields["name"] != "checkpoint.published":
            return ()
        self._checkpoints.setdefault(sk, set()).add(fields["recordId"])
        key = (event.actor, self._stores[event.actor], sk, fields["seq"])
        self._published[key] += 1
        if self._published[key] != 3:
            return ()
        return (
            self.violation(
                world,
                f"{event.actor} published its checkpoint at boundary {fields['seq']} of {sk} "
                "three times (model: once per boundary)",
                event.seq,
                graph=sk,
                devices=(event.actor,),
            ),
        )

    def step(self, world):
        units = self._total + world.now() / UNIT_S + MARGIN_UNITS
        out = []
        for device_id in sorted(world.slots):
            sent = world.costs.sent[device_id]
            if device_id not in self._flagged and sent > REQUESTS_PER_UNIT * units:
                self._flagged.add(device_id)
                out.append(
                    self.violation(
                        world,
                        f"{device_id} sent {sent} requests for {self._total} writes in "
                        f"{world.now():.0f} s (bound: {REQUESTS_PER_UNIT} per write or "
                        f"{UNIT_S:g} s)",
                        devices=(device_id,),
                    )
                )
        return out

    def final(self, world):
        out = []
        for sk, graph in sorted(world.relay.state.graphs.items()):
            if sk not in world.spec.graphs:
                continue  # a rogue client's graph outside the fleet: nobody's writes
            checkpoints = self._checkpoints.get(sk, set())
            versions = sum(1 for entry in graph.log if entry.record_id not in checkpoints)
            forged = sum(1 for f in world.ledger.forged if f[0] == sk)
            written = self._writes[sk] - sum(
                n for (_, _, s, _), n in self._published.items() if s == sk
            )
            if versions > written + forged:
                out.append(
                    self.violation(
                        world,
                        f"the log of {sk} holds {versions} application versions for "
                        f"{written} writes and {forged} forged records",
                        graph=sk,
                    )
                )
        return out
