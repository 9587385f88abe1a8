"""The log chain clients compute over the relay's log entries (spec: Log chain).

Numbers render exactly as JavaScript renders them in string concatenation.
"""

from simkit.protocol.b64 import b64url_encode
from simkit.protocol.canonical import js_number
from simkit.protocol.primitives import sha256

CHECKPOINT_STRIDE = 64


def log_genesis(storage_key: str) -> str:
    """h0 = base64url(SHA-256(``skm-log-v1\\ngenesis\\n`` + storageKey))."""
    return b64url_encode(sha256(f"skm-log-v1\ngenesis\n{storage_key}".encode()))


def log_step(prev_head: str, seq: int, record_id: str, rev: float) -> str:
    """hk = base64url(SHA-256(``skm-log-v1\\n`` + h(k-1) + ``\\n`` + seq + ``\\n``
    + recordId + ``\\n`` + rev))."""
    text = f"skm-log-v1\n{prev_head}\n{js_number(seq)}\n{record_id}\n{js_number(rev)}"
    return b64url_encode(sha256(text.encode("utf-8")))
