"""What revoking a device promises: its later writes are applied nowhere, a rotation
follows, and what others write afterwards is sealed under a key it never held."""

from simkit.invariants.base import Invariant
from simkit.protocol.ids import graph_id_for, storage_key
from simkit.protocol.records import open_record
from simkit.sim.clock import relay_time_ms

# How long a flagged ``rotationRequired`` may stay set, in simulated seconds during
# which an eligible rotator is up and can reach the relay: the revoker rotates at
# once; if it is gone, the other holders take over one after another (docs/client.md,
# "Who rotates").
ROTATION_BOUND_S = 300.0
# Retries of one sealed push end within this (client rule 10: five attempts, backoff
# capped at 30 s, each attempt with its own timeout).
RETRY_WINDOW_S = 90.0


class Revocation(Invariant):
    """A device that keeps writing after its revocation (a stolen device, with a relay
    that still accepts it) never has those writes applied by another device.

    Writes the thief stamps before the revocation (its clock is behind) pass the
    revoked-at check by design: the protocol cannot tell them from honest ones
    (docs/findings.md, F3). They are counted in ``known``.
    """

    name = "revocation"
    observes = ("app.write",)

    def __init__(self) -> None:
        self.known: list[str] = []
        self._late: list[tuple[str, str, str, dict]] = []  # (writer, storage key, record, data)

    def observe(self, world, event):
        device = world.relay.state.devices.get(event.actor)
        at = None if device is None else device.revoked_at
        if at is None or relay_time_ms(event.t) < at:
            return ()
        fields = event.fields
        if fields["rev"] < at:
            self.known.append(f"F3: {event.actor} backdated {fields['recordId']}")
        elif fields["data"]:
            sk = storage_key(fields["graph"], world.slots[event.actor].member)
            self._late.append((event.actor, sk, fields["recordId"], fields["data"]))
        return ()

    def final(self, world):
        out = []
        for writer, sk, rid, data in self._late:
            for device_id, slot in sorted(world.slots.items()):
                if device_id == writer or slot.device is None:
                    continue
                for held in slot.device.store.rows(f"records:{sk}").values():
                    if held["data"] == data:
                        out.append(
                            self.violation(
                                world,
                                f"{device_id} applied {rid}, written by {writer} after its "
                                "revocation",
                                graph=sk,
                                devices=(device_id, writer),
                                records=(rid,),
                            )
                        )
        return out


def rotators(world, sk: str) -> list[str]:
    """Devices that can honour ``rotationRequired`` on a graph now: up, unrevoked,
    holding the latest key, permitted to rotate, and able to reach the relay."""
    graph = world.relay.state.graphs.get(sk)
    if graph is None or not world.relay_up:
        return []
    out = []
    for device_id in world.followers(sk):
        slot = world.slots[device_id]
        granted = world.host.capabilities(slot.member, sk[2:]) if sk.startswith("g:") else None
        if granted is not None and "rotate" not in granted:
            continue
        ring = slot.device.keyring(graph_id_for(sk, slot.member))
        if graph.latest_epoch in ring.keys and world.network.connected(device_id):
            out.append(device_id)
    return out


class RotationOwed(Invariant):
    """A graph flagged ``rotationRequired`` (a revoked device held its keys) is rotated
    within ``ROTATION_BOUND_S`` of simulated time during which an eligible rotator was
    up and could reach the relay, and is never still flagged at quiescence while one
    exists. Honest relay only: a malicious one can refuse every rotation."""

    name = "rotation-owed"
    honest_only = True

    def __init__(self) -> None:
        self._owed: dict[str, float] = {}  # storage key -> seconds owed with a rotator up
        self._last_t: float | None = None

    def step(self, world):
        now = world.now()
        elapsed = 0.0 if self._last_t is None else now - self._last_t
        self._last_t = now
        out = []
        for sk, graph in sorted(world.relay.state.graphs.items()):
            if not graph.rotation_required:
                self._owed.pop(sk, None)
                continue
            able = rotators(world, sk)
            if sk in self._owed and able:
                self._owed[sk] += elapsed
            self._owed.setdefault(sk, 0.0)
            if self._owed[sk] > ROTATION_BOUND_S:
                out.append(self._late(world, sk, able, f"for {self._owed[sk]:.0f} s"))
                self._owed[sk] = float("-inf")  # reported once
        return out

    def final(self, world):
        out = []
        for sk, graph in sorted(world.relay.state.graphs.items()):
            able = rotators(world, sk)
            if graph.rotation_required and able and self._owed.get(sk) != float("-inf"):
                out.append(self._late(world, sk, able, "at quiescence"))
        return out

    def _late(self, world, sk, able, how_long):
        return self.violation(
            world,
            f"rotationRequired is still set {how_long} while {', '.join(able)} could rotate",
            graph=sk,
            devices=tuple(able),
        )


class PostRevocationConfidentiality(Invariant):
    """After a revocation, what other devices write is sealed under an epoch the
    revoked device holds no key for, once the bound has passed: the rotation's bound,
    then one key recheck (a writer learns of the new epoch before its next push),
    then one push's retries. A write accepted later under a key the revoked device
    holds is readable by whoever holds that device. Honest relay only."""

    name = "post-revocation-confidentiality"
    honest_only = True
    observes = ("poke",)

    def __init__(self) -> None:
        self._read: dict[str, int] = {}  # storage key -> log entries read
        self._accepted: dict[str, float] = {}  # storage key -> first poke since last read

    def observe(self, world, event):
        self._accepted.setdefault(event.fields["graph"], event.t)
        return ()

    def step(self, world):
        out = []
        bound_ms = 1000 * (ROTATION_BOUND_S + world.config.recheck_s + RETRY_WINDOW_S)
        revoked = [
            (d, dev.revoked_at)
            for d, dev in sorted(world.relay.state.devices.items())
            if dev.revoked_at is not None
        ]
        for sk, t in sorted(self._accepted.items()):
            graph = world.relay.state.graphs.get(sk)
            start = self._read.get(sk, 0)
            self._read[sk] = len(graph.log)
            late = [(d, at) for d, at in revoked if relay_time_ms(t) > at + bound_ms]
            if not late:
                continue
            for entry in graph.log[start:]:
                row = graph.records.get(entry.record_id)
                if row is None or row.seq != entry.seq or row.e is None:
                    continue
                for device_id, _ in late:
                    if row.e in _epochs_held(world, device_id, sk) and not _by_revoked(
                        world, sk, row, revoked
                    ):
                        out.append(
                            self.violation(
                                world,
                                f"{entry.record_id} (seq {entry.seq}) was sealed under epoch "
                                f"{row.e}, which revoked {device_id} holds",
                                graph=sk,
                                devices=(device_id,),
                                records=(entry.record_id,),
                            )
                        )
        self._accepted.clear()
        return out


def _epochs_held(world, device_id: str, sk: str) -> set[int]:
    """The epochs a device holds keys for, running or crashed (its durable store)."""
    slot = world.slots.get(device_id)
    if slot is None:
        return set()
    store = slot.device.snapshot() if slot.device is not None else (slot.snapshot or {})
    ring = store.get("keyring", {}).get(sk) or {}
    return {int(epoch) for epoch in ring.get("keys", {})}


def _by_revoked(world, sk: str, row, revoked) -> bool:
    """Whether a revoked device signed the row (a thief's own write is no leak)."""
    for slot in world.slots.values():
        ring = slot.device.keyring(graph_id_for(sk, slot.member)) if slot.device else None
        key = ring.keys.get(row.e) if ring else None
        if key is not None:
            try:
                signer = open_record(key, sk, row.record_id, row.n, row.c).get("d")
            except ValueError:
                return False
            return signer in {d for d, _ in revoked}
    return False
