"""The receive path (client rule 2): decide whether one pulled op may be applied.

Pure: it takes the op, the key and the roster, and returns the record or the
reason it is refused. Refused records are skipped and reported, never applied
best-effort, and never stop the sync.
"""

import attrs

from simkit.client.schemas import Registry
from simkit.errors import CryptoError, KeyFormatError
from simkit.protocol.records import (
    ShapeError,
    check_envelope,
    known_members,
    open_record,
    verify_record,
)


@attrs.frozen
class Opened:
    record: dict
    device_id: str | None  # the proven signing device (None when verification is off)


@attrs.frozen
class Refusal:
    reason: str
    detail: str


def check_op(
    op: dict,
    *,
    storage_key: str,
    graph_key: bytes,
    roster: dict[str, dict],
    registry: Registry,
    verify_signatures: bool,
) -> Opened | Refusal:
    record_id = op["recordId"]
    try:
        envelope = open_record(graph_key, storage_key, record_id, op["n"], op["c"])
        record = check_envelope(envelope, record_id)
    except ShapeError as exc:
        return Refusal("shape", str(exc))
    except CryptoError as exc:
        return Refusal("decrypt", str(exc))
    if record["at"] != op["rev"]:
        return Refusal("shape", f"op rev {op['rev']} is not the record's at {record['at']}")
    if not record.get("deleted") and not registry.accepts(record["kind"], record["data"]):
        return Refusal("schema", f"kind {record['kind']!r} refused its data")
    if not verify_signatures:
        return Opened(known_members(record), None)
    device_id = envelope.get("d")
    entry = roster.get(device_id) if isinstance(device_id, str) else None
    if entry is None:
        return Refusal("unknown-device", f"signing device {device_id!r} is not in the roster")
    try:
        valid = isinstance(envelope.get("s"), str) and verify_record(
            entry["sigJwk"], storage_key, record, envelope["s"]
        )
    except KeyFormatError as exc:
        return Refusal("bad-signature", f"roster key of {device_id!r} is malformed: {exc}")
    if not valid:
        why = "is absent" if envelope.get("s") is None else f"does not verify under {device_id!r}"
        return Refusal("bad-signature", f"signature {why}")
    if record["by"] != entry["memberId"]:
        return Refusal("wrong-author", f"r.by {record['by']!r} is not {device_id!r}'s member")
    revoked_at = entry.get("revokedAt")
    if revoked_at is not None and revoked_at <= record["at"]:
        return Refusal("revoked-device", f"{device_id!r} was revoked at {revoked_at}")
    return Opened(known_members(record), device_id)
