"""The shape of a relay's answer, checked before the device uses it.

A relay that lies may send anything; a device must neither crash on it nor take it
for true. ``problem(request, response)`` says what is wrong with a 200 JSON answer
(None when nothing is): each member the spec's table of the answer names, of its type
and range. ``send_with_retries`` treats a malformed answer as a server failure: retried
with backoff (client rule 10), and the sync run gives up when it persists
(docs/client.md, "Malformed answers").
"""

from simkit.errors import EncodingError
from simkit.protocol.canonical import parse_json
from simkit.protocol.ids import is_safe_id
from simkit.relay import Request, Response


def _count(value) -> bool:  # a whole number from 0 (JSON numbers: 2.0 is 2)
    return isinstance(value, int | float) and not isinstance(value, bool) and value == int(
        value
    ) and value >= 0  # fmt: skip


def _positive(value) -> bool:
    return _count(value) and value >= 1


def _text(value) -> bool:
    return isinstance(value, str)


def _entries(value, check) -> str | None:
    if not isinstance(value, list):
        return "is not a list"
    for index, entry in enumerate(value):
        problem = "is not an object" if not isinstance(entry, dict) else check(entry)
        if problem:
            return f"entry {index} {problem}"
    return None


def _members(entry: dict, rules: dict, optional: dict | None = None) -> str | None:
    """The first member of ``rules`` missing or failing its rule; members of
    ``optional`` may be absent (or null)."""
    for name, rule in rules.items():
        if name not in entry:
            return f"has no {name}"
        if not rule(entry[name]):
            return f"has a {name} out of its type or range"
    for name, rule in (optional or {}).items():
        if entry.get(name) is not None and not rule(entry[name]):
            return f"has a {name} out of its type or range"
    return None


def _device(entry: dict) -> str | None:
    """A roster or key gap entry: IDs, both public keys as objects, selfSig a string."""
    return _members(
        entry,
        {"deviceId": is_safe_id, "memberId": is_safe_id, "pubJwk": _object, "sigJwk": _object},
        {"selfSig": _text},
    )


def _object(value) -> bool:
    return isinstance(value, dict)


def _op(entry: dict) -> str | None:
    return _members(
        entry,
        {"recordId": is_safe_id, "rev": _count, "n": _text, "c": _text, "seq": _positive},
        {"e": _positive, "k": _text, "sh": _text},
    )


CHECKS = {  # the last segment of a graph route (or a top route), its answer's rules
    "pull": lambda a: _members(a, {"cursor": _count, "more": _bool}, {"epoch": _count})
    or _where("ops", _entries(a.get("ops"), _op)),
    "log": lambda a: _members(
        a, {"cursor": _count, "more": _bool, "head": _count, "oldest": _count})
    or _where("entries", _entries(a.get("entries"), lambda e: _members(
        e, {"seq": _positive, "recordId": is_safe_id, "rev": _count}))),
    "push": lambda a: _members(a, {"accepted": _count, "cursor": _count, "now": _count},
                               {"epoch": _count}),
    "keys": lambda a: _members(a, {"latestEpoch": _count, "rotationRequired": _bool})
    or _where("wraps", _entries(a.get("wraps"), lambda w: _members(
        w, {"epoch": _positive, "wrapped": _text}))),
    "devices": lambda a: _where("devices", _entries(a.get("devices"), lambda d: _device(d)
        or _members(d, {"revokedAt": lambda v: v is None or _count(v)}))),
    "keygaps": lambda a: _members(a, {"latestEpoch": _count})
    or _where("gaps", _entries(a.get("gaps"), lambda g: _device(g)
        or _members(g, {"epochs": lambda v: isinstance(v, list) and all(map(_positive, v))}))),
}  # fmt: skip


def _bool(value) -> bool:
    return isinstance(value, bool)


def _where(member: str, problem: str | None) -> str | None:
    return None if problem is None else f"{member} {problem}"


def problem(request: Request, response: Response) -> str | None:
    """What is wrong with a 200 JSON answer to ``request`` (None: nothing, or an answer
    this module does not check: an error, a blob's bytes, a route without rules)."""
    if response.status != 200:
        return None
    parts = request.path.strip("/").split("/")
    route = parts[2] if len(parts) == 3 and parts[0] == "graphs" else None
    check = CHECKS.get(route)
    if check is None or request.method != ("POST" if route == "push" else "GET"):
        return None
    try:
        answer = parse_json(response.body)
    except EncodingError:
        return "the answer is not JSON"
    if not isinstance(answer, dict):
        return "the answer is not a JSON object"
    found = check(answer)
    return None if found is None else f"the answer {found}"
