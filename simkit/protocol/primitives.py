"""Thin, checked wrappers over the cryptographic primitives the spec names.

Kept separate so published test vectors (RFC 5869, RFC 7914, NIST GCM) can be
checked against exactly the functions the constructions use.
"""

import functools
import hashlib

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from simkit.errors import CryptoError, KeyFormatError

PBKDF2_ITERATIONS = 310_000
SALT_BYTES = 16
NONCE_BYTES = 12
KEY_BYTES = 32
TAG_BYTES = 16


def hkdf_sha256(ikm: bytes, *, salt: bytes, info: bytes, length: int = 32) -> bytes:
    """HKDF-SHA256 (RFC 5869). An empty salt means HashLen zero bytes, as in WebCrypto."""
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=salt, info=info).derive(ikm)


@functools.lru_cache(maxsize=256)
def pbkdf2_sha256(password: bytes, salt: bytes, iterations: int, length: int) -> bytes:
    """PBKDF2-HMAC-SHA256 (RFC 8018), the code-derived key construction.

    A pure function that costs 100 ms at 310,000 iterations, so equal inputs are
    derived once per process: a bundle made and opened in one world, an example
    Hypothesis replays while shrinking (docs/lab/performance.md). Derived by
    ``cryptography``'s OpenSSL, which took half the time of ``hashlib``'s (the
    system's OpenSSL 3.0) here."""
    return PBKDF2HMAC(hashes.SHA256(), length, salt, iterations).derive(password)


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def require_key(key: bytes, what: str = "graph key") -> bytes:
    """A 256-bit symmetric key, or a KeyFormatError naming the size it had."""
    if not isinstance(key, bytes | bytearray) or len(key) != KEY_BYTES:
        size = len(key) if isinstance(key, bytes | bytearray) else type(key).__name__
        raise KeyFormatError(f"{what} must be {KEY_BYTES} bytes (AES-256), got {size}")
    return bytes(key)


@functools.lru_cache(maxsize=4096)
def _cipher(key: bytes) -> AESGCM:
    """The AES-256-GCM context for a key, built once: every graph key serves many records."""
    return AESGCM(key)


def aes_gcm_seal(key: bytes, nonce: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """AES-256-GCM: ciphertext followed by the 16-byte tag (WebCrypto's layout)."""
    if len(nonce) != NONCE_BYTES:
        raise KeyFormatError(f"nonce must be {NONCE_BYTES} bytes, got {len(nonce)}")
    return _cipher(require_key(key)).encrypt(nonce, plaintext, aad)


def aes_gcm_open(key: bytes, nonce: bytes, sealed: bytes, aad: bytes, what: str) -> bytes:
    """Open AES-256-GCM output, raising CryptoError naming ``what`` on any failure."""
    if len(nonce) != NONCE_BYTES:
        raise CryptoError(f"{what}: nonce must be {NONCE_BYTES} bytes, got {len(nonce)}")
    if len(sealed) < TAG_BYTES:
        raise CryptoError(f"{what}: ciphertext shorter than the {TAG_BYTES}-byte tag")
    try:
        return _cipher(require_key(key)).decrypt(nonce, sealed, aad)
    except InvalidTag:
        raise CryptoError(
            f"{what}: authentication failed (wrong key, AAD or tampered bytes)"
        ) from None
