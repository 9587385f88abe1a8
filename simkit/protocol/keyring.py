"""Keyrings, recovery bundles and invites: the code-derived sealing constructions.

A keyring maps epochs to 256-bit graph keys and names the current epoch; old
epochs are kept. Bundles and invites seal JSON under PBKDF2-SHA256 (310,000
iterations, 128-bit salt) as ``{v: 1, salt, sealed}`` with
``sealed = base64url(nonce || ciphertext || tag)`` (docs/wire.md).
"""

import attrs

from simkit.errors import CryptoError, EncodingError, ProtocolError
from simkit.protocol.b64 import b64url_decode, b64url_encode
from simkit.protocol.canonical import canonical_json, parse_json
from simkit.protocol.entropy import Entropy, default_entropy
from simkit.protocol.primitives import (
    KEY_BYTES,
    NONCE_BYTES,
    PBKDF2_ITERATIONS,
    SALT_BYTES,
    aes_gcm_open,
    aes_gcm_seal,
    pbkdf2_sha256,
    require_key,
)


@attrs.frozen
class Keyring:
    """Epoch -> graph key, plus the current epoch (0 when empty)."""

    keys: dict[int, bytes] = attrs.field(factory=dict)

    @property
    def current(self) -> int:
        return max(self.keys, default=0)

    def with_key(self, epoch: int, key: bytes) -> "Keyring":
        """A keyring that also holds ``key`` at ``epoch`` (an existing epoch is kept)."""
        if epoch in self.keys:
            return self
        return Keyring({**self.keys, epoch: require_key(key)})

    def to_wire(self) -> dict:
        return {
            "current": self.current,
            "keys": {str(e): b64url_encode(k) for e, k in sorted(self.keys.items())},
        }

    @classmethod
    def from_wire(cls, data: object) -> "Keyring":
        if not isinstance(data, dict) or not isinstance(data.get("keys"), dict):
            raise ProtocolError("keyring must be an object with a 'keys' object")
        keys = {}
        for epoch, key in data["keys"].items():
            if not epoch.isdigit() or int(epoch) < 1:
                raise ProtocolError(f"keyring epoch {epoch!r} must be a positive integer")
            keys[int(epoch)] = require_key(b64url_decode(key), f"keyring key of epoch {epoch}")
        ring = cls(keys)
        if data.get("current") != ring.current:
            raise ProtocolError("keyring 'current' must be its highest epoch")
        return ring


def _code_key(secret: str, salt: bytes) -> bytes:
    return pbkdf2_sha256(secret.encode("utf-8"), salt, PBKDF2_ITERATIONS, KEY_BYTES)


def seal_with_code(secret: str, payload: dict, *, entropy: Entropy | None = None) -> dict:
    """Seal JSON under a key derived from a passphrase or invite secret."""
    entropy = default_entropy(entropy)
    salt = entropy.token_bytes(SALT_BYTES)
    nonce = entropy.token_bytes(NONCE_BYTES)
    sealed = aes_gcm_seal(_code_key(secret, salt), nonce, canonical_json(payload), b"")
    return {"v": 1, "salt": b64url_encode(salt), "sealed": b64url_encode(nonce + sealed)}


def open_with_code(secret: str, box: object) -> dict:
    """Open a ``{v: 1, salt, sealed}`` box; CryptoError for a wrong secret or tampering."""
    if not isinstance(box, dict) or box.get("v") != 1:
        raise ProtocolError("sealed box must be an object with v: 1")
    try:
        salt = b64url_decode(box.get("salt", ""))
        raw = b64url_decode(box.get("sealed", ""))
    except EncodingError as exc:
        raise CryptoError(f"sealed box is malformed: {exc}") from None
    if len(salt) != SALT_BYTES:
        raise CryptoError(f"sealed box salt must be {SALT_BYTES} bytes, got {len(salt)}")
    plaintext = aes_gcm_open(
        _code_key(secret, salt), raw[:NONCE_BYTES], raw[NONCE_BYTES:], b"", "sealed box"
    )
    payload = parse_json(plaintext)
    if not isinstance(payload, dict):
        raise CryptoError("sealed box payload is not an object")
    return payload


def make_recovery_bundle(
    passphrase: str, keyrings: dict[str, Keyring], *, entropy: Entropy | None = None
) -> dict:
    """A recovery bundle carrying keyrings (by storage key) and never a device keypair."""
    payload = {"keyrings": {sk: ring.to_wire() for sk, ring in sorted(keyrings.items())}}
    return seal_with_code(passphrase, payload, entropy=entropy)


def open_recovery_bundle(passphrase: str, bundle: object) -> dict[str, Keyring]:
    payload = open_with_code(passphrase, bundle)
    rings = payload.get("keyrings")
    if not isinstance(rings, dict):
        raise ProtocolError("recovery bundle payload has no 'keyrings' object")
    return {sk: Keyring.from_wire(ring) for sk, ring in rings.items()}


def make_invite(
    graph_id: str, keyring: Keyring, *, entropy: Entropy | None = None
) -> tuple[str, dict]:
    """An invite ``<doorCode>.<keySecret>`` and the box the host keeps behind the door code.

    Only the door code goes to a server; the key secret stays in the invite.
    """
    entropy = default_entropy(entropy)
    door = b64url_encode(entropy.token_bytes(16))
    secret = b64url_encode(entropy.token_bytes(16))
    box = seal_with_code(secret, {"graph": graph_id, "keyring": keyring.to_wire()}, entropy=entropy)
    return f"{door}.{secret}", box


def parse_invite(invite: str) -> tuple[str, str]:
    """Split an invite into (door code, key secret), checking both are base64url."""
    door, sep, secret = invite.partition(".") if isinstance(invite, str) else ("", "", "")
    if not sep or not door or not secret:
        raise EncodingError("invite must be '<doorCode>.<keySecret>'")
    b64url_decode(door)
    b64url_decode(secret)
    return door, secret


def open_invite(invite: str, box: object) -> tuple[str, Keyring]:
    """Open the box fetched by the invite's door code: (graph ID, keyring)."""
    _, secret = parse_invite(invite)
    payload = open_with_code(secret, box)
    return payload.get("graph"), Keyring.from_wire(payload.get("keyring"))
