"""Exception classes shared by every layer.

Every library call that refuses its input raises a subclass of ``SimkitError``
whose message names the rule that was broken, so callers never need to parse a
traceback to learn what went wrong.
"""


class SimkitError(Exception):
    """Base class of every error simkit raises on purpose."""


class ProtocolError(SimkitError, ValueError):
    """A value breaks one of the protocol's byte-exact rules."""


class EncodingError(ProtocolError):
    """Malformed base64url, JSON or another wire encoding."""


class UnsafeIdError(ProtocolError):
    """An ID or graph ID breaks the safe-ID rule ``[A-Za-z0-9_-]{1,64}``."""


class KeyFormatError(ProtocolError):
    """A key or JWK has the wrong size, curve or members."""


class CryptoError(ProtocolError):
    """Decryption, unwrapping or an authenticity check failed."""


class TransportError(SimkitError):
    """A request or its response was lost on the way: the device cannot know
    whether the relay applied it, so it retries (spec: client rule 10)."""
