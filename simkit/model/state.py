"""What the model's relay holds: devices and graphs, as plain dicts and lists.

Devices, rows, log entries and blobs are kept in their wire form, so an answer is
built by copying them and the store renders to the relay's snapshot schema
(simkit/relay/state.py) without a translation table.
"""

import dataclasses

import attrs

from simkit.protocol.http import Request


@dataclasses.dataclass
class Graph:
    """One graph under its storage key (spec: Resources; States and transitions)."""

    key: str
    counter: int = 0  # the per-graph write counter: the last seq handed out or spent
    latest_epoch: int = 0
    rotation_required: bool = False
    rows: dict[str, dict] = dataclasses.field(default_factory=dict)  # recordId -> GraphOpOut
    log: list[dict] = dataclasses.field(default_factory=list)  # {seq, recordId, rev}
    wraps: dict[int, dict[str, str]] = dataclasses.field(default_factory=dict)  # epoch -> device
    pushers: set[str] = dataclasses.field(default_factory=set)  # members who ever pushed
    blobs: dict[str, dict] = dataclasses.field(default_factory=dict)  # blobId -> blob

    def row_bytes(self) -> int:
        """The record-byte quota counts the ciphertext of the live rows (docs/relay.md)."""
        return sum(len(row["c"]) for row in self.rows.values())

    def blob_bytes(self) -> int:
        return sum(len(blob["data"]) for blob in self.blobs.values())


@attrs.define
class Call:
    """A request that passed the pipeline: who, on which graph, with which body."""

    request: Request
    now: int
    params: dict[str, str]
    member: str
    device: str
    key: str | None = None  # the graph's storage key
    body: object = None

    @property
    def query(self) -> dict[str, str]:
        return self.request.query
