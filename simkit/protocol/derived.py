"""Derived tags and the IDs built from them (personal record IDs, checkpoint IDs).

A derived tag is HKDF-SHA256(key, salt empty, info=label) to a 32-byte MAC key,
then HMAC-SHA256 over the input, truncated to 132 bits: exactly 22 base64url
characters. The inputs (docs/wire.md): a personal record ID MACs
canonicalJson([kind, target]); a checkpoint ID MACs the device ID's UTF-8 bytes.
"""

import hashlib
import hmac

from simkit.protocol.b64 import b64url_encode
from simkit.protocol.canonical import canonical_json
from simkit.protocol.ids import require_safe_id
from simkit.protocol.primitives import hkdf_sha256, require_key

TAG_CHARS = 22  # 132 bits / 6 bits per base64url character


def derived_tag(key: bytes, label: str, data: bytes | str) -> str:
    """HKDF(key, label) then HMAC-SHA256(data), truncated to 132 bits, base64url."""
    mac_key = hkdf_sha256(require_key(key, "derivation key"), salt=b"", info=label.encode())
    if isinstance(data, str):
        data = data.encode("utf-8")
    digest = hmac.new(mac_key, data, hashlib.sha256).digest()
    return b64url_encode(digest[:17])[:TAG_CHARS]


def personal_record_id(epoch1_key: bytes, kind: str, target: str) -> str:
    """``p_`` + the 132-bit tag of (kind, target) under the personal graph's epoch-1 key."""
    return "p_" + derived_tag(epoch1_key, "skm-pid-v1", canonical_json([kind, target]))


def checkpoint_record_id(epoch1_key: bytes, device_id: str) -> str:
    """The slot a device publishes its checkpoints in; unlinkable to the device by the relay."""
    return derived_tag(epoch1_key, "skm-ckpt-v1", require_safe_id(device_id, "device ID"))
