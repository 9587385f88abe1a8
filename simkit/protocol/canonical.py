"""canonicalJson, byte for byte as a JavaScript client computes it.

The reference form is ``JSON.stringify(sortDeep(value))`` where ``sortDeep``
rebuilds every object with ``Object.fromEntries`` over ``Object.keys(o).sort()``
(see docs/wire.md). Two consequences follow from JavaScript itself and are
reproduced here on purpose:

* keys are sorted by UTF-16 code units (JavaScript's default sort), not by code
  points as Python would;
* an object enumerates its integer-like keys (canonical array indices,
  ``"0"`` .. ``"4294967294"``) first, in numeric order, before the other keys in
  insertion (here: sorted) order, so ``{"10", "9", "a"}`` serialises as
  ``"9", "10", "a"``.

Numbers are JavaScript doubles: Python ints are rounded to the nearest double as
``JSON.parse`` would, and every number is written by ECMAScript's
Number::toString (``1`` not ``1.0``, ``1e+21``, ``5e-7``, ``-0`` as ``0``; NaN and
infinities as ``null``).
"""

import json
import math
import re
from collections.abc import Callable

from simkit.errors import EncodingError

_SURROGATE = re.compile("[\ud800-\udfff]")
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")
_MAX_ARRAY_INDEX = 2**32 - 2
_EXACT_INT = 2**53


def js_number(x: float | int) -> str:
    """ECMAScript Number::toString for a finite number (string concatenation form)."""
    if isinstance(x, int):
        if -_EXACT_INT < x < _EXACT_INT:
            return str(x)
        x = float(x)  # OverflowError is the caller's to turn into null or an error
    if x == 0:
        return "0"
    if x < 0:
        return "-" + js_number(-x)
    digits, n = _shortest_digits(x)
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e >= 0 else "-"
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{mantissa}e{sign}{abs(e)}"


def _shortest_digits(x: float) -> tuple[str, int]:
    """Shortest round-trip digits ``s`` and point position ``n`` with x = 0.s * 10^n.

    Python's ``repr`` and ECMAScript both pick the shortest digit string that
    rounds back to ``x`` (the closest one when several exist), so only the layout
    differs.
    """
    mantissa, _, exponent = repr(x).partition("e")
    whole, _, fraction = mantissa.partition(".")
    if fraction == "0":
        fraction = ""
    digits = whole + fraction
    n = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    return stripped.rstrip("0"), n


def _number(x: float | int) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return "null"
    try:
        return js_number(x)
    except OverflowError:  # an int beyond the double range is Infinity in JavaScript
        return "null"


def _string(s: str) -> str:
    """JSON.stringify's escaping: short escapes, \\u00XX for controls, lone
    surrogates as \\uXXXX, everything else raw."""
    if _SURROGATE.search(s) is None:
        return json.dumps(s, ensure_ascii=False)
    # Pair up surrogates the way a UTF-16 string would; lone ones stay and are escaped.
    joined = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _SURROGATE.sub(
        lambda m: f"\\u{ord(m.group()):04x}", json.dumps(joined, ensure_ascii=False)
    )


def _utf16_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _is_array_index(key: str) -> bool:
    return _ARRAY_INDEX.fullmatch(key) is not None and int(key) <= _MAX_ARRAY_INDEX


def _ordered_keys(obj: dict) -> list[str]:
    for key in obj:
        if not isinstance(key, str):
            raise EncodingError(f"canonicalJson: object key {key!r} is not a string")
    keys = sorted(obj, key=_utf16_order)
    indices = [k for k in keys if _is_array_index(k)]
    if not indices:
        return keys
    indices.sort(key=int)
    return indices + [k for k in keys if not _is_array_index(k)]


def _encode(value: object, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_string(value))
    elif isinstance(value, int | float):
        out.append(_number(value))
    elif isinstance(value, dict):
        out.append("{")
        for i, key in enumerate(_ordered_keys(value)):
            if i:
                out.append(",")
            out.append(_string(key))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise EncodingError(f"canonicalJson: {type(value).__name__} is not a JSON value")


def _not_json(value: object) -> object:
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def compact_json_encoder(*, sort_keys: bool, ascii_only: bool) -> Callable[[object], str]:
    """Compact JSON text (no NaN) through CPython's C encoder, built once.

    ``json.dumps`` builds that encoder on every call, which costs as much as
    encoding a small record; relay answers and record checks are on the hot path.
    """
    make = json.encoder.c_make_encoder
    if make is None:  # not CPython: the library's own encoder
        encoder = json.JSONEncoder(
            ensure_ascii=ascii_only, separators=(",", ":"), sort_keys=sort_keys, allow_nan=False
        )
        return encoder.encode
    escape = json.encoder.encode_basestring_ascii if ascii_only else json.encoder.encode_basestring
    chunks = make(None, _not_json, escape, None, ":", ",", sort_keys, False, False)
    return lambda value: "".join(chunks(value, 0))


_plain_text = compact_json_encoder(sort_keys=True, ascii_only=False)
compact_json = compact_json_encoder(sort_keys=False, ascii_only=True)
"""``json.dumps(value, separators=(",", ":"), allow_nan=False)``, faster: wire bodies."""


def _plain(value: object) -> bool:
    """True when Python's own sorted JSON encoder writes ``value`` exactly as
    JavaScript would: no floats, integers exact as doubles, no lone surrogates, and
    keys that are ASCII (code-point and UTF-16 orders agree) and not array indices.

    Scalars inside objects and arrays are checked in line, not by a call each: every
    record a device receives is checked here.
    """
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not key.isascii() or key[:1].isdigit():
                return False
            if not _plain_item(item):
                return False
        return True
    if kind is list:
        return all(_plain_item(item) for item in value)
    return _plain_item(value)


def _plain_item(value: object) -> bool:
    kind = type(value)
    if kind is str:
        return value.isascii() or _SURROGATE.search(value) is None
    if kind is int:
        return -_EXACT_INT < value < _EXACT_INT
    if value is None or kind is bool:
        return True
    return (kind is dict or kind is list) and _plain(value)


def canonical_json_text(value: object) -> str:
    """canonicalJson as text (see the module docstring for the exact form).

    Most values take the C encoder (a record is encoded by every device that
    receives it); the rest take the JavaScript-exact walk below.
    """
    if _plain(value):
        return _plain_text(value)
    out: list[str] = []
    _encode(value, out)
    return "".join(out)


def canonical_json(value: object) -> bytes:
    """canonicalJson as the UTF-8 bytes that are signed, sealed and compared."""
    return canonical_json_text(value).encode("utf-8")


def parse_json(data: bytes | str) -> object:
    """Parse JSON as JavaScript's JSON.parse does, refusing what it refuses.

    Python's parser also accepts ``NaN`` and ``Infinity`` literals and invalid
    UTF-8; JavaScript does not, so neither do we.
    """
    try:
        text = data.decode("utf-8") if isinstance(data, bytes | bytearray) else data
        return _DECODER.decode(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise EncodingError(f"malformed JSON: {exc}") from None


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
