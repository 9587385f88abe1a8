"""The spec's message tables, and every way to break a message of one.

Each table is a message a device or the relay receives, written from the spec's table
of it (Resources and their fields; Endpoints): its members, each one's JSON type,
whether it is required, and values at the edge of its rule (still valid) and beyond
it (refused). ``malformations(table)`` derives from a table every message a receiver
must judge: each optional member absent, each member absent, of the wrong type, out of
range or at its boundary, an unknown member, a key given twice (JSON.parse keeps the
last). Each malformation says whether a conforming receiver must accept it
(``valid``): what is refused is never applied; what is valid is applied as any other.

Pure: no I/O, no randomness; the fuzzer draws among them (docs/fuzzing.md, "Hostile
messages").
"""

import json

import attrs

from simkit.protocol.ids import is_safe_id

WRONG = {  # a value of another JSON type, per type
    "string": 7,
    "number": "7",
    "boolean": "true",
    "object": ["x"],
    "array": {"x": 1},
    "true": 1,
}


@attrs.frozen
class Field:
    name: str
    kind: str  # its JSON type: string, number, boolean, object, array; "true": only true
    required: bool = True
    beyond: tuple = ()  # values its rule refuses
    boundary: tuple = ()  # values at the edge of its rule, still valid
    absent_ok: bool | None = None  # an optional member left out is valid (default: yes)
    rule: str = "any"  # id (a safe ID), count (a whole number from 0), positive (from 1)
    nullable: bool = False  # null is one of its values (``revokedAt``)

    def holds(self, value) -> bool:
        """Whether ``value`` is of this member's type and within its rule."""
        if value is None:
            return self.nullable
        if self.kind == "true":
            return value is True
        if not isinstance(value, TYPES[self.kind]) or isinstance(value, bool) != (
            self.kind == "boolean"
        ):  # fmt: skip
            return False
        if self.rule == "id":
            return is_safe_id(value)
        if self.rule in ("count", "positive"):
            return value == int(value) and value >= (self.rule == "positive")
        return True


TYPES = {"string": str, "number": int | float, "boolean": bool, "object": dict, "array": list}


@attrs.frozen
class Table:
    name: str  # the spec's name of the message
    section: str  # where the spec states it
    fields: tuple[Field, ...]
    unknown_ok: bool = True  # a member the table does not name is ignored


@attrs.frozen
class Malformation:
    """One way to break (or stretch) a message: ``kind`` is absent, wrong-type,
    out-of-range, boundary, unknown-member or duplicate-key."""

    message: str
    field: str | None
    kind: str
    valid: bool  # a conforming receiver accepts it
    value: object = None

    @property
    def name(self) -> str:
        return f"{self.message}.{self.field} {self.kind}" if self.field else (
            f"{self.message} {self.kind}"
        )  # fmt: skip

    def apply(self, message: dict) -> dict:
        """The message with this malformation (a duplicated key is made in ``text``)."""
        out = dict(message)
        if self.kind == "absent":
            out.pop(self.field, None)
        elif self.kind == "unknown-member":
            out["x-unknown"] = "ignored"
        elif self.kind != "duplicate-key":
            out[self.field] = self.value
        return out

    def text(self, message: dict, encode=None) -> str:
        """The message as JSON text, with its one duplicated key for ``duplicate-key``:
        the first of the two is a wrong value, the second (the one JSON.parse keeps)
        the message's own."""
        encode = encode or (lambda value: json.dumps(value, separators=(",", ":")))
        body = encode(self.apply(message))
        if self.kind != "duplicate-key":
            return body
        return "{" + f'"{self.field}":{json.dumps(self.value)},' + body[1:]


def malformations(table: Table) -> tuple[Malformation, ...]:
    """Every malformation of ``table``, in the table's order."""
    out = []
    for f in table.fields:
        absent_ok = (not f.required) if f.absent_ok is None else f.absent_ok
        out.append(Malformation(table.name, f.name, "absent", absent_ok))
        out.append(Malformation(table.name, f.name, "wrong-type", False, WRONG[f.kind]))
        out += [Malformation(table.name, f.name, "out-of-range", False, v) for v in f.beyond[:1]]
        out += [Malformation(table.name, f.name, "boundary", True, v) for v in f.boundary[:1]]
    out.append(Malformation(table.name, None, "unknown-member", table.unknown_ok))
    first = table.fields[0]
    out.append(Malformation(table.name, first.name, "duplicate-key", True, WRONG[first.kind]))
    return tuple(out)


# -- the record a device receives (sealed; its signature is checked over GraphRecord) --

GRAPH_RECORD = Table(
    "GraphRecord",
    "Resources and their fields: GraphRecord; Signature rule",
    (
        Field("kind", "string", beyond=("",)),
        Field("data", "object"),
        Field("at", "number", beyond=(-1,), boundary=(0,)),
        Field("by", "string", beyond=("a:b",)),
        Field("deleted", "true", required=False, beyond=(False,)),
    ),
)
"""``id`` is left out: it must name the slot, and a record in another slot is the
``slot`` forgery; at its 64-character boundary it is ``RECORD_ID_BOUNDARY``."""

RECORD_ENVELOPE = Table(
    "RecordEnvelope",
    "Resources and their fields: RecordEnvelope; client rule 2",
    (
        Field("v", "number", beyond=(2,)),
        Field("r", "object"),
        # optional on the wire, but a receiver that verifies needs both (client rule 2)
        Field("d", "string", required=False, absent_ok=False),
        Field("s", "string", required=False, absent_ok=False),
    ),
)

RECORD_ID_BOUNDARY = "r" + "x" * 63  # a record ID at its 64-character limit: valid

RECEIVED_RECORD = (GRAPH_RECORD, RECORD_ENVELOPE)
"""What a device receives from another device, through the relay, sealed."""

RECORD_MALFORMATIONS = {
    m.name: m
    for m in (
        *(m for table in RECEIVED_RECORD for m in malformations(table)),
        Malformation("GraphRecord", "id", "boundary", True, RECORD_ID_BOUNDARY),
    )
}
"""Every way to break the record a device receives, by name."""


# -- what a device opens with a code: a recovery bundle, an invite's box -----------------

SEALED_BOX = Table(
    "SealedBox",
    "Recovery bundle and invite: {v: 1, salt, sealed}; Versioning rule 2 (bundle v is 1)",
    (
        Field("v", "number", beyond=(2,)),
        Field("salt", "string", beyond=("AAAA",)),  # 3 bytes: not a 128-bit salt
        Field("sealed", "string", beyond=("AAAA",)),  # too short for a nonce and a tag
    ),
)

BOX_MALFORMATIONS = {m.name: m for m in malformations(SEALED_BOX)}
"""Every way to break a recovery bundle a device imports (or an invite's box), by name."""


def _parts(invite: str) -> tuple[str, str]:
    door, _, secret = invite.partition(".")
    return door, secret


INVITE_MALFORMATIONS = {
    "Invite.doorCode absent": lambda i: f".{_parts(i)[1]}",
    "Invite.keySecret absent": lambda i: f"{_parts(i)[0]}.",
    "Invite.separator absent": lambda i: "".join(_parts(i)),
    "Invite.keySecret wrong-type": lambda i: f"{_parts(i)[0]}.%{_parts(i)[1]}",
    "Invite.keySecret out-of-range": lambda i: f"{_parts(i)[0]}.{_parts(i)[1][::-1]}",
    "Invite unknown-member": lambda i: f"{i}.{_parts(i)[1]}",
}
"""Every way to break an invite string (Recovery bundle and invite: ``<doorCode>.<keySecret>``,
both base64url), by name, each a function of the sound string: a member absent, not
base64url, another secret (the box does not open under it), a third part. None is valid."""


# -- what the relay answers a device (a relay that lies may send anything) ---------------

_JWK = {"kty": "EC", "crv": "P-256", "x": "AAAA", "y": "AAAA"}  # a JWK of no point
_ID = {"kind": "string", "rule": "id", "beyond": ("a:b",)}
_COUNT = {"kind": "number", "rule": "count", "beyond": (-1,)}
_POSITIVE = {"kind": "number", "rule": "positive", "beyond": (0,)}


def _device_fields(*more: Field) -> tuple[Field, ...]:
    return (
        Field("deviceId", **_ID),
        Field("memberId", **_ID),
        Field("pubJwk", "object", beyond=(_JWK,)),
        Field("sigJwk", "object", beyond=(_JWK,)),
        Field("selfSig", "string", required=False, beyond=("AAAA",)),
        *more,
    )


ROSTER_ENTRY = Table(
    "RosterEntry", "Keys: GET /graphs/:gid/devices; Resources: Device",
    _device_fields(Field("revokedAt", absent_ok=False, nullable=True, **_COUNT)),
)  # fmt: skip
KEYS_ANSWER = Table(
    "KeysAnswer", "Keys: GET /graphs/:gid/keys",
    (Field("latestEpoch", boundary=(0,), **_COUNT), Field("rotationRequired", "boolean"),
     Field("wraps", "array")),
)  # fmt: skip
WRAP = Table(
    "Wrap", "Keys: GET /graphs/:gid/keys (wraps); Cryptographic constructions: Key wrapping",
    (Field("epoch", **_POSITIVE), Field("wrapped", "string", beyond=("AAAA",))),
)  # fmt: skip
KEYGAPS_ANSWER = Table(
    "KeygapsAnswer", "Keys: GET /graphs/:gid/keygaps",
    (Field("latestEpoch", **_COUNT), Field("gaps", "array")),
)  # fmt: skip
KEYGAP = Table(
    "KeyGap", "Keys: GET /graphs/:gid/keygaps (gaps)", _device_fields(Field("epochs", "array")),
)  # fmt: skip
PULL_PAGE = Table(
    "PullPage", "Records: GET /graphs/:gid/pull; Pull rules",
    (Field("ops", "array"), Field("cursor", **_COUNT), Field("more", "boolean"),
     Field("epoch", required=False, **_COUNT)),
)  # fmt: skip
PULL_OP = Table(
    "PullOp", "Ops on the wire (GraphOpOut)",
    (Field("recordId", **_ID), Field("rev", **_COUNT), Field("n", "string"),
     Field("c", "string"), Field("seq", **_POSITIVE), Field("e", required=False, **_POSITIVE),
     Field("k", "string", required=False), Field("sh", "string", required=False)),
)  # fmt: skip
LOG_PAGE = Table(
    "LogPage", "Records: GET /graphs/:gid/log; Log rules",
    (Field("entries", "array"), Field("cursor", **_COUNT), Field("more", "boolean"),
     Field("head", **_COUNT), Field("oldest", **_COUNT)),
)  # fmt: skip
LOG_ENTRY = Table(
    "LogEntry", "Resources: LogEntry",
    (Field("seq", **_POSITIVE), Field("recordId", **_ID), Field("rev", **_COUNT)),
)  # fmt: skip
PUSH_ANSWER = Table(
    "PushAnswer", "Records: POST /graphs/:gid/push; Push rules",
    (Field("accepted", **_COUNT), Field("cursor", **_COUNT), Field("now", **_COUNT),
     Field("epoch", required=False, **_COUNT)),
)  # fmt: skip

ROUTES = {  # the route's last segment: (the answer's table, the member listing, its entries')
    "devices": (None, "devices", ROSTER_ENTRY),
    "keys": (KEYS_ANSWER, "wraps", WRAP),
    "keygaps": (KEYGAPS_ANSWER, "gaps", KEYGAP),
    "pull": (PULL_PAGE, "ops", PULL_OP),
    "log": (LOG_PAGE, "entries", LOG_ENTRY),
    "push": (PUSH_ANSWER, None, None),
}
"""The answers a device reads whose shape the spec fixes (the route of ``push`` is a
POST; the others are GETs)."""

ANSWERS = tuple(
    (table, route, member if table is entries else None)
    for route, (answer, member, entries) in ROUTES.items()
    for table in (answer, entries)
    if table is not None
)
"""(table, the route's last segment, the member listing it; None: the answer itself)."""
ANSWER_MALFORMATIONS = {m.name: m for table, *_ in ANSWERS for m in malformations(table)}
"""Every way to break an answer of the relay, by name (a relay that lies sends them:
the ``malform`` adversary mode)."""
ANSWER_OF = {
    m.name: (route, listed) for table, route, listed in ANSWERS for m in malformations(table)
}
"""Where each answer malformation goes: (the route's last segment, the list member)."""


# -- what the relay receives from a device (a rogue client may send anything) -------------

REGISTRATION = Table(
    "Registration", "Devices: PUT /devices/:deviceId; Resources: Device",
    (Field("pubJwk", "object"), Field("sigJwk", "object"),
     Field("selfSig", "string", required=False), Field("label", "string", required=False)),
)  # fmt: skip
PUSH_BODY = Table("PushBody", "Records: POST /graphs/:gid/push", (Field("ops", "array"),))
GRAPH_OP_IN = Table(
    "GraphOpIn", "Ops on the wire (GraphOpIn); Push rules",
    (Field("recordId", **_ID), Field("rev", boundary=(0,), **_COUNT),
     Field("e", required=False, **_POSITIVE), Field("n", "string"), Field("c", "string"),
     Field("k", "string", required=False), Field("sh", "string", required=False)),
)  # fmt: skip
KEYS_POST = Table(
    "KeysPost", "Keys: POST /graphs/:gid/keys",
    (Field("epoch", **_POSITIVE), Field("wraps", "array"),
     Field("excluding", "array", required=False)),
)  # fmt: skip
WRAP_IN = Table(
    "WrapIn", "Keys: POST /graphs/:gid/keys (wraps)",
    (Field("deviceId", **_ID), Field("wrapped", "string")),
)  # fmt: skip

REQUESTS = {  # route: (the body's table, the member listing, its entries')
    "PUT /devices/:deviceId": (REGISTRATION, None, None),
    "POST /graphs/:gid/push": (PUSH_BODY, "ops", GRAPH_OP_IN),
    "POST /graphs/:gid/keys": (KEYS_POST, "wraps", WRAP_IN),
}
"""The requests whose body the spec's tables fix, by route."""
MAX_READ = 1 << 20  # a longer body is the oversize fault, not a message to read
REQUEST_MALFORMATIONS = {
    m.name: m
    for body, _, entries in REQUESTS.values()
    for table in (body, entries)
    if table is not None
    for m in malformations(table)
}
"""Every way to break a request body, by name (the rogue client sends them)."""


def request_shows(route: str, body: bytes) -> set[str]:
    """The malformations (by name) a request body of ``route`` shows: the members it
    leaves out, those of another type or out of their rule or at its edge, unknown
    ones, a duplicated key; the body's own and its listed entries'."""
    if route not in REQUESTS or len(body) > MAX_READ:
        return set()
    duplicated: list[str] = []

    def pairs(items):
        names = [name for name, _ in items]
        duplicated.extend(name for name in set(names) if names.count(name) > 1)
        return dict(items)

    try:
        message = json.loads(body, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return set()
    table, member, entries = REQUESTS[route]
    out = _shown(table, message, duplicated)
    listed = message.get(member) if isinstance(message, dict) else None
    for entry in listed if isinstance(listed, list) else ():
        out |= _shown(entries, entry, duplicated)
    return out


def _shown(table: Table, message: object, duplicated: list[str]) -> set[str]:
    if not isinstance(message, dict):
        return set()
    out, names = set(), {f.name for f in table.fields}
    for f in table.fields:
        if f.name not in message:
            out.add(f"{table.name}.{f.name} absent")
            continue
        value = message[f.name]
        if f.holds(value):
            if any(value == v and type(value) is type(v) for v in f.boundary):
                out.add(f"{table.name}.{f.name} boundary")
        elif value is not None and isinstance(value, TYPES[f.kind]) and (
            isinstance(value, bool) == (f.kind == "boolean")
        ):  # fmt: skip
            out.add(f"{table.name}.{f.name} out-of-range")
        else:
            out.add(f"{table.name}.{f.name} wrong-type")
    if set(message) - names:
        out.add(f"{table.name} unknown-member")
    if table.fields[0].name in duplicated:
        out.add(f"{table.name}.{table.fields[0].name} duplicate-key")
    return out


def problems(table: Table, message: dict) -> str | None:
    """The first member of ``message`` that its table refuses (missing, of another type,
    out of its rule), or None."""
    for f in table.fields:
        value = message.get(f.name)
        if f.name not in message or (value is None and not f.required and not f.nullable):
            if f.required or f.absent_ok is False:  # an optional member null: absent
                return f"{table.name} has no {f.name}"
        elif not f.holds(value):
            return f"{table.name}.{f.name} is {json.dumps(message[f.name])[:40]}"
    return None


def answer_problems(route: str, answer: object) -> str | None:
    """What the spec's tables refuse in a device's answer of ``route`` (None: nothing)."""
    if route not in ROUTES:
        return None
    if not isinstance(answer, dict):
        return "the answer is not an object"
    table, member, entries = ROUTES[route]
    found = problems(table, answer) if table is not None else None
    if found is None and member is not None:
        listed = answer.get(member)
        if not isinstance(listed, list):
            return f"{member} is not a list"
        for entry in listed:
            found = problems(entries, entry) if isinstance(entry, dict) else (
                f"{member} holds {json.dumps(entry)[:40]}"
            )  # fmt: skip
            if found is not None:
                break
    return found
