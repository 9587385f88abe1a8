"""What every invariant shares: the violation it reports and the checker shape."""

import datetime
from collections.abc import Iterable

import attrs

from simkit.protocol.ids import graph_id_for
from simkit.protocol.records import check_envelope, known_members, open_record


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
    """A named checker.

    ``observes`` names the trace events it reads (an event's ``name`` for kind
    ``event``, else the kind): the monitor reads each new trace event once and hands
    it to ``observe``, so no checker ever scans the whole trace and the trace need
    not stay in memory. ``step`` runs after every step (cheap, may keep history);
    ``final`` runs at quiescence. Each returns the violations it found.
    """

    name = "invariant"
    honest_only = False  # only meaningful when the relay is honest
    observes: tuple[str, ...] = ()
    judges_events = False  # ``observe`` reports violations (not only gathers for ``final``)

    def observe(self, world, event) -> Iterable["Violation"]:
        return ()

    def step(self, world) -> list[Violation]:
        return []

    def final(self, world) -> list[Violation]:
        return []

    def remembers(self, steps_left: int | None = None) -> object:
        """What this checker holds that its judgements over the next ``steps_left`` steps
        (None: any number) and at quiescence can depend on: two worlds whose checkers
        remember the same are judged alike from there (``simkit check``'s state digest
        holds it). By default everything it holds."""
        return vars(self)

    def violation(self, world, detail: str, trace_seq: int | None = None, **where) -> Violation:
        """A violation seen now (or at the given trace position)."""
        seq = len(world.trace) if trace_seq is None else trace_seq
        return Violation(self.name, detail, trace_seq=seq, **where)


def event_key(event) -> str:
    """What ``Invariant.observes`` names: an event's ``name``, or its kind."""
    return event.fields.get("name", event.kind) if event.kind == "event" else event.kind


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


def pin_state(device, device_id: str) -> str | None:
    """The state of the pin ``device`` keeps for ``device_id`` (None: no pin)."""
    pin = device.pin(device_id)
    return None if pin is None else pin.state


def opened_row(storage_key: str, row, keys: dict[int, bytes]) -> dict | None:
    """The record a stored row seals, opened with the keys a device holds (the
    simulation may read what a user sees; the relay never can). None when it does
    not open: a row the receivers refuse."""
    key = keys.get(row.e) if row.e is not None else None
    if key is None:
        return None
    try:
        return known_members(
            check_envelope(
                open_record(key, storage_key, row.record_id, row.n, row.c), row.record_id
            )
        )
    except ValueError:
        return None


def seen(record: dict | None) -> str:
    """A record as a user sees it, for a violation's text: rev, author and content."""
    if record is None:
        return "nothing"
    what = "a tombstone" if record.get("deleted") else f"{record.get('kind')} {record.get('data')}"
    return f"{rev_text(record.get('at'))} by {record.get('by')}: {what}"
