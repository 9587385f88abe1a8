"""Everything the relay stores, as plain data that snapshots to JSON and back.

The simulator crashes and restarts the relay and an adversarial wrapper rolls
it back, so the whole store is one ``RelayState`` with ``to_data()`` /
``from_data()``. Derived values (byte counters, the per-member device index)
are rebuilt on restore rather than stored, so a snapshot cannot contradict
itself. Snapshots list maps in sorted order, so equal states give equal data.
"""

import attrs

from simkit.errors import EncodingError, SimkitError
from simkit.protocol.b64 import b64url_decode, b64url_encode
from simkit.protocol.canonical import compact_json
from simkit.relay.txn import Transaction

# Storage schema version. It only ever grows; a future build adds an append-only
# migration from the previous version (spec: Versioning rule 4).
SCHEMA_VERSION = 1


class RelayStateError(SimkitError):
    """A relay state snapshot is malformed."""


class NewerStateError(RelayStateError):
    """The state was written by a newer build; running on it could corrupt it."""


class _WireText:
    """``wire()`` as compact JSON, encoded on first use and kept: every device that
    pulls a row or fetches a roster gets the same bytes, so the relay encodes each
    stored value once (values are frozen: a change is a new object)."""

    __slots__ = ("_text",)

    def wire(self) -> dict:
        raise NotImplementedError

    def wire_text(self) -> str:
        try:
            return self._text
        except AttributeError:
            text = compact_json(self.wire())
            object.__setattr__(self, "_text", text)  # frozen: a cache, not a field
            return text


@attrs.frozen
class RegisteredDevice(_WireText):
    """A registered device; keys are set once, only ``revoked_at`` ever changes."""

    device_id: str
    member_id: str
    pub_jwk: dict
    sig_jwk: dict
    self_sig: str | None
    label: str | None
    registered_at: int
    revoked_at: int | None = None

    def wire(self) -> dict:
        """The spec's roster entry (GET /graphs/:gid/devices)."""
        return {
            "deviceId": self.device_id,
            "memberId": self.member_id,
            "pubJwk": self.pub_jwk,
            "sigJwk": self.sig_jwk,
            "selfSig": self.self_sig,
            "revokedAt": self.revoked_at,
        }

    def data(self) -> dict:
        """Everything stored: the GET /devices entry and the snapshot form."""
        return {**self.wire(), "label": self.label, "registeredAt": self.registered_at}

    @classmethod
    def from_data(cls, d: dict) -> "RegisteredDevice":
        return cls(
            d["deviceId"], d["memberId"], d["pubJwk"], d["sigJwk"],
            d["selfSig"], d["label"], d["registeredAt"], d["revokedAt"],
        )  # fmt: skip


@attrs.frozen
class Record(_WireText):
    """A stored row (or an op being pushed, with ``seq`` 0): opaque ciphertext plus rev."""

    record_id: str
    rev: int
    n: str
    c: str
    e: int | None = None
    k: str | None = None
    sh: str | None = None
    seq: int = 0

    def at(self, seq: int) -> "Record":
        """This op as the row stored under ``seq`` (``attrs.evolve`` is slow on the hot path)."""
        return Record(self.record_id, self.rev, self.n, self.c, self.e, self.k, self.sh, seq)

    def wire(self) -> dict:
        """GraphOpOut as pull serves it; optional fields appear only when stored."""
        out: dict = {"recordId": self.record_id, "rev": self.rev}
        if self.e is not None:
            out["e"] = self.e
        out["n"] = self.n
        out["c"] = self.c
        if self.k is not None:
            out["k"] = self.k
        if self.sh is not None:
            out["sh"] = self.sh
        out["seq"] = self.seq
        return out

    @classmethod
    def from_wire(cls, d: dict) -> "Record":
        return cls(
            d["recordId"], d["rev"], d["n"], d["c"], d.get("e"), d.get("k"), d.get("sh"), d["seq"]
        )


@attrs.frozen
class LogEntry(_WireText):
    """One accepted write, in the order the relay assigned."""

    seq: int
    record_id: str
    rev: int

    def wire(self) -> dict:
        return {"seq": self.seq, "recordId": self.record_id, "rev": self.rev}


@attrs.frozen
class Blob:
    """Raw ciphertext under a retention policy; ``receipts`` are members who acked."""

    data: bytes
    nonce: str
    policy: str
    expires_at: int | None = None
    receipts: tuple[str, ...] = ()

    def expired(self, now: int) -> bool:
        return self.expires_at is not None and self.expires_at <= now


@attrs.define(eq=False)
class Graph:
    """One graph under its storage key: counter, rows, log, key state, blobs.

    ``log`` is in seq order and ``records[id].seq`` is the row's latest write, so
    a pull bisects the log and skips superseded entries without scanning the store.
    """

    key: str
    seq: int = 0
    latest_epoch: int = 0
    rotation_required: bool = False
    records: dict[str, Record] = attrs.Factory(dict)
    log: list[LogEntry] = attrs.Factory(list)
    wraps: dict[int, dict[str, str]] = attrs.Factory(dict)
    pushers: list[str] = attrs.Factory(list)
    blobs: dict[str, Blob] = attrs.Factory(dict)
    record_bytes: int = 0
    blob_bytes: int = 0

    def data(self) -> dict:
        return {
            "key": self.key,
            "seq": self.seq,
            "latestEpoch": self.latest_epoch,
            "rotationRequired": self.rotation_required,
            "pushers": sorted(self.pushers),
            "records": [self.records[rid].wire() for rid in sorted(self.records)],
            "log": [entry.wire() for entry in self.log],
            "wraps": [
                [epoch, device, holders[device]]
                for epoch, holders in sorted(self.wraps.items())
                for device in sorted(holders)
            ],
            "blobs": [
                {
                    "blobId": blob_id,
                    "policy": blob.policy,
                    "expiresAt": blob.expires_at,
                    "nonce": blob.nonce,
                    "receipts": sorted(blob.receipts),
                    "data": b64url_encode(blob.data),
                }
                for blob_id, blob in sorted(self.blobs.items())
            ],
        }

    @classmethod
    def from_data(cls, d: dict) -> "Graph":
        graph = cls(d["key"], d["seq"], d["latestEpoch"], d["rotationRequired"])
        graph.pushers = list(d["pushers"])
        graph.records = {r["recordId"]: Record.from_wire(r) for r in d["records"]}
        graph.log = [LogEntry(e["seq"], e["recordId"], e["rev"]) for e in d["log"]]
        for epoch, device, wrapped in d["wraps"]:
            graph.wraps.setdefault(epoch, {})[device] = wrapped
        for b in d["blobs"]:
            graph.blobs[b["blobId"]] = Blob(
                b64url_decode(b["data"]), b["nonce"], b["policy"], b["expiresAt"],
                tuple(b["receipts"]),
            )  # fmt: skip
        graph.record_bytes = sum(len(r.c) for r in graph.records.values())
        graph.blob_bytes = sum(len(b.data) for b in graph.blobs.values())
        return graph


@attrs.define(eq=False)
class RelayState:
    """The relay's whole store. ``member_devices`` is an index derived from ``devices``."""

    devices: dict[str, RegisteredDevice] = attrs.Factory(dict)
    graphs: dict[str, Graph] = attrs.Factory(dict)
    member_devices: dict[str, tuple[str, ...]] = attrs.Factory(dict)

    def devices_of(self, member_id: str) -> list[RegisteredDevice]:
        """A member's devices, revoked ones included, ordered by device ID."""
        return [self.devices[d] for d in self.member_devices.get(member_id, ())]

    def add_device(self, tx: Transaction, device: RegisteredDevice) -> None:
        tx.set(self.devices, device.device_id, device)
        tx.set(self.member_devices, device.member_id, self._indexed(device))

    def _indexed(self, device: RegisteredDevice) -> tuple[str, ...]:
        """The member's device IDs with ``device`` added, kept sorted."""
        return tuple(sorted((*self.member_devices.get(device.member_id, ()), device.device_id)))

    def to_data(self) -> dict:
        """JSON-able data; equal states give equal data whatever order things happened in."""
        return {
            "schema": SCHEMA_VERSION,
            "devices": [self.devices[d].data() for d in sorted(self.devices)],
            "graphs": [self.graphs[key].data() for key in sorted(self.graphs)],
        }

    @classmethod
    def from_data(cls, data: object) -> "RelayState":
        """Rebuild a state from ``to_data()`` output, refusing a newer storage schema."""
        schema = data.get("schema") if isinstance(data, dict) else None
        if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
            raise RelayStateError("not a relay state snapshot: no storage schema version")
        if schema > SCHEMA_VERSION:
            raise NewerStateError(
                f"relay state has storage schema {schema} but this build reads schema "
                f"{SCHEMA_VERSION} at most; refusing state written by a newer build"
            )
        try:
            state = cls()
            for d in data["devices"]:
                device = RegisteredDevice.from_data(d)
                state.devices[device.device_id] = device
                state.member_devices[device.member_id] = state._indexed(device)
            for g in data["graphs"]:
                state.graphs[g["key"]] = Graph.from_data(g)
        except (KeyError, TypeError, ValueError, AttributeError, EncodingError) as exc:
            raise RelayStateError(f"malformed relay state: {exc!r}") from None
        return state
