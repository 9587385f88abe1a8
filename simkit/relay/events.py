"""The relay's typed event stream (spec: Events), delivered to the host's ``on_event``.

Events are buffered by the transaction and delivered only after it commits, so
a refused or failed request never reports something that did not happen. Every
event has a ``kind`` string; graph fields carry storage keys (``u:alice``,
``d:alice:bob``, ``g:team``), never a caller-relative graph ID.
"""

from typing import ClassVar

import attrs


@attrs.frozen
class Poke:
    """Content-free: something in this graph changed (once per graph per request)."""

    kind: ClassVar[str] = "poke"
    graph: str


@attrs.frozen
class GraphRotate:
    """A key put minted a new epoch; ``excluded`` are the devices stranded on purpose."""

    kind: ClassVar[str] = "graph.rotate"
    graph: str
    epoch: int
    member_id: str
    device_id: str
    excluded: tuple[str, ...]


@attrs.frozen
class KeysGrant:
    """A key put filled gaps in an existing epoch for ``devices`` (never an overwrite)."""

    kind: ClassVar[str] = "keys.grant"
    graph: str
    epoch: int
    member_id: str
    device_id: str
    devices: tuple[str, ...]


@attrs.frozen
class KeysDiscard:
    """A device discarded its own wrap of an epoch (DELETE keys/:epoch); a grant may follow."""

    kind: ClassVar[str] = "keys.discard"
    graph: str
    epoch: int
    device_id: str


@attrs.frozen
class DeviceRegister:
    """A device ID was bound to its keys for the first time."""

    kind: ClassVar[str] = "device.register"
    member_id: str
    device_id: str


@attrs.frozen
class DeviceRevoke:
    """A device was revoked; ``graphs`` are the storage keys that now owe a rotation."""

    kind: ClassVar[str] = "device.revoke"
    member_id: str
    device_id: str
    by_device: str
    graphs: tuple[str, ...]


@attrs.frozen
class BlobForgotten:
    """A blob was deleted; ``reason`` is ``deleted``, ``acked`` or ``expired``;
    ``receipts`` are the members who had acked it (an audit of transport delivery)."""

    kind: ClassVar[str] = "blob.forgotten"
    graph: str
    blob_id: str
    reason: str
    receipts: tuple[str, ...] = ()


@attrs.frozen
class InternalFailure:
    """A handler raised unexpectedly; the request was rolled back and answered 500."""

    kind: ClassVar[str] = "relay.internal-error"
    method: str
    path: str
    error: str


Event = (
    Poke | GraphRotate | KeysGrant | DeviceRegister | DeviceRevoke | BlobForgotten | InternalFailure
)
