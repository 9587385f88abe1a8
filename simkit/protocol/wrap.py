"""Wrapping a graph key to a device: ephemeral ECDH P-256, HKDF-SHA256 with info
``skm-wrap-v1``, AES-256-GCM over the 32-byte key.

Wire form (docs/wire.md): ``wrapped`` is base64url of canonicalJson of
``{c, epk, n}``: ``epk`` the ephemeral public key as base64url of its JWK
(crv, kty, x, y), ``n`` the nonce, ``c`` ciphertext||tag. HKDF salt is empty and
the AES-GCM AAD is empty.
"""

from cryptography.hazmat.primitives.asymmetric import ec

from simkit.errors import CryptoError, EncodingError, KeyFormatError
from simkit.protocol.b64 import b64url_decode, b64url_encode
from simkit.protocol.canonical import canonical_json, parse_json
from simkit.protocol.entropy import Entropy, default_entropy
from simkit.protocol.keys import generate_private_key, import_public_jwk
from simkit.protocol.primitives import (
    NONCE_BYTES,
    aes_gcm_open,
    aes_gcm_seal,
    hkdf_sha256,
    require_key,
)

WRAP_INFO = b"skm-wrap-v1"


def _kek(private_key: ec.EllipticCurvePrivateKey, public_key: ec.EllipticCurvePublicKey) -> bytes:
    shared = private_key.exchange(ec.ECDH(), public_key)  # the x coordinate, as deriveBits(256)
    return hkdf_sha256(shared, salt=b"", info=WRAP_INFO)


def wrap_graph_key(
    graph_key: bytes, recipient_pub_jwk: dict, *, entropy: Entropy | None = None
) -> str:
    """Seal a 256-bit graph key to a device's wrapping public key."""
    entropy = default_entropy(entropy)
    require_key(graph_key)
    recipient = import_public_jwk(recipient_pub_jwk)
    ephemeral = generate_private_key(entropy)
    numbers = ephemeral.public_key().public_numbers()
    epk = {
        "crv": "P-256",
        "kty": "EC",
        "x": b64url_encode(numbers.x.to_bytes(32, "big")),
        "y": b64url_encode(numbers.y.to_bytes(32, "big")),
    }
    nonce = entropy.token_bytes(NONCE_BYTES)
    sealed = aes_gcm_seal(_kek(ephemeral, recipient), nonce, graph_key, b"")
    body = {
        "c": b64url_encode(sealed),
        "epk": b64url_encode(canonical_json(epk)),
        "n": b64url_encode(nonce),
    }
    return b64url_encode(canonical_json(body))


def unwrap_graph_key(wrapped: str, recipient_private_key: ec.EllipticCurvePrivateKey) -> bytes:
    """Open a wrap with the device's wrapping private key; CryptoError on any failure."""
    try:
        body = parse_json(b64url_decode(wrapped))
        if not isinstance(body, dict):
            raise CryptoError("wrapped key is not a JSON object")
        epk = import_public_jwk(parse_json(b64url_decode(body.get("epk", ""))))
        nonce = b64url_decode(body.get("n", ""))
        sealed = b64url_decode(body.get("c", ""))
    except (EncodingError, KeyFormatError, TypeError) as exc:
        raise CryptoError(f"wrapped key is malformed: {exc}") from None
    key = aes_gcm_open(_kek(recipient_private_key, epk), nonce, sealed, b"", "wrapped graph key")
    if len(key) != 32:
        raise CryptoError(f"unwrapped graph key has {len(key)} bytes, expected 32")
    return key
