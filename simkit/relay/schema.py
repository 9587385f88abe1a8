"""Request schemas: every body, query and path parameter is checked before use.

Anything that does not fit is ``400 invalid`` with a message naming the field
and the rule, so bad input never reaches the store and never becomes a 500
(spec: Endpoints, "every body is validated against a schema").
"""

import re
from collections.abc import Iterable, Mapping

from simkit.errors import EncodingError
from simkit.protocol.b64 import b64url_decode
from simkit.protocol.canonical import parse_json
from simkit.protocol.http import Refused, invalid
from simkit.protocol.ids import is_safe_id

MAX_SAFE_INTEGER = 2**53 - 1  # JavaScript's Number.MAX_SAFE_INTEGER
MAX_JSON_DEPTH = 8  # no body needs more than 3 nested containers
MAX_NONCE_CHARS = 64  # an op's `n` and a blob's x-blob-nonce (a 96-bit nonce is 16)
MAX_LABEL_CHARS = 128  # an op's `k` and `sh`
B64URL = re.compile(r"[A-Za-z0-9_-]+")
# `k`, `sh` and the pull filters: printable ASCII without ',' (the list separator).
LABEL = re.compile(r"[\x21-\x2b\x2d-\x7e]+")
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,15}")


def show(value: object) -> str:
    """A short, safe rendering of caller input for an error message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def too_large(body: bytes, limit: int) -> None:
    if len(body) > limit:
        raise Refused(413, "too-large", f"body is {len(body)} bytes; the limit is {limit}")


def json_body(body: bytes, limit: int) -> object:
    """Parse a JSON body as JSON.parse would, refusing oversized and over-deep ones."""
    too_large(body, limit)
    try:
        value = parse_json(body)
    except EncodingError as exc:
        raise invalid(f"body is not JSON: {exc}") from None
    if _deeper_than(value, MAX_JSON_DEPTH):
        raise invalid(f"body nests more than {MAX_JSON_DEPTH} levels")
    return value


def _deeper_than(value: object, limit: int) -> bool:
    """Iterative, so a pathological body cannot exhaust the Python stack here."""
    containers = (dict, list)
    stack = [(value, 0)] if isinstance(value, containers) else []
    while stack:
        item, depth = stack.pop()
        if depth == limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, containers))
    return False


def fields(
    value: object,
    where: str,
    required: Iterable[str],
    optional: Iterable[str] = (),
    strict: bool = False,
) -> dict:
    """An object with every required member: a missing one is refused; members this
    relay does not know are dropped, as Versioning rule 3 has an older relay drop
    ``excluding`` (a newer client's optional fields must not be refused). ``strict``:
    refused instead (a JWK, where an unknown member may be a private key)."""
    if not isinstance(value, dict):
        raise invalid(f"{where} must be an object")
    required, optional = tuple(required), tuple(optional)
    for name in required:
        if name not in value:
            raise invalid(f"{where} is missing {name!r}")
    known = (*required, *optional)
    for name in value:
        if strict and name not in known:
            raise invalid(f"{where} has unexpected member {show(name)}")
    return {name: item for name, item in value.items() if name in known}


def integer(value: object, where: str, lo: int = 0, hi: int = MAX_SAFE_INTEGER) -> int:
    """A whole number in [lo, hi]; ``1e3`` counts, as JSON.parse reads it as 1000."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise invalid(f"{where} must be an integer from {lo} to {hi}")
    return value


def text(
    value: object,
    where: str,
    max_len: int,
    pattern: re.Pattern | None = None,
    what: str = "a string",
) -> str:
    if (
        not isinstance(value, str)
        or not 1 <= len(value) <= max_len
        or (pattern is not None and pattern.fullmatch(value) is None)
    ):
        raise invalid(f"{where} must be {what} of 1 to {max_len} characters")
    return value


def label(value: object, where: str) -> str:
    """A record kind or shard label: what the pull filters can name."""
    return text(value, where, MAX_LABEL_CHARS, LABEL, "printable ASCII without ','")


def safe_id(value: object, where: str) -> str:
    if not is_safe_id(value):
        raise invalid(f"{where} {show(value)} must match [A-Za-z0-9_-]{{1,64}}")
    return value  # type: ignore[return-value]


def array(value: object, where: str, max_items: int) -> list:
    if not isinstance(value, list) or len(value) > max_items:
        raise invalid(f"{where} must be an array of at most {max_items} items")
    return value


def distinct(values: list[str], where: str) -> list[str]:
    if len(set(values)) != len(values):
        raise invalid(f"{where} names a device more than once")
    return values


def b64url(value: object, where: str, max_len: int) -> str:
    """A strict, canonical, unpadded base64url value (what WebCrypto clients send)."""
    try:
        b64url_decode(text(value, where, max_len, B64URL, "base64url"))
    except EncodingError as exc:
        raise invalid(f"{where}: {exc}") from None
    return value  # type: ignore[return-value]


_JWK_REQUIRED = ("kty", "crv", "x", "y")
_JWK_OPTIONAL = ("alg", "ext", "key_ops", "kid", "use")


def public_jwk(value: object, where: str) -> dict:
    """An EC P-256 public JWK as WebCrypto exports it; a private member is refused."""
    jwk = fields(value, where, _JWK_REQUIRED, _JWK_OPTIONAL, strict=True)
    if jwk["kty"] != "EC" or jwk["crv"] != "P-256":
        raise invalid(f"{where} must be an EC P-256 key (kty 'EC', crv 'P-256')")
    for coordinate in "xy":
        if len(b64url_decode(b64url(jwk[coordinate], f"{where}.{coordinate}", 43))) != 32:
            raise invalid(f"{where}.{coordinate} must encode 32 bytes")
    if "ext" in jwk and not isinstance(jwk["ext"], bool):
        raise invalid(f"{where}.ext must be a boolean")
    for op in array(jwk.get("key_ops", []), f"{where}.key_ops", 8):
        text(op, f"{where}.key_ops[]", 32)
    for name in ("alg", "kid", "use"):
        if name in jwk:
            text(jwk[name], f"{where}.{name}", 64)
    return jwk


def decimal(raw: object, where: str, lo: int, hi: int) -> int:
    """An integer written in decimal text (no sign, no leading zeros) in [lo, hi]."""
    if not isinstance(raw, str) or _DECIMAL.fullmatch(raw) is None or not lo <= int(raw) <= hi:
        raise invalid(f"{where} must be a decimal integer from {lo} to {hi}")
    return int(raw)


def query_int(query: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = query.get(name)
    return default if raw is None else decimal(raw, f"query {name}", lo, hi)


def query_list(query: Mapping[str, str], name: str) -> frozenset[str] | None:
    """A comma-separated list of labels, or ``None`` when the parameter is absent."""
    raw = query.get(name)
    if raw is None:
        return None
    items = raw.split(",") if isinstance(raw, str) else [None]
    if not all(isinstance(i, str) and LABEL.fullmatch(i) for i in items):
        raise invalid(f"query {name} must be a comma-separated list of non-empty labels")
    return frozenset(items)
