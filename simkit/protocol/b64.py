"""Unpadded base64url, as the spec fixes for every binary value on the wire."""

import binascii

from simkit.errors import EncodingError

_DIGITS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
_VALUE = {ch: i for i, ch in enumerate(_DIGITS)}
_TO_STANDARD = bytes.maketrans(b"-_", b"+/")
_TO_URL = bytes.maketrans(b"+/", b"-_")
_UNUSED_BITS = {2: 0x0F, 3: 0x03}  # the last digit's bits beyond the data, by length % 4


def b64url_encode(data: bytes) -> str:
    """Encode bytes as unpadded base64url (what a WebCrypto client sends)."""
    return binascii.b2a_base64(data, newline=False).translate(_TO_URL).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    """Decode unpadded base64url, refusing anything a conforming encoder never emits.

    Padding, characters outside ``[A-Za-z0-9_-]``, an impossible length and
    non-zero trailing bits are all refused, so every byte string has exactly one
    accepted spelling (see docs/wire.md).
    """
    if not isinstance(text, str):
        raise EncodingError(f"base64url value must be a string, got {type(text).__name__}")
    bad = "+" in text or "/" in text or "=" in text  # the standard alphabet, or padding
    tail = len(text) % 4
    if tail == 1:
        bad = bad or any(ch not in _VALUE for ch in text)
    elif not bad:
        try:
            padded = text.encode("ascii").translate(_TO_STANDARD) + b"=" * (-tail % 4)
            data = binascii.a2b_base64(padded, strict_mode=True)
        except ValueError:  # a character outside the alphabet (UnicodeError is one)
            bad = True
    if bad:
        char = next(ch for ch in text if ch not in _VALUE)
        raise EncodingError(
            f"base64url value contains {char!r}; only [A-Za-z0-9_-] is allowed, unpadded"
        )
    if tail == 1:
        raise EncodingError(f"base64url value has impossible length {len(text)}")
    if tail and _VALUE[text[-1]] & _UNUSED_BITS[tail]:
        raise EncodingError("base64url value has non-zero trailing bits (non-canonical)")
    return data
