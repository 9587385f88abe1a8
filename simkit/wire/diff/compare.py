"""What ``simkit diff`` compares of two answers, and what it leaves free.

Compared: the status; the error code and ``need``; every member of a JSON success;
the bytes of a blob download; the headers ``content-type`` (its media type),
``x-blob-nonce`` and ``allow`` (as a set of methods). Free (docs/relay.md,
"Differential fuzzing"): an error's ``message`` and its other members (the spec
shows no error shape beyond ``error`` and ``need``), JSON's encoding (key order,
spacing, escapes, ``1`` vs ``1.0``), and the values of time stamps (``now``,
``registeredAt``, ``revokedAt``, ``expiresAt``: two relays' clocks never agree to
the millisecond), of which only null versus a number is compared.
"""

from simkit.errors import EncodingError
from simkit.model.answer import first_difference
from simkit.protocol.canonical import parse_json
from simkit.relay import Response

TIME_MEMBERS = frozenset({"now", "registeredAt", "revokedAt", "expiresAt"})
ERROR_MEMBERS = ("error", "need")


def _untimed(value: object) -> object:
    if isinstance(value, dict):
        return {
            k: ("<time>" if k in TIME_MEMBERS and v is not None else _untimed(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def view(response: Response) -> dict:
    """The parts of an answer diff compares, with the free choices taken out."""
    headers = {name.lower(): value for name, value in response.headers.items()}
    seen: dict = {"status": response.status}
    if "content-type" in headers:
        seen["content-type"] = headers["content-type"].split(";")[0].strip().lower()
    if "x-blob-nonce" in headers:
        seen["x-blob-nonce"] = headers["x-blob-nonce"]
    if "allow" in headers:
        seen["allow"] = sorted(m.strip().upper() for m in headers["allow"].split(","))
    if seen.get("content-type") == "application/octet-stream":
        seen["bytes"] = response.body
        return seen
    try:
        body = parse_json(response.body)
    except EncodingError:
        seen["bytes"] = response.body
        return seen
    if response.status != 200 and isinstance(body, dict):
        body = {name: body[name] for name in ERROR_MEMBERS if name in body}
    seen["body"] = _untimed(body)
    return seen


def code(response: Response) -> str:
    """``status error-code`` of an answer, for a one-line summary."""
    body = view(response).get("body")
    error = body.get("error") if isinstance(body, dict) else None
    return f"{response.status} {error}" if error else str(response.status)


def differences(reference: Response, relay: Response) -> list[str]:
    """Where the relay's answer differs from the reference relay's (empty: they agree)."""
    want, got = view(reference), view(relay)
    if want["status"] != got["status"]:
        return [f"status: reference {code(reference)}, relay {code(relay)}"]
    found = []
    for name in ("content-type", "x-blob-nonce", "allow"):
        if want.get(name) != got.get(name):
            found.append(f"header {name}: reference {want.get(name)!r}, relay {got.get(name)!r}")
    if "bytes" in want or "bytes" in got:
        if want.get("bytes") != got.get("bytes"):
            found.append(
                f"body: reference {len(want.get('bytes') or b'')} bytes, relay "
                f"{len(got.get('bytes') or b'')} bytes differ"
            )
        return found
    difference = first_difference("body", want["body"], got["body"])
    return [*found, difference] if difference else found
