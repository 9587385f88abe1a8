"""What revoking a device promises: its later writes are applied nowhere, a rotation
follows, and what others write afterwards is sealed under a key it never held."""

from simkit.invariants.base import Invariant, pin_state
from simkit.protocol.ids import graph_id_for, storage_key
from simkit.protocol.records import open_record
from simkit.sim.clock import relay_time_ms

# Retries of one sealed push end within this (client rule 10: five attempts, backoff
# capped at 30 s, each attempt with its own timeout).
RETRY_WINDOW_S = 90.0


def rotation_bound_s(world, sk: str) -> float:
    """How long a flagged ``rotationRequired`` may stay set, in simulated seconds during
    which an eligible rotator is up and can reach the relay: the revoker rotates at
    once; if it cannot, each device takes its turn ``rotate_after_s`` after the one
    before it (docs/client.md, "Who rotates"), having seen the flag within one key
    recheck; then one push's retries."""
    config = world.config
    if config.rotate_after_s is None:
        return float("inf")
    active = [d for d in world.relay.state.devices.values() if d.revoked_at is None]
    turns = config.rotate_after_s * (len(active) + 1)
    return config.recheck_s + turns + RETRY_WINDOW_S


class Revocation(Invariant):
    """A device that keeps writing after its revocation (a stolen device, with a relay
    that still accepts it) never has those writes applied by another device.

    Writes the thief stamps before the revocation (its clock is behind) pass the
    revoked-at check by design: the protocol cannot tell them from honest ones
    (docs/findings.md, F3). So does a write a device applied while a rolled-back or
    forked relay served it a roster that hides the revocation: client rule 2 judges by
    the roster the relay serves, and nothing else tells a device of a revocation
    (docs/findings.md, F42; the device meets the rollback in its log). Both are
    counted in ``known``.
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
                    if held["data"] == data and _revocation_hidden(world, device_id, writer):
                        self.known.append(f"F42: {writer}'s revocation hidden from {device_id}")
                    elif held["data"] == data:
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


def _revocation_hidden(world, device_id: str, writer: str) -> bool:
    """Whether a malicious mode served ``device_id`` a second relay (a rollback, a
    fork) on which ``writer`` is not revoked: its roster hides the revocation."""
    for mode in world.adversary.modes_ever:
        shadow = getattr(mode, "shadow", None)
        if shadow is None or not mode.aims_at(device_id):
            continue
        entry = shadow.state.devices.get(writer)
        if entry is not None and entry.revoked_at is None:
            return True
    return False


def rotators(world, sk: str) -> list[str]:
    """Devices that can honour ``rotationRequired`` on a graph now: up, unrevoked,
    holding the latest key, permitted to rotate, able to reach the relay and, in
    ``approve`` mode, having approved every current holder of the latest key (any
    other device would strand one, so it does not take a turn)."""
    graph = world.relay.state.graphs.get(sk)
    if graph is None or not world.relay_up:
        return []
    holders = set(graph.wraps.get(graph.latest_epoch, {}))
    out = []
    for device_id in world.followers(sk):
        slot = world.slots[device_id]
        granted = world.host.capabilities(slot.member, sk[2:]) if sk.startswith("g:") else None
        if granted is not None and "rotate" not in granted:
            continue
        device = slot.device
        if graph.latest_epoch not in device.keyring(graph_id_for(sk, slot.member)).keys:
            continue
        if not world.network.connected(device_id):
            continue
        if world.config.approval_mode == "approve" and not all(
            pin_state(device, h) == "approved"
            for h in sorted(holders - {device_id})
            if h in world.relay.state.devices and world.relay.state.devices[h].revoked_at is None
        ):
            continue
        out.append(device_id)
    return out


class RotationOwed(Invariant):
    """A graph a revoked device held a key of is rotated within ``rotation_bound_s`` of
    simulated time during which an eligible rotator was up and could reach the relay,
    and is never still owed at quiescence while one exists. Owed: the relay flags it
    ``rotationRequired``, or (judged from what was stored, not from the relay's flag,
    so a relay that forgets to flag it is caught by what follows) the revoked device
    held a wrap of it at the step before its revocation and a key of it in its own
    keyring, and no newer epoch was minted since. Honest relay only: a malicious one
    can refuse every rotation. A relay that drops ``excluding`` (an older one,
    Versioning rule 3) refuses a rotation that needs it as incomplete: owed, but not
    late, until the relay takes one. A step may span an outage (a "sync now" on a
    partitioned device waits it out): a rotator counts as up only from when it (and the
    relay) could last reach the other again, not from the step before (F36)."""

    name = "rotation-owed"
    honest_only = True
    observes = ("fault", "crash")

    def __init__(self) -> None:
        self._owed: dict[str, float] = {}  # storage key -> seconds owed with a rotator up
        self._last_t: float | None = None
        self._back: dict[str, float] = {}  # device (or "relay") -> when it last came back
        self._holding: dict[str, set[str]] = {}  # device -> graphs it held a wrap of
        self._revoked: set[str] = set()
        self._due: dict[str, int] = {}  # storage key -> the newest epoch a revoked device held

    def observe(self, world, event):
        fields = event.fields
        if event.kind == "fault" and fields.get("fault") == "heal":
            for device_id in fields.get("devices", ()):
                self._back[device_id] = event.t
        elif event.kind == "crash" and fields.get("what") in ("relay-restart", "device-restart"):
            self._back[event.actor] = event.t
        return ()

    def _up_for(self, able: list[str], since: float, now: float) -> float:
        """How long, of the time since the last step, some rotator of ``able`` was up."""
        relay = self._back.get("relay", 0.0)
        return now - min(max(since, relay, self._back.get(d, 0.0)) for d in able)

    def owes(self, world, sk: str, graph) -> bool:
        """Whether ``graph`` owes a rotation now."""
        if sk in world.ledger.dropped_exclusions:
            return False  # refused as an older relay must: owed but not late
        if graph.latest_epoch > self._due.get(sk, graph.latest_epoch):
            del self._due[sk]  # rotated since the revocation
        return graph.rotation_required or sk in self._due

    def _revocations(self, world) -> None:
        """Graphs a device revoked since the last step held a key of; then who holds
        a wrap of which graph now."""
        state = world.relay.state
        for device_id, device in sorted(state.devices.items()):
            if device.revoked_at is None or device_id in self._revoked:
                continue
            self._revoked.add(device_id)
            for sk in sorted(self._holding.get(device_id, ())):
                held = _epochs_held(world, device_id, sk)
                if held:  # owed: an epoch above every one it holds
                    self._due[sk] = max(self._due.get(sk, 0), *held)
        self._holding = {}
        for sk, graph in state.graphs.items():
            for holders in graph.wraps.values():
                for device_id in holders:
                    self._holding.setdefault(device_id, set()).add(sk)

    def step(self, world):
        now = world.now()
        last = now if self._last_t is None else self._last_t
        self._last_t = now
        self._revocations(world)
        out = []
        for sk, graph in sorted(world.relay.state.graphs.items()):
            if not self.owes(world, sk, graph):
                self._owed.pop(sk, None)
                continue
            able = rotators(world, sk)
            if sk in self._owed and able:
                self._owed[sk] += max(0.0, self._up_for(able, last, now))
            self._owed.setdefault(sk, 0.0)
            if self._owed[sk] > rotation_bound_s(world, sk):
                out.append(self._late(world, sk, able, f"for {self._owed[sk]:.0f} s"))
                self._owed[sk] = float("-inf")  # reported once
        return out

    def final(self, world):
        out = []
        self._revocations(world)
        for sk, graph in sorted(world.relay.state.graphs.items()):
            able = rotators(world, sk)
            if self.owes(world, sk, graph) and able and self._owed.get(sk) != float("-inf"):
                out.append(self._late(world, sk, able, "at quiescence"))
        return out

    def _late(self, world, sk, able, how_long):
        return self.violation(
            world,
            f"a rotation is still owed (a revoked device held its key) {how_long} while "
            f"{', '.join(able)} could rotate",
            graph=sk,
            devices=tuple(able),
        )


class PostRevocationConfidentiality(Invariant):
    """After a revocation and the rotation that follows it, what other devices write is
    sealed under an epoch the revoked device holds no key for, once one key recheck
    (a writer learns of the new epoch before its next push) and one push's retries
    have passed since the rotation. A write accepted later under a key the revoked
    device holds is readable by whoever holds that device. Whether the rotation
    comes at all is ``rotation-owed``'s to check. Honest relay only."""

    name = "post-revocation-confidentiality"
    honest_only = True
    observes = ("poke", "graph.rotate")

    def __init__(self) -> None:
        self._read: dict[str, int] = {}  # storage key -> log entries read
        self._accepted: dict[str, float] = {}  # storage key -> first poke since last read
        self._mints: dict[str, list[int]] = {}  # storage key -> relay times of new epochs

    def observe(self, world, event):
        graph = event.fields["graph"]
        if event.fields["name"] == "graph.rotate":
            self._mints.setdefault(graph, []).append(relay_time_ms(event.t))
        else:
            self._accepted.setdefault(graph, event.t)
        return ()

    def step(self, world):
        out = []
        grace_ms = 1000 * (world.config.recheck_s + RETRY_WINDOW_S)
        revoked = {
            d: dev.revoked_at
            for d, dev in sorted(world.relay.state.devices.items())
            if dev.revoked_at is not None
        }
        for sk, t in sorted(self._accepted.items()):
            graph = world.relay.state.graphs[sk]
            start = self._read.get(sk, 0)
            self._read[sk] = len(graph.log)
            accepted_ms = relay_time_ms(t)
            late = [
                device_id
                for device_id, at in revoked.items()
                if any(
                    at < minted and minted + grace_ms < accepted_ms
                    for minted in self._mints.get(sk, ())
                )
            ]
            for entry in graph.log[start:] if late else ():
                row = graph.records.get(entry.record_id)
                if row is None or row.seq != entry.seq or row.e is None:
                    continue
                if _signer(world, sk, row) in revoked:
                    continue  # a thief's own write is no leak
                if row.c in world.ledger.forged_ciphertexts:
                    continue  # a non-conforming client's forgery: no honest writer sealed it
                for device_id in late:
                    if row.e in _epochs_held(world, device_id, sk):
                        out.append(
                            self.violation(
                                world,
                                f"{entry.record_id} (seq {entry.seq}) was sealed under epoch "
                                f"{row.e}, which revoked {device_id} holds, after the rotation "
                                "that followed its revocation",
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


def _signer(world, sk: str, row) -> str | None:
    """The device that signed a row, read with any key a device of the world holds."""
    for _, slot in sorted(world.slots.items()):
        ring = slot.device.keyring(graph_id_for(sk, slot.member)) if slot.device else None
        key = ring.keys.get(row.e) if ring else None
        if key is not None:
            try:
                return open_record(key, sk, row.record_id, row.n, row.c).get("d")
            except ValueError:
                return None
    return None
