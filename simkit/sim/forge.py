"""Records other clients of a member write with its device's key and credential.

A non-conforming client's records are sealed under the real graph key, each breaking
one receive check of client rule 2, so that every refusal branch runs (``forged_op``).
A checkpoint a receiver must not believe, though it is a valid record
(``false_checkpoint``). A newer client's record, carrying a member this client does
not know (Versioning rule 3: signed and ignored, ``newer_op``).
"""

import json

from simkit.client.schemas import CHECKPOINT_KIND
from simkit.protocol.b64 import b64url_encode
from simkit.protocol.canonical import canonical_json, canonical_json_text
from simkit.protocol.derived import checkpoint_record_id
from simkit.protocol.messages import RECORD_MALFORMATIONS
from simkit.protocol.primitives import aes_gcm_seal
from simkit.protocol.records import record_aad, sign_record
from simkit.protocol.wrap import wrap_graph_key

HOWS = (
    "shape", "slot", "rev", "schema", "app-schema", "author", "unknown-device", "signature",
    "unsigned", "stale-signature", "other-graph-signature", "decrypt", "wrap",
)  # fmt: skip
"""shape: envelope v is 2; slot: r.id names another slot; rev: the op's rev is not
r.at; schema: a reserved kind with data its schema refuses; app-schema: an application
kind with data the application's schema refuses (a ``task`` without its text,
``simkit.sim.world.APP_SCHEMAS``); author: r.by is another
member; unknown-device: d names no roster device; signature: s does not verify;
unsigned: s is absent; stale-signature: s is the device's own signature over the
record as it was before an edit; other-graph-signature: s is the device's own signature
over the same record in another graph (the storage key it signs differs); decrypt: the
ciphertext is not AES-GCM under the graph key; wrap: a key gap filled
with a wrap sealed to another key (the gap's device cannot open it)."""


BROKEN = {
    "shape": "its envelope's v is not 1 (RecordEnvelope)",
    "slot": "r.id names another slot than the op's",
    "rev": "the op's rev is not r.at",
    "schema": "its data breaks the protocol's schema for its reserved kind",
    "app-schema": "the app's schema for its kind refuses its data",
    "author": "r.by is not the member of the device that signed it",
    "unknown-device": "d, the device that signed it, is in no roster",
    "signature": "s does not verify over the record as sealed",
    "unsigned": "s is absent: the record is unsigned",
    "stale-signature": "s is its device's signature over another version of the record",
    "other-graph-signature": "s is its device's signature over the record in another graph",
    "decrypt": "its ciphertext does not open under its slot's AAD",
}
"""What each forgery breaks, in client rule 2's words: why a receiver must refuse it."""


def forged_op(device, graph_id: str, record_id: str, how: str, delete: bool = False):
    """A push op for ``record_id`` that breaks the ``how`` check (a tombstone when
    ``delete``, but for a schema break: a tombstone has no schema); None without a key."""
    ring = device.keyring(graph_id)
    if not ring.keys:
        return None
    sk, epoch = device.storage_key(graph_id), ring.current
    at = device.stamp(0)
    record = {
        "id": record_id,
        "kind": "note",
        "data": {"forged": how},
        "at": at,
        "by": device.member_id,
    }
    if delete and how not in ("schema", "app-schema"):
        record.update(deleted=True, data={})
    if how == "slot":
        record["id"] = f"{record_id}-elsewhere"[:64]
    elif how == "app-schema":
        record.update(kind="task", data={"text": 7})  # a task's text must be a string
    elif how == "schema":
        record["kind"] = CHECKPOINT_KIND  # checkpoint data must be {v, d, seq, head}
    elif how == "author":
        record["by"] = "someone-else"
    signature = sign_record(device.keys.sign_key, sk, record)
    envelope = {"v": 2 if how == "shape" else 1, "r": record, "d": device.device_id, "s": signature}
    if how == "unknown-device":
        envelope["d"] = "ghost"
    elif how == "signature":
        envelope["s"] = b64url_encode(b"\x00" * 64)
    elif how == "unsigned":
        del envelope["s"]
    elif how == "stale-signature":
        envelope["s"] = sign_record(device.keys.sign_key, sk, {**record, "data": {"was": how}})
    elif how == "other-graph-signature":
        envelope["s"] = sign_record(device.keys.sign_key, f"{sk}.other", record)
    nonce = device.entropy.token_bytes(12)
    plaintext = canonical_json(envelope)
    sealed = aes_gcm_seal(ring.keys[epoch], nonce, plaintext, record_aad(sk, record_id))
    c = b64url_encode(plaintext if how == "decrypt" else sealed)  # sealed for the pushed slot
    n = b64url_encode(nonce)
    rev = at + 1 if how == "rev" else at
    return {"recordId": record_id, "rev": rev, "e": epoch, "n": n, "c": c}


def malformed_op(device, graph_id: str, record_id: str, name: str) -> tuple[dict, bool] | None:
    """A push op whose sealed record has the malformation ``name``
    (``simkit.protocol.messages.RECORD_MALFORMATIONS``), signed over the record as it
    is sealed, so that the malformation is the one thing wrong (or, for a valid one, the
    one thing unusual): ``(op, valid)``. None without a key."""
    m = RECORD_MALFORMATIONS[name]
    ring = device.keyring(graph_id)
    if not ring.keys:
        return None
    sk, epoch = device.storage_key(graph_id), ring.current
    if m.field == "id":
        record_id = m.value  # at its 64-character limit
    marker, at = {"stretched" if m.valid else "forged": name}, device.stamp(0)
    record = {"id": record_id, "kind": "note", "data": marker, "at": at, "by": device.member_id}
    if m.message == "GraphRecord" and m.kind != "duplicate-key":
        record = m.apply(record)
    envelope = {"v": 1, "r": record, "d": device.device_id,
                "s": sign_record(device.keys.sign_key, sk, record)}  # fmt: skip
    if m.message == "RecordEnvelope" and m.kind != "duplicate-key":
        envelope = m.apply(envelope)
    text = canonical_json_text(envelope)
    if m.kind == "duplicate-key":  # JSON.parse keeps the second: the record's own
        inner = m.message == "GraphRecord"
        at = text.index('"r":{') + len('"r":{') if inner else 1
        text = text[:at] + f'"{m.field}":{json.dumps(m.value)},' + text[at:]
    nonce = device.entropy.token_bytes(12)
    sealed = aes_gcm_seal(ring.keys[epoch], nonce, text.encode(), record_aad(sk, record_id))
    stamped = record.get("at")
    rev = (
        stamped
        if isinstance(stamped, int) and not isinstance(stamped, bool) and stamped >= 0
        else at
    )
    op = {"recordId": record_id, "rev": rev, "e": epoch, "n": b64url_encode(nonce),
          "c": b64url_encode(sealed)}  # fmt: skip
    return op, m.valid


def _sealed_op(device, graph_id: str, record: dict) -> dict:
    """``record`` sealed and signed as an honest client does, under the current key."""
    ring = device.keyring(graph_id)
    sk, epoch = device.storage_key(graph_id), ring.current
    signature = sign_record(device.keys.sign_key, sk, record)
    envelope = {"v": 1, "r": record, "d": device.device_id, "s": signature}
    nonce = device.entropy.token_bytes(12)
    sealed = aes_gcm_seal(
        ring.keys[epoch], nonce, canonical_json(envelope), record_aad(sk, record["id"])
    )
    return {"recordId": record["id"], "rev": record["at"], "e": epoch, "n": b64url_encode(nonce),
            "c": b64url_encode(sealed)}  # fmt: skip


def false_checkpoint(device, graph_id: str, claimed: str, slot_of: str) -> dict | None:
    """A valid, signed checkpoint record claiming device ``claimed`` at boundary 64 with
    a head nobody computed, in the slot derived for ``slot_of``. A receiver believes a
    checkpoint only if its slot is the one derived for its ``d`` and its author owns
    ``d``: with ``claimed`` another member's device, or ``slot_of`` another device than
    ``claimed``, nobody may believe it. None without the epoch-1 key."""
    epoch1 = device.keyring(graph_id).keys.get(1)
    if epoch1 is None or device.behind(graph_id):  # a conforming client holds its writes
        return None
    data = {"v": 1, "d": claimed, "seq": 64, "head": b64url_encode(b"\x13" * 32)}
    record = {
        "id": checkpoint_record_id(epoch1, slot_of),
        "kind": CHECKPOINT_KIND,
        "data": data,
        "at": device.stamp(0),
        "by": device.member_id,
    }
    return _sealed_op(device, graph_id, record)


def newer_op(device, graph_id: str, record_id: str) -> dict | None:
    """A record a newer client of the device's member writes: valid and signed, with
    an optional member this client does not know (Versioning rule 3: signed, then
    ignored; only the parsed record is stored). None without a key."""
    if not device.keyring(graph_id).keys or device.behind(graph_id):
        return None
    record = {
        "id": record_id,
        "kind": "note",
        "data": {"from": "a newer client"},
        "at": device.stamp(0),
        "by": device.member_id,
        "x-newer": {"since": "0.2.0"},
    }
    return _sealed_op(device, graph_id, record)


def forged_grant(device, graph_id: str, target: str, epoch: int) -> tuple:
    """A grant (POST keys) of ``epoch`` to ``target``, a device lacking it, of a random
    key wrapped to this device's own wrapping key: well-formed, unopenable by its
    target."""
    junk = wrap_graph_key(
        device.entropy.token_bytes(32), device.keys.pub_jwk, entropy=device.entropy
    )
    body = {"epoch": epoch, "wraps": [{"deviceId": target, "wrapped": junk}]}
    return ("POST", f"/graphs/{graph_id}/keys", body)
