"""What the spec fixes about one record, one sealed op and one checkpoint, written from
the spec's tables (GraphRecord, RecordEnvelope, Ops on the wire, Checkpoint record,
client rule 2). Pure functions: a problem is a (reason, sentence) pair, no problem is
None. The reasons are the spec's words where it names them (``shape``, ``schema``,
``unknown-device``, ``bad-signature``) and plain words where it does not.
"""

import math
import re
from collections.abc import Callable

from simkit.errors import SimkitError
from simkit.protocol.records import ShapeError, open_record, verify_record

SAFE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
RESERVED_PREFIX = "skm."  # kinds the protocol's own schemas judge (Checkpoint rules)
CHECKPOINT_KIND = "skm.checkpoint"
CHECKPOINT_STRIDE = 64
RECORD_MEMBERS = ("id", "kind", "deleted", "data", "at", "by")  # GraphRecord's fields

Problem = tuple[str, str]


def safe_id(value: object) -> bool:
    return isinstance(value, str) and SAFE_ID.fullmatch(value) is not None


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def record_problem(record: object) -> Problem | None:
    """GraphRecord: ``{id, kind, deleted?, data, at, by}`` with the table's rules."""
    if not isinstance(record, dict):
        return "shape", "r is not an object"
    if not safe_id(record.get("id")):
        return "shape", "r.id is not a safe ID"
    if not isinstance(record.get("kind"), str) or not record["kind"]:
        return "shape", "r.kind is not a non-empty string"
    if "deleted" in record and record["deleted"] is not True:
        return "shape", "r.deleted is present and not true"
    data = record.get("data")
    if not isinstance(data, dict):
        return "shape", "r.data is not an object"
    if record.get("deleted") is True and data:
        return "shape", "a tombstone's data is not empty"
    if not is_number(record.get("at")) or record["at"] < 0:
        return "shape", "r.at is not a non-negative number"
    if not safe_id(record.get("by")):
        return "shape", "r.by is not a member ID"
    return None


def envelope_problem(envelope: object, slot: str) -> Problem | None:
    """RecordEnvelope ``{v: 1, r, d?, s?}`` around a GraphRecord whose ``id`` is the slot."""
    if not isinstance(envelope, dict) or envelope.get("v") != 1 or envelope.get("v") is True:
        return "shape", "the envelope's v is not 1"
    for name in ("d", "s"):
        if name in envelope and not isinstance(envelope[name], str):
            return "shape", f"the envelope's {name} is not a string"
    problem = record_problem(envelope.get("r"))
    if problem is not None:
        return problem
    if envelope["r"]["id"] != slot:
        return "shape", f"r.id {envelope['r']['id']!r} is not its slot {slot!r}"
    return None


def checkpoint_problem(data: dict) -> str | None:
    """Checkpoint record data: ``{v: 1, d: <device_id>, seq, head}``, ``seq`` a multiple
    of 64, ``head`` a base64url chain head."""
    seq = data.get("seq")
    if data.get("v") != 1 or data.get("v") is True:
        return "checkpoint data v is not 1"
    if not safe_id(data.get("d")):
        return "checkpoint data d is not a device ID"
    if not isinstance(seq, int) or isinstance(seq, bool) or seq <= 0 or seq % CHECKPOINT_STRIDE:
        return f"checkpoint seq {seq!r} is not a positive multiple of {CHECKPOINT_STRIDE}"
    head = data.get("head")
    if not isinstance(head, str) or len(head) != 43 or not BASE64URL.fullmatch(head):
        return "checkpoint head is not a base64url SHA-256"
    return None


def schema_problem(record: dict, app_accepts: Callable[[str, dict], bool]) -> Problem | None:
    """Client rule 2's schema clause: the app's schema for ``r.kind`` (the protocol's own
    for reserved kinds) accepts ``r.data``; tombstones are excepted."""
    if record.get("deleted") is True:
        return None
    kind = record["kind"]
    if kind == CHECKPOINT_KIND:
        problem = checkpoint_problem(record["data"])
        return None if problem is None else ("schema", problem)
    if kind.startswith(RESERVED_PREFIX):
        return "schema", f"reserved kind {kind!r} has no protocol schema"
    if not app_accepts(kind, record["data"]):
        return "schema", f"the app's schema for {kind!r} refuses its data"
    return None


def parsed(record: dict) -> dict:
    """The record as a receiver stores it: its known members only (unknown members are
    signed and then ignored)."""
    return {name: record[name] for name in RECORD_MEMBERS if name in record}


def open_op(key: bytes, storage_key: str, op: dict) -> tuple[dict | None, Problem | None]:
    """An op opened under its slot's AAD: the envelope, or why it does not open."""
    try:
        envelope = open_record(key, storage_key, op["recordId"], op["n"], op["c"])
    except ShapeError as exc:  # it opens, but what it holds is not a JSON object
        return None, ("shape", str(exc))
    except (SimkitError, ValueError) as exc:
        return None, ("decrypt", f"does not open under its slot's AAD: {exc}")
    if not isinstance(envelope, dict):
        return None, ("shape", "the sealed bytes are not an envelope object")
    return envelope, None


def authorship_problems(
    envelope: dict, storage_key: str, roster: dict[str, dict]
) -> tuple[Problem | None, Problem | None]:
    """Client rule 2's authorship clauses against one roster: ``d`` is in it, ``s``
    verifies over the record as sealed, ``r.by`` is the device's member, and the
    device was not revoked when ``r.at`` says the record was written. The spec does
    not say whether a revocation at exactly ``r.at`` counts: (the problem if it
    does not, the problem if it does), the signature checked once for both."""
    record, device_id = envelope["r"], envelope.get("d")
    entry = roster.get(device_id) if isinstance(device_id, str) else None
    if not isinstance(entry, dict):
        problem = "unknown-device", f"signer {device_id!r} is not in the roster"
        return problem, problem
    signature = envelope.get("s")
    try:
        valid = isinstance(signature, str) and verify_record(
            entry.get("sigJwk"), storage_key, record, signature
        )
    except (SimkitError, ValueError, TypeError):
        valid = False
    if not valid:
        problem = (
            "bad-signature",
            (
                "the signature s is absent: the record is unsigned"
                if signature is None
                else f"the signature s does not verify under the roster key of {device_id!r}"
            ),
        )
        return problem, problem
    if record["by"] != entry.get("memberId"):
        problem = "wrong-author", f"r.by {record['by']!r} is not {device_id!r}'s member"
        return problem, problem
    revoked_at = entry.get("revokedAt")
    if not is_number(revoked_at) or revoked_at > record["at"]:
        return None, None
    revoked = "revoked-device", f"{device_id!r} was revoked at {revoked_at}, before r.at"
    return (revoked if revoked_at < record["at"] else None), revoked


def faults(key: bytes, storage_key: str, op: dict, app, rosters: list[dict]) -> set[str]:
    """Every reason client rule 2 gives to refuse ``op`` that holds (a client may check
    its clauses in any order, so any fault the record has is a true reason): its first
    fault before authorship, or each authorship clause that fails under some roster the
    device could have used. Empty when it has none the model can name."""
    envelope, problem = open_op(key, storage_key, op)
    problem = problem or envelope_problem(envelope, op.get("recordId"))
    if problem is None and op.get("rev") != envelope["r"]["at"]:
        problem = ("shape", "its op rev is not r.at")
    if problem is None:
        problem = schema_problem(envelope["r"], app.accepts)
    if problem is not None:
        return {problem[0]}
    found = set()
    for roster in rosters if app.verify_signatures else ():
        entry = roster.get(envelope.get("d")) if isinstance(envelope.get("d"), str) else None
        strict, lenient = authorship_problems(envelope, storage_key, roster)
        found.update(p[0] for p in (strict, lenient) if p is not None)
        if not isinstance(entry, dict):
            continue
        if envelope["r"]["by"] != entry.get("memberId"):  # whether or not s verifies
            found.add("wrong-author")
        revoked_at = entry.get("revokedAt")
        if is_number(revoked_at) and revoked_at <= envelope["r"]["at"]:
            found.add("revoked-device")
    return found
