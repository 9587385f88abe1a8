"""epochs: keys only move forward, reach who they must, and never reach the revoked."""

from simkit.invariants.base import Invariant


class Epochs(Invariant):
    """A device's epoch only moves up; devices holding an epoch hold the same key; at
    quiescence every eligible active device holds a wrap for the latest epoch unless a
    rotation named it in ``excluding`` (or, in approve mode, no holder approved it).
    Honest relay only: a forked or rolled-back relay serves different key histories."""

    name = "epochs"
    honest_only = True

    def __init__(self) -> None:
        self._epochs: dict[tuple[str, str], int] = {}
        self.rotations = Rotations()

    def step(self, world):
        out = []
        for device_id, slot in sorted(world.slots.items()):
            if slot.device is None:
                continue
            for graph_id in slot.device.graphs():
                ring = slot.device.keyring(graph_id)
                current = max(ring.current, slot.device.relay_epoch(graph_id))
                before = self._epochs.get((device_id, graph_id), 0)
                if current < before:
                    out.append(
                        self.violation(
                            world,
                            f"{device_id}'s epoch went down from {before} to {current}",
                            graph=graph_id,
                            devices=(device_id,),
                        )
                    )
                self._epochs[device_id, graph_id] = current
        return out + self._agreement(world)

    def _agreement(self, world):
        keys: dict[tuple[str, int], tuple[bytes, str]] = {}
        out = []
        for device_id, slot in sorted(world.slots.items()):
            if slot.device is None or slot.revoked:
                continue
            for sk, wire in sorted(slot.device.store.rows("keyring").items()):
                for epoch, key in sorted(wire["keys"].items()):
                    first = keys.setdefault((sk, int(epoch)), (key, device_id))
                    if first[0] != key:
                        out.append(
                            self.violation(
                                world,
                                f"{device_id} and {first[1]} hold different keys for epoch {epoch}",
                                graph=sk,
                                devices=(first[1], device_id),
                            )
                        )
        return out

    def final(self, world):
        self.rotations.read(world)
        out = []
        for sk, graph in sorted(world.relay.state.graphs.items()):
            latest = graph.latest_epoch
            if not latest:
                continue
            holders = graph.wraps.get(latest, {})
            for device in world.relay._eligible(sk):
                slot = world.slots.get(device.device_id)
                if slot is None or slot.revoked or device.device_id in holders:
                    continue
                if device.device_id in self.rotations.excluded(sk, latest):
                    continue
                if _pending_approval(world, device.device_id, sk, latest):
                    continue
                out.append(
                    self.violation(
                        world,
                        f"{device.device_id} holds no wrap for the latest epoch {latest} "
                        "and was not excluded",
                        graph=sk,
                        devices=(device.device_id,),
                    )
                )
        return out


class KeyWraps(Invariant):
    """The relay never overwrites a stored wrap, and a revoked device never receives a
    key of an epoch minted after its revocation (whatever else the relay does).

    Overwrites are read from the relay's events in order (several can happen within
    one step): a grant to a device that holds a wrap of that epoch, and did not
    discard it, overwrote it.
    """

    name = "key-wraps"

    def __init__(self) -> None:
        self._held: set[tuple[str, int, str]] = set()  # learnt in event order
        self._read = 0
        self.rotations = Rotations()

    def step(self, world):
        self.rotations.read(world)
        out = []
        held = self._held
        for event in world.trace.since(self._read):
            name = event.fields.get("name") if event.kind == "event" else None
            if name == "keys.discard":
                held.discard(
                    (event.fields["graph"], event.fields["epoch"], event.fields["device_id"])
                )
            elif name == "keys.grant":
                for device_id in event.fields["devices"]:
                    key = (event.fields["graph"], event.fields["epoch"], device_id)
                    if key in held:
                        out.append(
                            self.violation(
                                world,
                                f"a grant overwrote the wrap of epoch {key[1]} for {device_id}",
                                trace_seq=event.seq,
                                graph=key[0],
                                devices=(device_id,),
                            )
                        )
                    held.add(key)
        self._read = len(world.trace)
        self._held = _wraps(world)  # rotations and revocations since: from the state itself
        for device_id, device in sorted(world.relay.state.devices.items()):
            if device.revoked_at is None:
                continue
            for sk, epoch, minted_at in self.rotations.minted():
                holders = world.relay.state.graphs[sk].wraps.get(epoch, {})
                if minted_at is not None and minted_at > device.revoked_at and device_id in holders:
                    out.append(
                        self.violation(
                            world,
                            f"revoked {device_id} holds a wrap of epoch {epoch}, minted after "
                            "its revocation",
                            graph=sk,
                            devices=(device_id,),
                        )
                    )
        return out


def _wraps(world) -> set[tuple[str, int, str]]:
    return {
        (sk, epoch, device_id)
        for sk, graph in world.relay.state.graphs.items()
        for epoch, holders in graph.wraps.items()
        for device_id in holders
    }


class Rotations:
    """The ``graph.rotate`` events read so far: when each epoch was minted, whom it excluded."""

    def __init__(self) -> None:
        self._minted: dict[tuple[str, int], tuple[int | None, set[str]]] = {}
        self._read = 0

    def read(self, world) -> None:
        for event in world.trace.since(self._read):
            if event.kind == "event" and event.fields.get("name") == "graph.rotate":
                key = (event.fields["graph"], event.fields["epoch"])
                self._minted[key] = (event.clock_ms, set(event.fields["excluded"]))
        self._read = len(world.trace)

    def minted(self):
        return [(sk, epoch, at) for (sk, epoch), (at, _) in sorted(self._minted.items())]

    def excluded(self, storage_key: str, epoch: int) -> set[str]:
        return self._minted.get((storage_key, epoch), (None, set()))[1]


def _pending_approval(world, device_id: str, storage_key: str, latest: int) -> bool:
    """In approve mode a device that no holder of the graph's latest key approved is
    blocked on purpose (never granted; named in excluding at the next rotation)."""
    if world.config.approval_mode != "approve":
        return False
    holders = world.relay.state.graphs[storage_key].wraps.get(latest, {})
    return not any(
        (world.slots[h].device.pin(device_id) or {}).get("state") == "approved"
        for h in sorted(holders)
        if h in world.slots and world.slots[h].device is not None
    )
