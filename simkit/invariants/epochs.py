"""epochs: keys only move forward, reach who they must, and never reach the revoked."""

from simkit.invariants.base import Invariant


class Epochs(Invariant):
    """A device's epoch only moves up; a stored wrap is never overwritten; devices
    holding an epoch hold the same key; at quiescence every eligible active device
    holds a wrap for the latest epoch unless a rotation named it in ``excluding``; a
    revoked device never receives a key of an epoch minted after its revocation."""

    name = "epochs"

    def __init__(self) -> None:
        self._epochs: dict[tuple[str, str], int] = {}
        self._wraps: dict[tuple[str, int, str], str] = {}
        self._minted: dict[tuple[str, int], tuple[int, set[str]]] = {}  # -> (relay ms, excluded)
        self._read = 0  # trace events already read

    def _read_rotations(self, world) -> None:
        for event in world.trace.since(self._read):
            if event.kind == "event" and event.fields.get("name") == "graph.rotate":
                key = (event.fields["graph"], event.fields["epoch"])
                self._minted[key] = (event.clock_ms, set(event.fields["excluded"]))
        self._read = len(world.trace)

    def step(self, world):
        self._read_rotations(world)
        out = []
        for device_id, slot in sorted(world.slots.items()):
            if slot.device is None:
                continue
            for graph_id in slot.device.graphs():
                current = max(
                    slot.device.keyring(graph_id).current, slot.device.relay_epoch(graph_id)
                )
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
        wraps = {}
        for sk, graph in sorted(world.relay.state.graphs.items()):
            for epoch, holders in sorted(graph.wraps.items()):
                for device_id, wrapped in sorted(holders.items()):
                    wraps[sk, epoch, device_id] = wrapped
                    if self._wraps.get((sk, epoch, device_id), wrapped) != wrapped:
                        out.append(
                            self.violation(
                                world,
                                f"the wrap of epoch {epoch} for {device_id} was overwritten",
                                graph=sk,
                                devices=(device_id,),
                            )
                        )
        self._wraps = wraps
        return out + self._agreement(world) + self._revoked(world)

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

    def _revoked(self, world):
        out = []
        for device_id, device in sorted(world.relay.state.devices.items()):
            if device.revoked_at is None:
                continue
            for (sk, epoch), (at, _) in sorted(self._minted.items()):
                holders = world.relay.state.graphs[sk].wraps.get(epoch, {})
                if at is not None and at > device.revoked_at and device_id in holders:
                    out.append(
                        self.violation(
                            world,
                            f"revoked {device_id} holds a wrap of epoch {epoch}, minted "
                            "after its revocation",
                            graph=sk,
                            devices=(device_id,),
                        )
                    )
        return out

    def final(self, world):
        self._read_rotations(world)
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
                if device.device_id in self._minted.get((sk, latest), (0, set()))[1]:
                    continue
                if self._pending_approval(world, device.device_id, sk, latest):
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

    @staticmethod
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
