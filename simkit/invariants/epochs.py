"""epochs: keys only move forward, reach who they must, and never reach the revoked."""

from simkit.errors import CryptoError
from simkit.invariants.base import Invariant, pin_state
from simkit.protocol.ids import graph_id_for
from simkit.protocol.wrap import unwrap_graph_key
from simkit.sim.clock import relay_time_ms


class Epochs(Invariant):
    """A device's epoch only moves up; devices holding an epoch hold the same key; at
    quiescence every eligible active device holds a wrap for the latest epoch unless a
    rotation named it in ``excluding`` (or, in approve mode, no holder approved it).
    Honest relay only: a forked or rolled-back relay serves different key histories.

    One split is the protocol's own doing and is counted in ``known`` instead
    (docs/findings.md, F1): a rotation that lost the race to mint an epoch is taken
    as a grant, which gives the devices the winner excluded the loser's key. The
    relay's event shows it: a grant whose poster is among the devices it grants to
    (a holder never grants to itself), or whose wraps carry another key than the one
    minted for that epoch (a holder grants the key it holds).

    A device learns of a wrap only from a GET keys answer, so the older-epoch check
    reads the network's trace too: which GET keys answers each device received, and
    where in the relay's order each was served (docs/client.md, "When a grant
    arrives")."""

    name = "epochs"
    honest_only = True
    observes = ("graph.rotate", "keys.grant", "request", "delivery", "response", "fault")

    def __init__(self) -> None:
        self._epochs: dict[tuple[str, str], int] = {}
        self.rotations = Rotations()
        self._lost_races: set[tuple[str, int]] = set()  # (graph, epoch) a rotation lost
        self.known: list[str] = []
        self.fetches = KeyFetches()

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

    def observe(self, world, event):
        if event.kind != "event":
            self.fetches.note(world, event)
            return ()
        fields = event.fields
        self.fetches.stored(world, event)
        if fields["name"] == "graph.rotate":
            self.rotations.note(event)
        elif fields["device_id"] in fields["devices"] or _not_the_minted_key(world, fields):
            self._lost_races.add((fields["graph"], fields["epoch"]))
        return ()

    def _agreement(self, world):
        keys: dict[tuple[str, int], tuple[bytes, str]] = {}
        out = []
        for device_id, slot in sorted(world.slots.items()):
            if slot.device is None or slot.revoked:
                continue
            for sk, wire in sorted(slot.device.store.rows("keyring").items()):
                for epoch, key in sorted(wire["keys"].items()):
                    first = keys.setdefault((sk, int(epoch)), (key, device_id))
                    if first[0] != key and (sk, int(epoch)) in self._lost_races:
                        self.known.append(f"F1: {device_id} and {first[1]}, epoch {epoch}")
                    elif first[0] != key:
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
        out = []
        for sk, graph in sorted(world.relay.state.graphs.items()):
            latest = graph.latest_epoch
            if not latest:
                continue
            holders = graph.wraps.get(latest, {})
            for device in world.relay.eligible(sk):
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
            out += self._older_epochs(world, sk, latest)
        return out + self._keys_match_wraps(world)

    def _keys_match_wraps(self, world) -> list:
        """Each device holds, for every epoch the relay keeps a wrap of for it, the key that
        wrap carries (client rules 12 and 13: a wrap that opens is what the device adopts,
        not a key it minted and lost the race with). A wrap that does not open is client rule 12's
        business; a device without a wrap is checked by the latest- and older-epoch checks."""
        out = []
        for device_id, slot in sorted(world.slots.items()):
            if slot.device is None or slot.revoked:
                continue
            for sk, graph in sorted(world.relay.state.graphs.items()):
                if sk not in slot.device.store.rows("keyring"):
                    continue
                keys = slot.device.keyring(graph_id_for(sk, slot.member)).keys
                for epoch, key in sorted(keys.items()):
                    wrapped = graph.wraps.get(epoch, {}).get(device_id)
                    if wrapped is None:
                        continue
                    try:
                        carried = unwrap_graph_key(wrapped, slot.device.keys.wrap_key)
                    except CryptoError:
                        continue
                    if carried != key:
                        out.append(
                            self.violation(
                                world,
                                f"{device_id} holds a key for epoch {epoch} other than the one "
                                "its wrap at the relay carries",
                                graph=sk,
                                devices=(device_id,),
                            )
                        )
        return out

    def _older_epochs(self, world, sk: str, latest: int) -> list:
        """A device holding the latest key also holds every older one that another
        device could grant it: a key gap is granted epoch by epoch (spec: Link a device)
        and a wrap that does not open is discarded and granted again (client rule 12),
        or what was written under that epoch stays unreadable to it for good.

        Holders owe the wrap; the device takes it from its next GET keys answer, and
        nothing in the protocol says when that comes (a poke is content-free; a device
        holding the latest key asks every ``recheck_s``, or when an op needs the epoch,
        client rule 4). So a wrap the relay stored after the last GET keys answer the device
        received is owed to nobody yet, provided it carries the epoch's key and was
        stored within one recheck and one keys fetch's retries of now: the device has
        not been told of it. A wrap served to the device that it did not adopt still
        counts, and so does one older than that window: a device that never asks again
        is caught in any world that runs that long after the grant."""
        rings = {}
        for device in world.relay.eligible(sk):
            slot = world.slots.get(device.device_id)
            if slot is not None and slot.device is not None and not slot.revoked:
                rings[device.device_id] = slot.device.keyring(graph_id_for(sk, slot.member)).keys
        out = []
        for device_id, keys in sorted(rings.items()):
            if latest not in keys:
                continue
            for epoch in range(1, latest):
                granters = [d for d, held in sorted(rings.items()) if epoch in held]
                if epoch in keys or not granters:
                    continue
                if device_id in self.rotations.excluded(sk, epoch):
                    continue
                if _pending_approval(world, device_id, sk, epoch):
                    continue
                if self._in_flight(world, device_id, sk, epoch, rings[granters[0]][epoch]):
                    continue
                out.append(
                    self.violation(
                        world,
                        f"{device_id} holds the latest epoch {latest} but not epoch {epoch}, "
                        f"which {granters[0]} holds: what was sealed under it stays unreadable",
                        graph=sk,
                        devices=(device_id, granters[0]),
                    )
                )
        return out

    def _in_flight(self, world, device_id: str, sk: str, epoch: int, key: bytes) -> bool:
        """The relay holds a wrap of ``epoch`` for the device that carries ``key`` (the
        granters'), stored after the last GET keys answer the device received and
        recently enough that its next keys check may not have come back yet."""
        wrapped = world.relay.state.graphs[sk].wraps.get(epoch, {}).get(device_id)
        since = self.fetches.unseen(device_id, sk, epoch)
        if (
            wrapped is None
            or since is None
            or world.clock.current_time() - since > _patience(world)
        ):
            return False
        try:
            carried = unwrap_graph_key(wrapped, world.slots[device_id].device.keys.wrap_key)
        except CryptoError:
            return False  # client rule 12: the device discards it and a holder grants again
        return carried == key


def _patience(world) -> float:
    """How long a device holding the latest key may take to take up a new wrap: one
    ``recheck_s``, then a GET keys whose every attempt times out and backs off."""
    backoff, timeout = world.config.backoff, world.network.profile.timeout_ms / 1000
    return world.config.recheck_s + backoff.attempts * (timeout + backoff.cap_s)


class KeyFetches:
    """Which wraps each device has been told of, read from the trace in order: the
    relay's seq of each stored wrap (a grant or a mint), and of the delivery of the last
    GET keys answer each device received for each graph (a lost answer tells nothing;
    a duplicated request's second delivery answers nobody; a request that timed out is
    forgotten)."""

    def __init__(self) -> None:
        self._asked: dict[tuple[str, int], str] = {}  # (device, xid) -> graph, GET keys only
        self._served: dict[tuple[str, int], tuple[str, int]] = {}  # -> (graph, delivery seq)
        self._answered: dict[tuple[str, str], int] = {}  # (device, graph) -> delivery seq
        self._stored: dict[tuple[str, int, str], tuple[int, float]] = {}  # -> (seq, time)

    def note(self, world, event) -> None:
        fields = event.fields
        if event.kind == "request":
            key, path = (event.actor, fields["xid"]), fields.get("path", "")
            self._served.pop(key, None)  # a new request under this xid replaces any other
            sk = None
            if fields.get("method") == "GET" and path.count("/") == 3 and path.endswith("/keys"):
                sk = world.graph_requested(event.actor, path)
            if sk is None:
                self._asked.pop(key, None)
            else:
                self._asked[key] = sk
        elif event.kind == "fault":
            if fields.get("fault") == "timeout":
                self._asked.pop((event.actor, fields["xid"]), None)
                self._served.pop((event.actor, fields["xid"]), None)
        elif event.kind == "delivery":
            key = (fields.get("device"), fields.get("xid"))
            if key in self._asked and fields["status"] == 200 and not fields["duplicate"]:
                self._served[key] = (self._asked[key], event.seq)
        else:
            key = (event.actor, fields["xid"])
            self._asked.pop(key, None)
            served = self._served.pop(key, None)
            if served is not None and fields["status"] == 200:
                self._answered[event.actor, served[0]] = served[1]

    def stored(self, world, event) -> None:
        """A grant's or a mint's wraps, at the relay's event."""
        fields = event.fields
        sk, epoch = fields["graph"], fields["epoch"]
        if fields["name"] == "keys.grant":
            devices = fields["devices"]
        else:
            devices = world.ledger.minted.get((sk, epoch), ())
        for device_id in devices:
            self._stored[sk, epoch, device_id] = (event.seq, event.t_us / 1_000_000)

    def unseen(self, device_id: str, sk: str, epoch: int) -> float | None:
        """When the device's wrap of ``epoch`` was stored, if that was after its last GET
        keys was served; else None (a wrap stored before the trace was read counts as
        served)."""
        stored = self._stored.get((sk, epoch, device_id))
        if stored is None or stored[0] < self._answered.get((device_id, sk), -1):
            return None
        return stored[1]


class KeyWraps(Invariant):
    """The relay never overwrites a stored wrap, and a revoked device never receives a
    key of an epoch minted after its revocation (whatever else the relay does).

    Overwrites are read from the relay's events in order (several can happen within
    one step): a grant to a device that holds a wrap of that epoch, and did not
    discard it, overwrote it.
    """

    name = "key-wraps"
    observes = ("keys.discard", "keys.grant", "graph.rotate")

    def __init__(self) -> None:
        self._held: set[tuple[str, int, str]] = set()  # learnt in event order
        self.rotations = Rotations()

    def observe(self, world, event):
        fields, name = event.fields, event.fields["name"]
        if name == "graph.rotate":
            self.rotations.note(event)
        elif name == "keys.discard":
            self._held.discard((fields["graph"], fields["epoch"], fields["device_id"]))
        else:
            for device_id in fields["devices"]:
                key = (fields["graph"], fields["epoch"], device_id)
                if key in self._held:
                    yield self.violation(
                        world,
                        f"a grant overwrote the wrap of epoch {key[1]} for {device_id}",
                        trace_seq=event.seq,
                        graph=key[0],
                        devices=(device_id,),
                    )
                self._held.add(key)

    def step(self, world):
        out = []
        self._held = _wraps(world)  # rotations and revocations since: from the state itself
        for device_id, device in sorted(world.relay.state.devices.items()):
            if device.revoked_at is None:
                continue
            for sk, epoch, minted_at in self.rotations.minted():
                holders = world.relay.state.graphs[sk].wraps.get(epoch, {})
                if minted_at > device.revoked_at and device_id in holders:
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
    """The ``graph.rotate`` events seen so far: when each epoch was minted (on the
    relay's clock, which revocation times are read on), whom it excluded."""

    def __init__(self) -> None:
        self._minted: dict[tuple[str, int], tuple[int, set[str]]] = {}

    def note(self, event) -> None:
        key = (event.fields["graph"], event.fields["epoch"])
        self._minted[key] = (relay_time_ms(event.t), set(event.fields["excluded"]))

    def minted(self):
        return [(sk, epoch, at) for (sk, epoch), (at, _) in sorted(self._minted.items())]

    def excluded(self, storage_key: str, epoch: int) -> set[str]:
        return self._minted.get((storage_key, epoch), (0, set()))[1]


def _pending_approval(world, device_id: str, storage_key: str, latest: int) -> bool:
    """In approve mode a device that no holder of the graph's latest key approved is
    blocked on purpose (never granted; named in excluding at the next rotation). Only
    a holder that may still grant counts: an active device of a current member (one
    whose member left the graph keeps its wrap but grants nothing)."""
    if world.config.approval_mode != "approve":
        return False
    holders = world.relay.state.graphs[storage_key].wraps.get(latest, {})
    granters = {d.device_id for d in world.relay.eligible(storage_key)} & set(holders)
    return not any(
        pin_state(world.slots[h].device, device_id) == "approved"
        for h in sorted(granters)
        if h in world.slots and world.slots[h].device is not None
    )


def _not_the_minted_key(world, grant: dict) -> bool:
    """Whether a grant's wraps carry another key than the one its epoch was minted with
    (simulation only: the world holds every device's wrapping key). Each side is read
    through the first of its devices that is running (a crashed one has no keys)."""
    graph = world.relay.state.graphs.get(grant["graph"])
    holders = graph.wraps.get(grant["epoch"], {}) if graph else {}
    minted = world.ledger.minted.get((grant["graph"], grant["epoch"]), ())
    keys = [_held_key(world, holders, minted), _held_key(world, holders, grant["devices"])]
    return None not in keys and keys[0] != keys[1]


def _held_key(world, holders: dict, device_ids) -> bytes | None:
    """The key the relay's wrap for the first running device of ``device_ids`` holds."""
    for device_id in device_ids:
        slot = world.slots.get(device_id)
        wrapped = holders.get(device_id)
        if slot is None or slot.device is None or wrapped is None:
            continue
        try:
            return unwrap_graph_key(wrapped, slot.device.keys.wrap_key)
        except CryptoError:
            continue
    return None
