"""Rare situations: moments a clause of the spec is about, which a run reaches rarely
(docs/fuzzing.md, "Situations"). Each is counted, like a behaviour, once per world that reaches
it (the fuzzer reports how many examples per 1,000 reached each, and its generation is
tuned so that every one is reached at least 5 times per 1,000 examples).

Most are read from the trace as it is written (``Situations.observe``, handed every
event by the monitor); two need a moment the trace does not show, and are told by the
world (``pushing``, ``wrote``) and the malicious relay.
"""

import json

from simkit.protocol.ids import UnsafeIdError, storage_key
from simkit.protocol.limits import SPEC_LIMITS

CEREMONIES = ("LinkDevice", "Revoke", "Rotate", "Recover", "Invite", "Steal")

SITUATIONS = {
    "situation a write while a push of its record is in flight": "client rule 1 and push "
    "rule 2: the application overwrites a record whose previous version is on its way",
    "situation an older epoch granted after a newer one": "Keys, grants: a device gets the "
    "key of an epoch below one it already holds",
    "situation a rolled-back relay answers a push": "Log verification: a push answer's "
    "counter below what the device was served",
    "situation a checkpoint compared at the first boundary": "Log chain: heads compared at "
    "seq 64, the only boundary of a small graph",
    "situation a newer version withheld from its holder": "Log check (1): a log entry "
    "names a record the device holds, at a newer rev than it was served",
    "situation a push cut by an outage": "client rule 10: a push that failed or was lost on "
    "the way",
    "situation the relay restarted between a request and its answer": "Endpoints: each "
    "route handler runs in one write transaction; the answer is lost with the relay",
    "situation an upgrade while a request is in flight": "Versioning rule 3: a party moves "
    "to the new version with one of its exchanges open",
    "situation a pull filtered by kinds": "Partial sync: a subscription's pull asks for some "
    "kinds only, with its own cursor",
    "situation a pull filtered by shards": "Partial sync: a subscription's pull asks for some "
    "shards only",
    "situation a push carrying partial-sync metadata": "Partial sync: `k` and `sh` sent on opt-in",
    "situation a push filled to the relay's byte budget": "client rule 7 and Limits: a batch "
    "within a fifth of a relay's (stricter) maxPushBytes",
    "situation a batch deferred for a roster that could not be fetched": "client rule 6: the "
    "cursor kept, the batch read again later",
    "situation a personal or pairwise graph written on a host that would refuse if asked": "Auth"
    "orization: capabilities are asked for `g:` graphs only; `u:` and `d:` are never asked",
    "situation a log pruned past a device that had verified it": "Log verification status: ok "
    "-> unverified when the log is pruned past the device, its chain anchored mid-log",
    **{
        f"situation a crash in {c} {where}": f"Ceremonies: {c} cut by a crash {where}"
        for c in CEREMONIES
        for where in ("before its first request", "between two of its requests")
    },
}
"""Each situation, and the clause it is about."""
FLOOR = 5.0
"""The worlds per 1,000 that must reach each situation in the default mix."""
PARTIAL = {
    "GET /graphs/:gid/pull 200 kinds": "a pull filtered by kinds",
    "GET /graphs/:gid/pull 200 shards": "a pull filtered by shards",
    "POST /graphs/:gid/push 200 metadata": "a push carrying partial-sync metadata",
}
"""The relay answers (behaviours) whose worlds reach a partial-sync situation."""


class Situations:
    """Reads the trace of one world as it is written and counts each situation in the
    world's coverage (so that it is merged, reported and never-reached like a behaviour)."""

    def __init__(self, world) -> None:
        self.world = world
        self.open: dict[tuple[str, int], str] = {}  # (device, xid) -> path, awaiting an answer
        self.delivered: set[tuple[str, int]] = set()  # applied by the relay, not yet answered
        self.pushing: dict[str, set[str]] = {}  # device -> records of its pushes in flight
        self.seen: set[str] = set()
        self.verified: set[tuple[str, str]] = set()  # (device, graph) that said log.ok

    def reached(self, name: str) -> None:
        """Count ``name`` once per world: its count is the worlds that reached it."""
        if name not in self.seen:
            self.seen.add(name)
            self.world.coverage.add([f"situation {name}"])

    # -- told by the world ----------------------------------------------------------------

    def push_sent(self, device_id: str, body: bytes) -> set[str]:
        """A device's push goes out: the records it carries (until ``push_done``)."""
        try:
            ops = json.loads(body)["ops"]
            records = {op["recordId"] for op in ops if isinstance(op, dict)}
        except (ValueError, KeyError, TypeError):
            records = set()
        self.pushing.setdefault(device_id, set()).update(records)
        budget = self.world.spec.relay_settings.get("max_push_bytes", SPEC_LIMITS["max_push_bytes"])
        if len(body) > 0.8 * budget:
            self.reached("a push filled to the relay's byte budget")
        return records

    def push_done(self, device_id: str, records: set[str]) -> None:
        self.pushing.get(device_id, set()).difference_update(records)

    def wrote(self, device_id: str, record_id: str) -> None:
        if record_id in self.pushing.get(device_id, ()):
            self.reached("a write while a push of its record is in flight")

    def answered(self, request, labels: list[str]) -> None:
        """What an answer the devices received exercised (``relay_labels``): partial sync,
        and a write the host would refuse were the relay to ask about its graph."""
        for label in labels:
            if label in PARTIAL:
                self.reached(PARTIAL[label])
        if "POST /graphs/:gid/push 200 accepted" in labels and self._never_asked(request):
            self.reached(
                "a personal or pairwise graph written on a host that would refuse if asked"
            )

    def _never_asked(self, request) -> bool:
        """A push to a ``u:``/``d:`` graph whose owner the world's host refuses everything."""
        slot = self.world.slots.get(request.headers.get("x-device"))
        try:
            graph = storage_key(request.path.split("/")[2], slot.member)
        except (AttributeError, IndexError, UnsafeIdError):  # not a device of the world's
            return False
        kind, _, key = graph.partition(":")
        return kind in ("u", "d") and self.world.spec.capabilities.get((slot.member, key)) == ()

    # -- read from the trace ----------------------------------------------------------------

    def observe(self, event) -> None:
        kind, fields, actor = event.kind, event.fields, event.actor
        xid = fields.get("xid")
        if kind == "request":
            self.open[actor, xid] = fields.get("path", "")
        elif kind == "delivery" and fields.get("applied"):
            self.delivered.add((fields.get("device"), xid))
        elif kind == "response":
            self.open.pop((actor, xid), None)
            self.delivered.discard((actor, xid))
        elif kind == "fault" and xid is not None:  # the network's (with the device) or a timeout
            key = (fields.get("device", actor), xid)
            path = self.open.pop(key, "")
            self.delivered.discard(key)
            if path.endswith("/push"):
                self.reached("a push cut by an outage")
        elif kind == "crash" and fields.get("what") == "relay-crash" and self.delivered:
            self.reached("the relay restarted between a request and its answer")
        elif kind == "fault" and actor == "schedule" and fields.get("name") == "Interrupt":
            self._interrupted(fields)
        elif kind == "event":
            self._event(actor, fields)

    def _interrupted(self, fields: dict) -> None:
        if fields.get("fault") == "crash" and fields.get("action") in CEREMONIES:
            first = fields.get("requests") == 1 and fields.get("before")
            where = "before its first request" if first else "between two of its requests"
            self.reached(f"a crash in {fields['action']} {where}")

    def _event(self, actor: str, fields: dict) -> None:
        name = fields.get("name")
        if name == "version.upgrade":
            relay = actor == "relay"
            if any(relay or device == actor for device, _ in self.open):
                self.reached("an upgrade while a request is in flight")
        elif name == "checkpoint.believed" and fields.get("seq") == 64:
            self.reached("a checkpoint compared at the first boundary")
        elif name == "keys.grant":
            self._granted(fields)
        elif name == "roster.deferred":
            self.reached("a batch deferred for a roster that could not be fetched")
        elif name == "log.ok":
            self.verified.add((actor, fields.get("graph")))
        elif name == "log.anchored" and (actor, fields.get("graph")) in self.verified:
            self.reached("a log pruned past a device that had verified it")

    def _granted(self, fields: dict) -> None:
        relay = self.world.relay
        graph = relay.state.graphs.get(fields.get("graph")) if relay is not None else None
        epoch = fields.get("epoch")
        if graph is None or not isinstance(epoch, int):
            return
        for device_id in fields.get("devices", ()):
            if any(e > epoch and device_id in holders for e, holders in graph.wraps.items()):
                self.reached("an older epoch granted after a newer one")
                return
