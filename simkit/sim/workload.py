"""The application users: what each writer does next, drawn from its own stream."""

import attrs

from simkit.client import Device
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
