"""The application users: what each writer does next, drawn from its own stream."""

import math

import attrs
import trio

from simkit.client import Device
from simkit.client.blobs import upload_blob
from simkit.errors import SimkitError
from simkit.protocol.entropy import SeededEntropy
from simkit.protocol.ids import graph_id_for
from simkit.sim.spec import Workload


@attrs.frozen
class AppWrite:
    """One application write: a new record, an edit, or a delete."""

    graph_id: str
    record_id: str
    op: str  # "create" | "edit" | "delete"
    kind: str
    data: dict

    def apply(self, device: Device) -> dict:
        if self.op == "delete":
            return device.delete(self.graph_id, self.record_id)
        return device.put(self.graph_id, self.record_id, self.kind, self.data)

    def trace_fields(self) -> dict:
        return {
            "graph": self.graph_id,
            "recordId": self.record_id,
            "op": self.op,
            "data": self.data,
        }


PLAINTEXT_MARK = "plaintext "


def plaintext(device_id: str, serial: int, size: int) -> dict:
    """A record body whose text carries a marker the blindness check looks for at the relay."""
    text = f"{PLAINTEXT_MARK}{device_id} #{serial} "
    return {"by": device_id, "n": serial, "text": text + "x" * max(0, size - len(text))}


def next_write(
    device: Device, graphs: list[str], w: Workload, draws: SeededEntropy, serial: int
) -> AppWrite | None:
    """Pick a graph, then create, edit or delete (edits and deletes need a live record)."""
    if not graphs:
        return None
    graph_id = graph_id_for(graphs[draws.randbelow(len(graphs))], device.member_id)
    roll = draws.random()
    payload = plaintext(device.device_id, serial, w.payload_bytes)
    if roll < w.delete + w.edit:  # only then list the live records (a scan of the graph)
        live = sorted(
            rid for rid, r in device.records(graph_id).items()
            if not r.get("deleted") and not r["kind"].startswith("skm.")
        )  # fmt: skip
        if live:
            record_id = live[draws.randbelow(len(live))]
            op, data = ("delete", {}) if roll < w.delete else ("edit", payload)
            return AppWrite(graph_id, record_id, op, device.get(graph_id, record_id)["kind"], data)
    number = draws.randbelow(w.keys_per_graph)
    kind = w.kinds[number % len(w.kinds)]  # a record's kind never changes in its life
    return AppWrite(graph_id, f"r{number}", "create", kind, payload)


def shard_of(record: dict) -> str:
    """A record's shard: ``s0`` or ``s1`` by its ID, so it never changes in its life
    (Partial sync: 'opaque shard label'); a world with ``shards`` sends it."""
    return f"s{sum(record['id'].encode()) % 2}"


def writers(workload: Workload, slots: dict) -> list[str]:
    """The devices whose users write: the workload's, or every device of the fleet."""
    return sorted(slots) if workload.writers is None else sorted(workload.writers)


async def write_for(world, device_id: str) -> None:
    """One member at one device: writes, edits and deletes at random intervals, and
    sometimes uploads a blob, each drawn from the device's own stream."""
    w = world.spec.workload
    draws = world.entropy.fork(f"workload/{device_id}")
    serial = 0
    while True:
        await trio.sleep(-w.interval_s * math.log1p(-draws.random()))
        slot = world.slots.get(device_id)  # a device linked later writes once it exists
        if slot is None or not slot.alive or (slot.revoked and not slot.stolen):
            continue
        serial += 1
        write = next_write(slot.device, world.graphs_of(slot.member), w, draws, serial)
        if write is None:
            continue
        world.apply(device_id, write)
        if w.blobs and draws.random() < w.blobs:
            policy = w.blob_policies[draws.randbelow(len(w.blob_policies))]
            what = f"{device_id}'s blob upload"
            world.spawn(_upload, world, slot, write.graph_id, serial, policy, what=what)


async def _upload(world, slot, graph_id: str, serial: int, policy: str) -> None:
    device = slot.device
    if device is None or not device.keyring(graph_id).keys:
        return
    ttl = 60_000 if policy == "ephemeral" else None
    blob_id = f"{slot.device_id}-b{serial}"
    try:
        await upload_blob(device, graph_id, blob_id, b"blob:" + blob_id.encode(), policy, ttl)
    except SimkitError as exc:
        world.note("event", slot.device_id, name="app.blob-failed", blob=blob_id, detail=str(exc))
