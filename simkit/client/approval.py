"""The approval gate: every wrap to another device passes through here (client rule 14).

Pins are device-local and never synced, stored as ``pin:<deviceId>`` with the
fingerprint of the key triple that was approved. The gate never throws: it
answers "wrap" or "block" and reports why through events.
"""

import functools

import attrs

from simkit.errors import KeyFormatError
from simkit.protocol.keys import (
    device_fingerprint,
    import_public_jwk,
    self_attestation_bytes,
    verify_bytes,
)

OBSERVE = "observe"
APPROVE = "approve"

UNKNOWN = "unknown"
APPROVED = "approved"
REJECTED = "rejected"
CONFLICTED = "conflicted"


@attrs.frozen
class Pin:
    """A device's approval pin for another device (spec: Device approval pin): its
    ``state``, how it got there (``via``: setup, human, possession) and the
    fingerprint of the key triple it was set for."""

    state: str
    via: str
    fingerprint: str | None


@attrs.frozen
class GateDecision:
    wrap: bool
    pin: str
    event: str | None = None  # "device.pending" or "device.conflict" when one is due


def fingerprint_of(entry: dict) -> str | None:
    """The fingerprint of a roster/keygap entry's triple, or None if its keys are
    malformed: not JWKs, or not points of P-256 (a relay that lies can send either; a
    device whose keys cannot be read is never wrapped to)."""
    try:
        pub, sig = entry["pubJwk"], entry["sigJwk"]
        if not (_a_point(pub["x"], pub["y"]) and _a_point(sig["x"], sig["y"])):
            return None
        return device_fingerprint(entry["memberId"], pub, sig)
    except (KeyFormatError, KeyError, TypeError):
        return None


@functools.lru_cache(maxsize=1024)
def _a_point(x: object, y: object) -> bool:
    """Whether (x, y) is a point of P-256 (asked once per key: every roster repeats them)."""
    try:
        import_public_jwk({"kty": "EC", "crv": "P-256", "x": x, "y": y})
    except (KeyFormatError, TypeError):
        return False
    return True


def self_sig_valid(entry: dict) -> bool:
    """Whether the entry's selfSig verifies under its own signing key (absent: never)."""
    fingerprint = fingerprint_of(entry)
    self_sig = entry.get("selfSig")
    if fingerprint is None or not isinstance(self_sig, str):
        return False
    return verify_bytes(entry["sigJwk"], self_attestation_bytes(fingerprint), self_sig)


def decide(pin: Pin | None, entry: dict, mode: str) -> GateDecision:
    """Judge one handed triple against its pin.

    approved + same fingerprint: wrap. approved + changed fingerprint: conflicted.
    unknown: pending. rejected/conflicted: blocked. In ``observe`` mode every
    decision wraps anyway; the events still report what ``approve`` would block.
    """
    fingerprint = fingerprint_of(entry)
    state = pin.state if pin else UNKNOWN
    if fingerprint is None:  # keys no device could wrap to: never, in any mode
        return GateDecision(False, state)
    if state == APPROVED and pin.fingerprint == fingerprint:
        return GateDecision(True, APPROVED)
    if state == APPROVED:
        return GateDecision(mode == OBSERVE, CONFLICTED, "device.conflict")
    event = "device.pending" if state == UNKNOWN else None
    return GateDecision(mode == OBSERVE, state, event)
