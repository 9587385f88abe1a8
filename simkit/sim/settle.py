"""When a world is done: settledness judged from protocol rules, and what counts as
progress while it is not (docs/fuzzing.md, "Quiescence").

Pure functions of a world's state: the honest relay's store, each device's view (its
queue, cursors, keyrings and pins), the directory and the ledger. They change nothing,
so quiescence, the invariants and the tests all ask the same questions of one state.
"""

import bisect

from simkit.client.approval import APPROVED, OBSERVE
from simkit.protocol.ids import graph_id_for
from simkit.relay.records import live_after

STABLE_S = 40.0  # a settled world must also have held still this long


def settled(world) -> bool:
    """Nothing left that the devices can do without a human: no rotation owed on a
    graph somebody follows; no queued write unless it is held for good (its member
    may not write there, or its device is behind an epoch whose key is not coming);
    every unfiltered view caught up with the honest relay, or stopped for good
    before an op under an epoch whose key is not coming (client rule 4: it never
    skips it); no eligible device waiting for a wrap of the latest epoch that a
    holder would grant (linking: the ``epochs`` invariant judges that gap at
    quiescence, and a holder fills it only at its next grants check). A key is
    coming when the relay keeps a wrap of it for the device or a live follower holds
    it and would wrap it (client rule 14's gate: in ``approve`` mode only to a device
    it approved)."""
    graphs = world.relay.state.graphs
    if any(graphs[sk].rotation_required and world.followers(sk) for sk in graphs):
        return False
    if any(_grant_owed(world, sk, graph) for sk, graph in graphs.items()):
        return False
    for slot in world.alive():
        device = slot.device
        for gid in device.graphs():
            if device.pending(gid) and not held_for_good(world, slot, gid):
                return False
        for sk in world.graphs_of(slot.member):
            graph = graphs.get(sk)
            gid = graph_id_for(sk, slot.member)
            if graph is None or not device.unfiltered(gid) or not device.keyring(gid).keys:
                continue
            cursor = device.store.get("cursor", gid, 0)
            if cursor < graph.seq and not _stopped_for_good(world, slot, sk, graph, cursor):
                return False
    return True


def can_write(world, device_id: str, sk: str) -> bool:
    """Whether the relay takes the device's writes to a graph now: its member belongs
    to it and, in a ``g:`` graph, holds ``write``."""
    member = world.slots[device_id].member
    if sk not in world.graphs_of(member):
        return False
    if not sk.startswith("g:"):
        return True
    granted = world.host.capabilities(member, sk[2:])
    return granted is None or "write" in granted


def patience(world) -> float:
    """How long nothing may change before the world is judged stuck: ``drain_s``,
    or, while a graph owes a rotation, every device's turn to honour it
    (docs/client.md, "Who rotates"), whichever is longer."""
    owed = any(g.rotation_required for g in world.relay.state.graphs.values())
    turns = world.config.rotate_after_s
    if not owed or turns is None:
        return world.spec.drain_s
    devices = sum(1 for d in world.relay.state.devices.values() if d.revoked_at is None)
    return max(world.spec.drain_s, world.config.recheck_s + turns * (devices + 1) + STABLE_S)


def progress(world) -> tuple:
    """What changes while the world is still converging: entries logged, epochs and
    wraps, each device's queue, how many log entries each device has pulled and
    read, and which queued writes have been re-stamped after a clock repair.
    Positions are counted in log entries, not seqs: a refused op spends a seq
    (spec: push rules), so a client that re-sends a write the relay refuses for ever
    moves every cursor without anything happening, and must be judged stuck. A
    write re-stamped for the first time is progress (a device hours ahead re-stamps
    its queue one refused push at a time, under a tight rate limit for minutes); the
    same write re-stamped again and again is not."""
    graphs = world.relay.state.graphs
    relay = tuple(
        (sk, len(g.log), g.latest_epoch, sum(len(h) for h in g.wraps.values()))
        for sk, g in sorted(graphs.items())
    )
    devices = tuple(
        (s.device_id, s.device.pending(), tuple(_pulled(graphs, s.device))) for s in world.alive()
    )
    reads = tuple(
        (key, entries_upto(graphs.get(key[1]), after))
        for key, after in sorted(world.ledger.log_reads.items())
    )
    return relay, devices, reads, len(world.ledger.restamped)


def entries_upto(graph, seq: int) -> int:
    """How many of a graph's log entries have a seq at or below ``seq``."""
    return 0 if graph is None else bisect.bisect_right(graph.log, seq, key=lambda e: e.seq)


def _pulled(graphs, device):
    """Per subscription, how many of its graph's log entries the cursor has passed."""
    for sub_key, sub in sorted(device.store.rows("subs").items()):
        cursor = device.store.get("cursor", sub_key, 0)
        yield sub_key, entries_upto(graphs.get(device.storage_key(sub["graph"])), cursor)


def held_for_good(world, slot, graph_id: str) -> bool:
    """A device's queued writes to a graph stay queued: its member may not write
    there (client rule 11), or it is behind the honest relay's latest epoch (client
    rule 5) and that key is not coming."""
    sk = slot.device.storage_key(graph_id)
    if not can_write(world, slot.device_id, sk):
        return True
    graph = world.relay.state.graphs.get(sk)
    if graph is None or graph.latest_epoch <= slot.device.keyring(graph_id).current:
        return False
    return not _key_coming(world, slot, sk, graph, graph.latest_epoch)


def _stopped_for_good(world, slot, sk: str, graph, cursor: int) -> bool:
    """The first live op after ``cursor`` is sealed under an epoch whose key is not
    coming: the view stopped there (client rule 4) stays stopped."""
    row = next(live_after(graph, cursor), None)
    return row is not None and row.e is not None and not _key_coming(world, slot, sk, graph, row.e)


def _key_coming(world, slot, sk: str, graph, epoch: int) -> bool:
    """The device holds the key of ``epoch`` or will without a human: the relay
    keeps a wrap of it for the device, or a live follower holds it and would wrap it."""
    if slot.device_id in graph.wraps.get(epoch, {}):
        return True
    return any(
        s is slot or _would_wrap(world, s.device, slot.device_id)
        for s in _holders(world, sk, epoch)
    )


def _holders(world, sk: str, epoch: int):
    """The live followers of a graph that hold the key of ``epoch``."""
    for device_id in world.followers(sk):
        s = world.slots[device_id]
        if epoch in s.device.keyring(graph_id_for(sk, s.member)).keys:
            yield s


def _grant_owed(world, sk: str, graph) -> bool:
    """A live, eligible device holds no wrap of the latest epoch and a live follower
    holding that key would grant it (client rule 14's gate)."""
    latest = graph.latest_epoch
    wrapped = graph.wraps.get(latest, {})
    waiting = [
        slot
        for device in (world.relay.eligible(sk) if latest else ())
        if device.device_id not in wrapped
        and (slot := world.slots.get(device.device_id)) is not None
        and slot.alive
        and not slot.revoked
    ]
    holders = list(_holders(world, sk, latest)) if waiting else []
    return any(
        s is not slot and _would_wrap(world, s.device, slot.device_id)
        for slot in waiting
        for s in holders
    )


def _would_wrap(world, holder, device_id: str) -> bool:
    """Client rule 14's gate as it stands: ``observe`` wraps to everyone; ``approve``
    only to a device the holder approved (a changed key triple is caught when it wraps)."""
    if world.config.approval_mode == OBSERVE:
        return True
    pin = holder.pin(device_id)
    return pin is not None and pin.state == APPROVED
