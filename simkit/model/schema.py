"""The shapes the relay accepts, as yes/no predicates (spec: Endpoints; docs/relay.md).

The model only needs to know *whether* a body, query or path parameter fits (a
misfit is ``400 invalid`` whatever the field), so each shape is one predicate.
"""

import re

from simkit.errors import EncodingError
from simkit.protocol.b64 import b64url_decode

MAX_SAFE_INTEGER = 2**53 - 1  # revs and epochs are JavaScript numbers
MAX_DEPTH = 8  # nested containers in a JSON body
MAX_WRAPS = 10_000  # devices named in one key put
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_B64URL = re.compile(r"[A-Za-z0-9_-]+")
_LABEL = re.compile(r"[\x21-\x2b\x2d-\x7e]{1,128}")  # printable ASCII, no ',' (the list separator)


def safe_id(value: object) -> bool:
    return isinstance(value, str) and _SAFE_ID.fullmatch(value) is not None


def whole(value: object, lo: int = 0) -> bool:
    """A JSON number that is an integer in [lo, 2^53 - 1] (``1e3`` counts, ``true`` does not)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return type(value) is int and lo <= value <= MAX_SAFE_INTEGER


def string(value: object, max_len: int) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= max_len


def b64_chars(value: object, max_len: int) -> bool:
    """Characters of the base64url alphabet (``n`` and ``c``: the encoding is not shown)."""
    return string(value, max_len) and _B64URL.fullmatch(value) is not None


def canonical_b64(value: object, max_len: int, size: int | None = None) -> bool:
    """Canonical unpadded base64url, optionally of exactly ``size`` bytes."""
    if not string(value, max_len):
        return False
    try:
        data = b64url_decode(value)
    except EncodingError:
        return False
    return size is None or len(data) == size


def label(value: object) -> bool:
    """A record kind or shard label (``k``, ``sh``, the pull filters' items)."""
    return isinstance(value, str) and _LABEL.fullmatch(value) is not None


def members(value: object, required: set[str], optional: set[str] = frozenset()) -> bool:
    """An object with every required member and nothing else but optional ones."""
    return isinstance(value, dict) and required <= value.keys() <= required | optional


def has(value: object, required: set[str]) -> bool:
    """An object with every required member; any others are a newer client's, which a
    relay drops (Versioning rule 3: an older relay drops ``excluding``)."""
    return isinstance(value, dict) and required <= value.keys()


def too_deep(value: object, levels: int = MAX_DEPTH) -> bool:
    """More than ``levels`` nested containers (stops looking at the limit)."""
    if not isinstance(value, dict | list):
        return False
    if levels == 0:
        return True
    items = value.values() if isinstance(value, dict) else value
    return any(too_deep(item, levels - 1) for item in items)


def decimal(value: object, lo: int, hi: int = MAX_SAFE_INTEGER) -> bool:
    """A query or path integer: ASCII digits, no sign, no leading zero, in [lo, hi]."""
    return (
        isinstance(value, str)
        and value.isascii()
        and value.isdigit()
        and (value == "0" or not value.startswith("0"))
        and len(value) <= len(str(hi))  # so int() never parses a megabyte of digits
        and lo <= int(value) <= hi
    )


def label_list(value: object) -> bool:
    """The ``kinds`` / ``shards`` query: comma-separated labels, none empty."""
    return isinstance(value, str) and all(label(item) for item in value.split(","))


def jwk(value: object) -> bool:
    """An EC P-256 public JWK as WebCrypto exports it (a private ``d`` is refused)."""
    return (
        members(value, {"kty", "crv", "x", "y"}, {"alg", "ext", "key_ops", "kid", "use"})
        and value["kty"] == "EC"
        and value["crv"] == "P-256"
        and canonical_b64(value["x"], 43, 32)
        and canonical_b64(value["y"], 43, 32)
        and isinstance(value.get("ext", False), bool)
        and isinstance(value.get("key_ops", []), list)
        and len(value.get("key_ops", [])) <= 8
        and all(string(op, 32) for op in value.get("key_ops", []))
        and all(string(value[name], 64) for name in ("alg", "kid", "use") if name in value)
    )


def device_body(value: object) -> bool:
    """``PUT /devices/:id``: ``{pubJwk, sigJwk, selfSig?, label?}``."""
    return (
        has(value, {"pubJwk", "sigJwk"})
        and jwk(value["pubJwk"])
        and jwk(value["sigJwk"])
        and ("selfSig" not in value or canonical_b64(value["selfSig"], 512))
        and ("label" not in value or string(value["label"], 256))
    )


def op(value: object, max_c: int) -> bool:
    """One GraphOpIn: ``{recordId, rev, n, c, e?, k?, sh?}``."""
    return (
        has(value, {"recordId", "rev", "n", "c"})
        and safe_id(value["recordId"])
        and whole(value["rev"])
        and b64_chars(value["n"], 64)
        and b64_chars(value["c"], max_c)
        and ("e" not in value or whole(value["e"]))
        and ("k" not in value or label(value["k"]))
        and ("sh" not in value or label(value["sh"]))
    )


def push_body(value: object, max_ops: int, max_c: int) -> bool:
    return (
        has(value, {"ops"})
        and isinstance(value["ops"], list)
        and len(value["ops"]) <= max_ops
        and all(op(item, max_c) for item in value["ops"])
    )


def keys_body(value: object) -> bool:
    """``POST keys``: ``{epoch, wraps: [{deviceId, wrapped}], excluding?}``, no device twice."""
    if not (
        has(value, {"epoch", "wraps"})
        and whole(value["epoch"], lo=1)
        and isinstance(value["wraps"], list)
        and len(value["wraps"]) <= MAX_WRAPS
    ):
        return False
    wraps = value["wraps"]
    if not all(
        has(w, {"deviceId", "wrapped"}) and safe_id(w["deviceId"]) and string(w["wrapped"], 4096)
        for w in wraps
    ):
        return False
    excluding = value.get("excluding", [])
    return (
        isinstance(excluding, list)
        and len(excluding) <= MAX_WRAPS
        and all(safe_id(d) for d in excluding)
        and len({w["deviceId"] for w in wraps}) == len(wraps)
        and len(set(excluding)) == len(excluding)
    )
