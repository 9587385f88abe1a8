"""Safe IDs and graph storage keys (spec: Graph identifiers and storage keys)."""

import re

from simkit.errors import UnsafeIdError

SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def is_safe_id(s: object) -> bool:
    """True when ``s`` is a string matching ``[A-Za-z0-9_-]{1,64}``."""
    return isinstance(s, str) and SAFE_ID.fullmatch(s) is not None


def require_safe_id(s: object, what: str) -> str:
    """Return ``s`` if it is a safe ID, else raise naming ``what`` and the rule."""
    if not is_safe_id(s):
        raise UnsafeIdError(f"{what} {s!r} is not a safe ID: it must match [A-Za-z0-9_-]{{1,64}}")
    return s  # type: ignore[return-value]


def storage_key(graph_id: str, caller_id: str) -> str:
    """Resolve a graph ID as a caller sends it to the key everything binds to.

    ``u`` -> ``u:<caller>``; ``g:<group>`` -> ``g:<group>``; ``d:<member>`` ->
    ``d:<a>:<b>`` with ``[a, b] = sorted([caller, member])``, so both parties of a
    pairwise graph reach one row.
    """
    require_safe_id(caller_id, "caller member ID")
    if not isinstance(graph_id, str):
        raise UnsafeIdError(f"graph ID must be a string, got {type(graph_id).__name__}")
    if graph_id == "u":
        return f"u:{caller_id}"
    prefix, sep, rest = graph_id.partition(":")
    if sep and prefix == "g":
        return f"g:{require_safe_id(rest, 'group ID')}"
    if sep and prefix == "d":
        a, b = sorted((caller_id, require_safe_id(rest, "pairwise member ID")))
        return f"d:{a}:{b}"
    raise UnsafeIdError(f"graph ID {graph_id!r} must be 'u', 'g:<groupId>' or 'd:<memberId>'")


def graph_id_for(storage_key_: str, member_id: str) -> str:
    """The graph ID ``member_id`` sends for a storage key (the inverse of ``storage_key``)."""
    kind, _, rest = storage_key_.partition(":")
    if kind == "u":
        return "u"
    if kind == "d":
        a, _, b = rest.partition(":")
        return f"d:{b if a == member_id else a}"
    return storage_key_
