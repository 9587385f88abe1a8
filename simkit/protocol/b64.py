"""Unpadded base64url, as the spec fixes for every binary value on the wire."""

import base64
import binascii
import re

from simkit.errors import EncodingError

_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")


def b64url_encode(data: bytes) -> str:
    """Encode bytes as unpadded base64url (what a WebCrypto client sends)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Decode unpadded base64url, refusing anything a conforming encoder never emits.

    Padding, characters outside ``[A-Za-z0-9_-]``, an impossible length and
    non-zero trailing bits are all refused, so every byte string has exactly one
    accepted spelling (see docs/wire.md).
    """
    if not isinstance(text, str):
        raise EncodingError(f"base64url value must be a string, got {type(text).__name__}")
    if not _ALPHABET.fullmatch(text):
        bad = next(ch for ch in text if not (ch.isascii() and (ch.isalnum() or ch in "_-")))
        raise EncodingError(
            f"base64url value contains {bad!r}; only [A-Za-z0-9_-] is allowed, unpadded"
        )
    if len(text) % 4 == 1:
        raise EncodingError(f"base64url value has impossible length {len(text)}")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as exc:  # pragma: no cover - the checks above exclude it
        raise EncodingError(f"malformed base64url: {exc}") from None
    if b64url_encode(data) != text:
        raise EncodingError("base64url value has non-zero trailing bits (non-canonical)")
    return data
