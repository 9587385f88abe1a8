"""What every invariant shares: the violation it reports and the checker shape."""

import datetime

import attrs

from simkit.protocol.ids import graph_id_for


def rev_text(rev: int | None) -> str:
    """A record version as a person reads it: the writer's clock in UTC to the
    millisecond, then the raw value the trace and the wire carry; None is "nothing"."""
    if rev is None:
        return "nothing"
    moment = datetime.datetime.fromtimestamp(rev // 1000, datetime.UTC)
    return f"{moment:%H:%M:%S}.{rev % 1000:03d} (rev {rev})"


@attrs.frozen
class Violation:
    """A broken invariant: which one, where, who, and the trace position it was seen at."""

    invariant: str
    detail: str
    graph: str | None = None
    devices: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    records: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    trace_seq: int | None = None

    def to_json(self) -> dict:
        return attrs.asdict(self)

    def __str__(self) -> str:
        where = " ".join(
            part
            for part in (
                f"graph={self.graph}" if self.graph else "",
                f"devices={','.join(self.devices)}" if self.devices else "",
                f"records={','.join(self.records[:5])}" if self.records else "",
                f"trace#{self.trace_seq}" if self.trace_seq is not None else "",
            )
            if part
        )
        return f"[{self.invariant}] {self.detail}" + (f" ({where})" if where else "")


class Invariant:
    """A named checker. ``step`` runs after every step (cheap, may keep history);
    ``final`` runs at quiescence. Each returns the violations it found."""

    name = "invariant"
    honest_only = False  # only meaningful when the relay is honest

    def step(self, world) -> list[Violation]:
        return []

    def final(self, world) -> list[Violation]:
        return []

    def violation(self, world, detail: str, trace_seq: int | None = None, **where) -> Violation:
        """A violation seen now (or at the given trace position)."""
        seq = len(world.trace) if trace_seq is None else trace_seq
        return Violation(self.name, detail, trace_seq=seq, **where)


def views(world, storage_key: str):
    """(device_id, device, graph_id) of each live, unrevoked device following a graph
    unfiltered and holding every epoch its rows are sealed under (and the latest):
    the devices that must hold everything. A device nobody gave a key (approve mode)
    is blocked on purpose, not owed the records."""
    graph = world.relay.state.graphs.get(storage_key)
    if graph is None:
        return
    needed = {row.e for row in graph.records.values() if row.e is not None}
    needed.add(graph.latest_epoch)
    for device_id in world.followers(storage_key):
        device = world.slots[device_id].device
        graph_id = graph_id_for(storage_key, device.member_id)
        if device.unfiltered(graph_id) and needed <= device.keyring(graph_id).keys.keys():
            yield device_id, device, graph_id


def events(world, name: str):
    return (e for e in world.trace if e.kind == "event" and e.fields.get("name") == name)


def can_write(world, device_id: str, storage_key: str) -> bool:
    """Whether the device's member holds ``write`` for the graph (``g:`` graphs only)."""
    if not storage_key.startswith("g:"):
        return True
    granted = world.host.capabilities(world.slots[device_id].member, storage_key[2:])
    return granted is None or "write" in granted
