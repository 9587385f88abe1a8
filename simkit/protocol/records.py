"""Sealing, opening, signing and verifying records and blobs.

A record travels as an envelope ``{v: 1, r, d?, s?}`` sealed with AES-256-GCM
under the graph key; the AAD names the slot (``<storageKey>/<recordId>``), so a
ciphertext moved to another slot or graph no longer opens. The sealed bytes are
canonicalJson(envelope) (docs/wire.md).
"""

from simkit.errors import CryptoError, EncodingError, ProtocolError
from simkit.protocol.b64 import b64url_decode, b64url_encode
from simkit.protocol.canonical import canonical_json, parse_json
from simkit.protocol.entropy import Entropy, default_entropy
from simkit.protocol.ids import is_safe_id
from simkit.protocol.keys import sign_bytes, verify_bytes
from simkit.protocol.primitives import NONCE_BYTES, aes_gcm_open, aes_gcm_seal


class ShapeError(ProtocolError):
    """An opened envelope or record does not have the shape the spec fixes."""


def record_signing_bytes(storage_key: str, record: dict) -> bytes:
    """``skm-record-v1\\n`` + storageKey + ``\\n`` + canonicalJson(record)."""
    return b"skm-record-v1\n" + storage_key.encode("utf-8") + b"\n" + canonical_json(record)


def sign_record(private_key, storage_key: str, record: dict) -> str:
    """The envelope's ``s``: P1363 ECDSA over the record's signing bytes."""
    return sign_bytes(private_key, record_signing_bytes(storage_key, record))


def verify_record(sig_jwk: dict, storage_key: str, record: dict, signature: str) -> bool:
    """Verify ``s`` over the record exactly as it was sealed (unknown members included)."""
    return verify_bytes(sig_jwk, record_signing_bytes(storage_key, record), signature)


def record_aad(storage_key: str, record_id: str) -> bytes:
    return f"{storage_key}/{record_id}".encode()


def blob_aad(storage_key: str, blob_id: str) -> bytes:
    return f"{storage_key}/blob/{blob_id}".encode()


def _seal(key: bytes, aad: bytes, plaintext: bytes, entropy: Entropy | None) -> tuple[str, bytes]:
    nonce = default_entropy(entropy).token_bytes(NONCE_BYTES)
    return b64url_encode(nonce), aes_gcm_seal(key, nonce, plaintext, aad)


def _decode(value: str, what: str) -> bytes:
    try:
        return b64url_decode(value)
    except EncodingError as exc:
        raise CryptoError(f"{what}: {exc}") from None


def seal_record(
    graph_key: bytes, storage_key: str, envelope: dict, *, entropy: Entropy | None = None
) -> tuple[str, str]:
    """Seal an envelope into the wire's ``(n, c)``: base64url nonce and ciphertext||tag."""
    record_id = envelope["r"]["id"]
    n, sealed = _seal(
        graph_key, record_aad(storage_key, record_id), canonical_json(envelope), entropy
    )
    return n, b64url_encode(sealed)


def open_record(graph_key: bytes, storage_key: str, record_id: str, n: str, c: str) -> dict:
    """Open ``(n, c)`` in slot ``record_id``; any failure raises a simkit error.

    Raises CryptoError when the bytes do not open under the slot's AAD, and
    ShapeError when they open but are not a JSON object.
    """
    what = f"record {record_id!r} in {storage_key!r}"
    plaintext = aes_gcm_open(
        graph_key, _decode(n, what), _decode(c, what), record_aad(storage_key, record_id), what
    )
    try:
        envelope = parse_json(plaintext)
    except EncodingError as exc:
        raise ShapeError(f"{what}: envelope is not JSON: {exc}") from None
    if not isinstance(envelope, dict):
        raise ShapeError(f"{what}: envelope is not a JSON object")
    return envelope


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_envelope(envelope: dict, record_id: str) -> dict:
    """Check the envelope and record shape (spec: RecordEnvelope, GraphRecord).

    Returns the record. Unknown members are allowed: they are signed and ignored.
    """
    if envelope.get("v") != 1 or isinstance(envelope.get("v"), bool):
        raise ShapeError("envelope v must be 1")
    record = envelope.get("r")
    if not isinstance(record, dict):
        raise ShapeError("envelope r must be a record object")
    for name in ("d", "s"):
        if name in envelope and not isinstance(envelope[name], str):
            raise ShapeError(f"envelope {name} must be a string")
    if not is_safe_id(record.get("id")):
        raise ShapeError("record id must match [A-Za-z0-9_-]{1,64}")
    if record["id"] != record_id:
        raise ShapeError(f"record id {record['id']!r} does not name its slot {record_id!r}")
    if not isinstance(record.get("kind"), str) or not record["kind"]:
        raise ShapeError("record kind must be a non-empty string")
    if "deleted" in record and record["deleted"] is not True:
        raise ShapeError("record deleted may only be true")
    if not isinstance(record.get("data"), dict):
        raise ShapeError("record data must be an object")
    if record.get("deleted") is True and record["data"]:
        raise ShapeError("a tombstone's data must be empty")
    if not _is_number(record.get("at")) or not record["at"] >= 0:
        raise ShapeError("record at must be a non-negative number")
    if not is_safe_id(record.get("by")):
        raise ShapeError("record by must be a safe member ID")
    return record


RECORD_MEMBERS = ("id", "kind", "deleted", "data", "at", "by")  # GraphRecord's fields


def known_members(record: dict) -> dict:
    """The record as a receiver stores it: members it does not know are covered by the
    signature (verified over the record as sealed) and then ignored (the spec's
    signature rule; docs/findings.md, F13)."""
    if len(record) <= len(RECORD_MEMBERS) and all(k in RECORD_MEMBERS for k in record):
        return record
    return {name: record[name] for name in RECORD_MEMBERS if name in record}


def seal_blob(
    graph_key: bytes, storage_key: str, blob_id: str, data: bytes, *, entropy: Entropy | None = None
) -> tuple[str, bytes]:
    """Seal blob bytes: returns the ``x-blob-nonce`` value and the raw ciphertext||tag."""
    return _seal(graph_key, blob_aad(storage_key, blob_id), data, entropy)


def open_blob(
    graph_key: bytes, storage_key: str, blob_id: str, nonce: str, ciphertext: bytes
) -> bytes:
    """Open a blob; CryptoError when it does not open under its graph/blob AAD."""
    what = f"blob {blob_id!r} in {storage_key!r}"
    return aes_gcm_open(
        graph_key, _decode(nonce, what), ciphertext, blob_aad(storage_key, blob_id), what
    )
