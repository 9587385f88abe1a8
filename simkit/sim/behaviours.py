"""The behaviour catalogue: what a run may exercise, as "sometimes" assertions.

A verdict of "no violation" means little unless the protocol was exercised, so a
world counts what it reached: every route with every status and error code the
spec lists, each client rule's accept and refuse branches, each ceremony and the
faults that cut it, each malicious relay mode and its detection, equal-rev ties,
epochs minted and granted, paging, and each blob policy's outcome. Labels come from
two places: the relay's answers as the devices received them (``relay_labels``,
called by the world for every exchange) and the trace's events (``event_labels``).
``Coverage`` counts them; the fuzzer prints "behaviours reached K/N" and the
never-reached list, and scenario reports show the table.
"""

import json
from collections import Counter
from collections.abc import Iterable

import attrs

from simkit.protocol.http import Refused
from simkit.protocol.messages import (
    ANSWER_MALFORMATIONS,
    BOX_MALFORMATIONS,
    INVITE_MALFORMATIONS,
    RECORD_MALFORMATIONS,
    REQUEST_MALFORMATIONS,
    request_shows,
)
from simkit.relay.routing import ROUTES, Route, match
from simkit.sim.situations import SITUATIONS


@attrs.frozen
class Behaviour:
    name: str
    group: str
    what: str


KINDS = {
    "relay answers": "protocol paths",
    "client rules": "protocol paths",
    "ceremonies": "protocol paths",
    "relay events": "protocol paths",
    "releases": "protocol paths",
    "faults": "faults",
    "adversary": "faults",
    "situations": "faults",
    "hostile messages": "hostile messages",
}
"""Each group's kind, for the one-line summary: what the protocol did, what was done to
it, and the malformed messages it was sent."""


def worth_a_look(behaviour: Behaviour) -> bool:
    """Whether never reaching it leaves a path of the protocol unjudged: a client rule's
    branch, a ceremony, a relay event, a fault, an adversary mode, a release's meeting, or
    a route's own answer. Not a refusal every route shares (401, 403, 429, ...: the
    same code path answers it on the other routes), nor one hostile message (each is
    one draw among 242: hours reach most), nor a situation (its own line gives its
    rate)."""
    if behaviour.group == "relay answers":
        return not behaviour.name.endswith(_SHARED)
    return behaviour.group not in ("hostile messages", "situations")


def route_name(route: Route) -> str:
    return f"{route.method} /{'/'.join(route.pattern)}"


ROUTE_NAMES = tuple(route_name(r) for r in ROUTES)
"""The fifteen routes by name, as a partial outage (``route``) names one."""


# -- relay answers, per route (spec: Authentication, Endpoints, Errors) ------------------

_EVERY_ROUTE = ("200", "401 unauthenticated", "403 malformed-identity", "429 rate-limited")
_REGISTERED = ("403 device-not-registered", "403 device-revoked")
_GRAPH = ("400 invalid", "403 not-a-member", "404 unknown-member")
_SPECIFIC = {
    "PUT /devices/:deviceId": (
        "400 invalid",
        "403 device-mismatch",
        "409 device-key-conflict",
        "413 too-large",
    ),
    "POST /devices/:deviceId/revoke": ("404 unknown-device",),
    "POST /graphs/:gid/push": ("403 not-permitted", "413 too-large"),
    "POST /graphs/:gid/keys": (
        "403 not-permitted",
        "413 too-large",
        "409 epoch-gap",
        "400 incomplete-rotation",
        "400 invalid-exclusion",
        "400 not-a-member-device",
    ),
    "POST /graphs/:gid/blobs/:blobId": (
        "403 not-permitted",
        "413 too-large",
        "413 quota-blob-bytes",
    ),
    "GET /graphs/:gid/blobs/:blobId": ("404 not-found",),
    "POST /graphs/:gid/blobs/:blobId/ack": ("404 not-found",),
    "DELETE /graphs/:gid/blobs/:blobId": ("403 not-permitted", "404 not-found"),
}
_SHARED = tuple(f" {o}" for o in (*_EVERY_ROUTE[1:], *_REGISTERED, *_GRAPH))
"""The refusals many routes share, answered by one code path of the relay."""
# What a 200 answer says, per route (read from small answers only).
_ANSWERS = {
    "PUT /devices/:deviceId": ("fresh", "idempotent"),
    "POST /devices/:deviceId/revoke": ("rotation owed",),
    "POST /graphs/:gid/push": ("accepted", "rev-too-far-ahead", "quota", "lww loser", "metadata"),
    "GET /graphs/:gid/pull": ("more", "kinds", "shards"),
    "GET /graphs/:gid/log": ("more",),
    "GET /graphs/:gid/keys": ("rotationRequired",),
    "GET /graphs/:gid/keygaps": ("gaps",),
    "DELETE /graphs/:gid/keys/:epoch": ("discarded", "nothing to discard"),
    "POST /graphs/:gid/blobs/:blobId": ("retain", "transport", "ephemeral", "duplicate"),
    "POST /graphs/:gid/blobs/:blobId/ack": ("forgotten", "kept"),
}


def _route_behaviours() -> list[Behaviour]:
    out = []
    for route in ROUTES:
        name = route_name(route)
        outcomes = list(_EVERY_ROUTE)
        if route.registered:
            outcomes += _REGISTERED
        if "gid" in "".join(route.pattern):
            outcomes += _GRAPH
        outcomes += [o for o in _SPECIFIC.get(name, ()) if o not in outcomes]
        out += [Behaviour(f"{name} {o}", "relay answers", f"{name} answered {o}") for o in outcomes]
        out += [
            Behaviour(f"{name} 200 {a}", "relay answers", f"{name} answered 200: {a}")
            for a in _ANSWERS.get(name, ())
        ]
    return out


# -- the trace: client rules, ceremonies, faults, the adversary, relay events ----------------

_CLIENT = {
    "record.rejected shape": "client rule 2: a record that is not a well-formed envelope is "
    "refused",
    "record.rejected decrypt": "client rule 2: a record that does not open under its slot is "
    "refused",
    "record.rejected schema": "client rule 2: the app's schema refuses the data",
    "record.rejected unknown-device": "client rule 2: the signer is not in the roster",
    "record.rejected bad-signature": "client rule 2: the signature does not verify",
    "record.rejected wrong-author": "client rule 2: r.by is not the signer's member",
    "record.rejected revoked-device": "client rule 2: written after the signer's revocation",
    "lww.kept-local": "client rule 3: the relay's copy is older than a queued local write",
    "lww.equal-rev": "client rule 3: the relay's copy has the held rev and other content: taken",
    "pull.stopped": "client rule 4: an op under a missing epoch stops the pull, cursor kept",
    "keys.behind": "client rule 5: behind an epoch, writes held",
    "keys.behind holding": "client rule 5: behind while holding an older key: writes held, not "
    "sealed under it",
    "roster.deferred": "client rule 6: the roster could not be fetched, the batch waits",
    "push.batches": "client rule 7: a queue pushed in several batches",
    "echo.skipped": "client rule 8: every op of the batch landed, its echo is skipped",
    "record.restamped": "client rule 9: a write re-stamped after a clock repair",
    "retry 429": "client rule 10: retried after 429",
    "retry 503": "client rule 10: retried after 5xx",
    "retry lost": "client rule 10: retried after a lost request or response",
    "sync.unreachable": "client rule 10: out of attempts, the run ends (relay unavailable)",
    "policy.readonly": "client rule 11: a push refused as not-permitted, queue held",
    "keys.unopenable": "client rule 12: a wrap that does not open is discarded",
    "keys.unopenable below latest": "client rule 12: the wrap that does not open is of an older "
    "epoch than the latest",
    "push.rejected": "a write refused for good (a quota) is undone",
    "device.pending": "client rule 14: an unapproved device awaits a human",
    "device.conflict": "client rule 14: an approved device's keys changed",
    "linking.unenforced": "client rule 14: the gate runs in observe mode",
    "device.approved possession": "approval by proof of possession",
    "device.approved human": "approval by a human (pairing codes)",
    "checkpoint.published": "a device published its head at a boundary",
    "checkpoint.believed": "a peer's checkpoint was believed",
    "log.ok": "log verification reached ok",
    "log.anchored": "a chain anchored mid-log",
    "log.alarm check 1": "alarm: a log entry names a record never served",
    "log.alarm check 2": "alarm: a peer's head differs at a boundary",
    "log.alarm counter": "alarm: the relay's counter went back",
    "log.alarm order": "alarm: log entries out of order",
    "rotation.honoured": "a device other than the revoker rotated a flagged graph",
    "other.write newer": "a newer client's record carries a member this client does not "
    "know (Versioning rule 3)",
    "other.write false-checkpoint": "a checkpoint nobody may believe (another member's "
    "device, or another device's slot)",
    "app.reimport": "a recovery bundle imported on a device with a history (it wipes its "
    "record store)",
    "ties": "two devices stamped the same rev of one record",
}
_CEREMONIES = ("Bootstrap", "LinkDevice", "Revoke", "Rotate", "Recover", "Invite", "Steal")
_FAULTS = {
    "fault partition": "a partition began",
    "fault heal": "a partition healed",
    "fault error-window": "the relay began answering errors",
    "fault partitioned": "a request met a partition",
    "fault request-lost": "a request was lost",
    "fault response-lost": "a response was lost",
    "fault timeout": "a device gave up on a request at its deadline",
    "fault relay-error 503": "the relay answered 503 (an error window)",
    "fault relay-error 429": "the relay answered 429 (an error window)",
    "fault relay-down": "a request met a crashed relay",
    "crash device-crash": "a device crashed",
    "crash device-restart": "a device restarted from its snapshot",
    "crash relay-crash": "the relay crashed",
    "crash relay-restart": "the relay restarted from its store",
    "schedule ClockStep": "a device's clock stepped",
    "schedule Leave": "a member left a group",
    "schedule Join": "a member joined a group",
}
_RELAY_EVENTS = {
    "graph.rotate": "an epoch was minted",
    "keys.grant": "a key gap was filled",
    "keys.discard": "a device discarded its wrap",
    "device.revoke": "a device was revoked",
    "blob.forgotten deleted": "a blob was deleted",
    "blob.forgotten acked": "a transport blob was forgotten after every receipt",
    "blob.forgotten expired": "an ephemeral blob expired",
}
DETECTABLE = ("withhold", "rollback", "fork", "reorder", "rewrite-log")
"""The modes the log alarm can catch (docs/adversary.md); the rest are caught as
refusals, or not at all."""
ADVERSARY_MODES = (
    "withhold", "rollback", "fork", "reorder", "replay", "rewrite-log",
    "substitute-keys", "drop-wraps", "substitute-wraps", "lie-epoch", "accept-revoked",
    "malform",
)  # fmt: skip
_ADVERSARY = {
    "adversary contradiction": "a target was served a contradiction it can detect directly",
    "adversary merge": "a malicious mode ended (a fork met the honest history)",
}


_RELEASES = {
    "release": "a world ran two versions at once (a rollout or a mixed fleet)",
    "upgrade device": "a device restarted into the new version",
    "upgrade relay": "the relay restarted into the new version",
    "release old device, old relay": "a device on the base version talked to a base relay",
    "release old device, new relay": "a device on the base version talked to a new relay",
    "release new device, old relay": "a device on the new version talked to a base relay",
    "release new device, new relay": "a device on the new version talked to a new relay",
}
"""Counted only in runs of a release: a run of one version leaves the group out."""


def _catalogue() -> tuple[Behaviour, ...]:
    out = _route_behaviours()
    out += [
        Behaviour("no route 404", "relay answers", "an unknown path answered 404 not-found"),
        Behaviour("no route 405", "relay answers", "a known path with another method: 405"),
    ]
    out += [Behaviour(n, "client rules", w) for n, w in _CLIENT.items()]
    out += [Behaviour(f"ceremony {c}", "ceremonies", f"{c} performed") for c in _CEREMONIES]
    out += [
        Behaviour(f"ceremony {c} interrupted", "ceremonies", f"{c} cut between two requests")
        for c in _CEREMONIES[1:]
    ]
    out += [Behaviour(n, "faults", w) for n, w in _FAULTS.items()]
    out += [Behaviour(n, "relay events", w) for n, w in _RELAY_EVENTS.items()]
    out += [
        Behaviour(f"adversary {m}", "adversary", f"the relay turned {m} for a target")
        for m in ADVERSARY_MODES
    ]
    out += [
        Behaviour(f"adversary {m} detected", "adversary", f"an alarm with {m} on (or once on)")
        for m in DETECTABLE
    ]
    out += [Behaviour(n, "adversary", w) for n, w in _ADVERSARY.items()]
    out += [Behaviour(n, "releases", w) for n, w in _RELEASES.items()]
    out += [
        Behaviour(f"malformed {name}", "hostile messages", f"a received record: {name}")
        for name in RECORD_MALFORMATIONS
    ]
    out += [
        Behaviour(f"malformed {name}", "hostile messages", f"a relay's answer: {name}")
        for name in ANSWER_MALFORMATIONS
    ]
    out += [
        Behaviour(f"malformed {name}", "hostile messages", f"a request to the relay: {name}")
        for name in REQUEST_MALFORMATIONS
    ]
    out += [
        Behaviour(f"malformed {name}", "hostile messages", f"a recovery bundle: {name}")
        for name in BOX_MALFORMATIONS
    ]
    out += [
        Behaviour(f"malformed invite {name}", "hostile messages", f"an invite: {name}")
        for name in (*BOX_MALFORMATIONS, *INVITE_MALFORMATIONS)
    ]
    out += [Behaviour(n, "situations", w) for n, w in SITUATIONS.items()]
    return tuple(out)


CATALOGUE = _catalogue()
NAMES = frozenset(b.name for b in CATALOGUE)


def relay_labels(request, response) -> list[str]:
    """What one answer the devices received exercised: its route and outcome, and what
    a 200 says (read from small answers; pulls and logs only for ``more``)."""
    try:
        route, _ = match(request.method, request.path)
    except Refused as refused:
        return [f"no route {refused.response.status}"]
    name = route_name(route)
    status = response.status
    labels = [f"malformed {m}" for m in request_shows(name, request.body)] if request.body else []
    if status != 200:
        code = _error_code(response)
        return [*labels, f"{name} {status}" + (f" {code}" if code else "")]
    labels.append(f"{name} 200")
    if name in ("GET /graphs/:gid/pull", "GET /graphs/:gid/log"):
        if b'"more":true' in response.body:
            labels.append(f"{name} 200 more")
        labels += [f"{name} 200 {f}" for f in ("kinds", "shards") if request.query.get(f)]
        return labels
    if name not in _ANSWERS:
        return labels
    try:
        body = json.loads(response.body)
        return labels + [f"{name} 200 {a}" for a in _answer_labels(name, request, body)]
    except (ValueError, TypeError, AttributeError):  # an answer a lying relay malformed
        return labels


def _error_code(response) -> str | None:
    try:
        body = json.loads(response.body)
    except ValueError:
        return None
    return body.get("error") if isinstance(body, dict) else None


def _answer_labels(name: str, request, body: dict) -> Iterable[str]:
    if name == "PUT /devices/:deviceId":
        yield "fresh" if body.get("fresh") else "idempotent"
    elif name == "POST /devices/:deviceId/revoke" and body.get("rotationOwedFor"):
        yield "rotation owed"
    elif name == "POST /graphs/:gid/push":
        reasons = {r.get("reason") for r in body.get("rejected", [])}
        if body.get("accepted"):
            yield "accepted"
        if "rev-too-far-ahead" in reasons:
            yield "rev-too-far-ahead"
        if reasons - {"rev-too-far-ahead"}:
            yield "quota"
        sent = _ops_sent(request)
        if sent is not None and body.get("accepted", 0) + len(reasons) < sent:
            yield "lww loser"
        if b'"k":' in request.body:  # partial-sync metadata, sent on opt-in
            yield "metadata"
    elif name == "GET /graphs/:gid/keys" and body.get("rotationRequired"):
        yield "rotationRequired"
    elif name == "GET /graphs/:gid/keygaps" and body.get("gaps"):
        yield "gaps"
    elif name == "DELETE /graphs/:gid/keys/:epoch":
        yield "discarded" if body.get("discarded") else "nothing to discard"
    elif name == "POST /graphs/:gid/blobs/:blobId":
        yield "duplicate" if body.get("duplicate") else request.query.get("policy", "retain")
    elif name == "POST /graphs/:gid/blobs/:blobId/ack":
        yield "forgotten" if body.get("forgotten") else "kept"


def _ops_sent(request) -> int | None:
    try:
        return len(json.loads(request.body)["ops"])
    except (ValueError, KeyError, TypeError):
        return None


def event_labels(event) -> list[str]:
    """What one trace event exercised."""
    fields = event.fields
    if event.actor == "schedule":  # faults and ceremonies a schedule or a fuzz step started
        return _schedule_labels(fields.get("name"), fields)
    if event.kind == "fault":
        fault = fields.get("fault")
        if fault == "relay-error":
            return [f"fault relay-error {fields.get('status')}"]
        return [f"fault {fault}"] if f"fault {fault}" in NAMES else []  # not pokes
    if event.kind == "crash":  # the world's notes; the network's own copies are not labels
        what = fields.get("what")
        return [f"crash {what}"] if f"crash {what}" in NAMES else []
    if event.kind != "event":
        return []
    name = fields.get("name")
    if name == "record.rejected":
        return [f"record.rejected {fields.get('reason')}"]
    if name == "device.approved":
        return [f"device.approved {fields.get('via')}"]
    if name == "blob.forgotten":
        return [f"blob.forgotten {fields.get('reason')}"]
    if name == "retry":
        return [f"retry {fields.get('why')}"]
    if name == "other.write":
        return [f"other.write {fields.get('client')}"]
    if name == "log.alarm":
        return [f"log.alarm {_alarm_kind(fields.get('reason', ''))}"]
    if name == "version.upgrade":
        return ["upgrade relay" if event.actor == "relay" else "upgrade device"]
    if name == "sync.done" and fields.get("error") == "unreachable":
        return ["sync.unreachable"]
    if name == "keys.behind" and fields.get("holding"):
        return [name, "keys.behind holding"]
    if name == "keys.unopenable" and fields.get("epoch", 0) < fields.get("latest", 0):
        return [name, "keys.unopenable below latest"]
    return [name] if name in NAMES else []


def _schedule_labels(name: str, fields: dict) -> list[str]:
    if name in ("ceremony.interrupted", "Interrupt"):
        return [f"ceremony {fields.get('action')} interrupted"]
    if name in ("Adversary", "Steal"):
        mode = "accept-revoked" if name == "Steal" else fields.get("mode")
        return [f"adversary {mode}"] + (["ceremony Steal"] if name == "Steal" else [])
    if name in ("ClockStep", "Leave", "Join"):
        return [f"schedule {name}"]
    return [f"ceremony {name}"] if name in _CEREMONIES else []


def _alarm_kind(reason: str) -> str:
    if "never served" in reason:
        return "check 1"
    if "differs from the checkpoint" in reason:
        return "check 2"
    if "order" in reason:
        return "order"
    return "counter"


class Coverage:
    """How often each behaviour was reached (labels outside the catalogue are kept
    apart: a test keeps the catalogue and the labels in step)."""

    def __init__(self, worlds: int = 0) -> None:
        self.counts: Counter[str] = Counter()
        self.worlds = worlds  # the worlds counted (a situation counts once per world)
        self._writes: dict[tuple[str, str], tuple[int, str]] = {}  # (graph, record) -> rev, by

    def add(self, labels: Iterable[str]) -> None:
        self.counts.update(labels)

    def observe(self, event) -> None:
        """Count what one trace event exercised (in trace order)."""
        labels = event_labels(event)
        if labels:  # most events exercise nothing: skip Counter.update's type checks
            self.counts.update(labels)
        if event.kind == "event" and event.fields.get("name") == "app.write":
            key = (event.fields["graph"], event.fields["recordId"])
            before = self._writes.get(key)
            if before is not None and before[0] == event.fields["rev"] and before[1] != event.actor:
                self.counts["ties"] += 1
            self._writes[key] = (event.fields["rev"], event.actor)

    @property
    def reached(self) -> set[str]:
        return {name for name in self.counts if name in NAMES}

    @property
    def unknown(self) -> set[str]:
        return set(self.counts) - NAMES

    @property
    def catalogue(self) -> tuple[Behaviour, ...]:
        """The behaviours this run could reach: releases only if it ran one."""
        if "release" in self.counts:
            return CATALOGUE
        return tuple(b for b in CATALOGUE if b.group != "releases")

    def missing(self) -> list[Behaviour]:
        return [b for b in self.catalogue if b.name not in self.counts]

    def merge(self, other: "Coverage") -> None:
        self.counts.update(other.counts)
        self.worlds += other.worlds

    def situations(self) -> dict[str, float]:
        """Each situation: the worlds that reached it, per 1,000 worlds counted."""
        per = 1000 / self.worlds if self.worlds else 0.0
        return {name: self.counts[name] * per for name in SITUATIONS}

    def to_json(self) -> dict:
        return {
            "reached": len(self.reached),
            "catalogue": len(self.catalogue),
            "counts": dict(sorted(self.counts.items())),
            "never": [b.name for b in self.missing()],
            "worlds": self.worlds,
            "situations_per_1000": {k: round(v, 1) for k, v in self.situations().items()},
        }
