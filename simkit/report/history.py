"""The per-operation history (as Jepsen shows one): each application write, when it
was issued, when the relay acknowledged it, and when each other device following its
graph applied it (or refused it), with latencies; and the trace events behind a
violation, for the report's violation section.

Read from the trace only: ``app.write`` (issued), ``push.accepted`` / ``push.rejected``
(the relay's answer, after the push exchange that carried it), ``record.applied`` /
``record.rejected`` (each receiver's decision, after the pull that delivered it) and
``record.restamped`` (a write re-stamped after a clock repair, acknowledged at its
new rev). Graphs are storage keys (``g:team``), whatever ID a device sends.
"""

import statistics

import attrs

from simkit.protocol.ids import storage_key
from simkit.report.data import RELAY, Story, describe, label
from simkit.sim.trace import TraceEvent


@attrs.frozen
class Delivery:
    """What one receiver did with a write: applied or refused it at ``t``, after the
    pull exchange that started at trace position ``pull_seq``."""

    device: str
    t: float
    seq: int
    refused: str | None = None  # the refusal reason, None when applied
    pull_seq: int | None = None
    newer: bool = False  # it applied a later version of the record instead (same effect)


@attrs.frozen
class Operation:
    """One application write and what became of it."""

    seq: int  # the app.write event
    t: float
    device: str
    graph: str  # storage key
    record: str
    rev: int
    op: str  # create, edit, delete
    acked: float | None = None
    ack_seq: int | None = None
    push_seq: int | None = None  # the push request that carried it
    rejected: str | None = None  # the relay refused it for good (a quota reason)
    superseded_by: int | None = None  # a later write of the same record replaced it unpushed
    deliveries: tuple[Delivery, ...] = ()
    followers: tuple[str, ...] = ()  # the other devices that follow its graph

    @property
    def ack_latency(self) -> float | None:
        return None if self.acked is None else self.acked - self.t

    @property
    def replicated(self) -> float | None:
        """Seconds until every follower applied it; None if one never did."""
        applied = {d.device: d.t for d in self.deliveries if d.refused is None}
        if not self.followers or any(f not in applied for f in self.followers):
            return None
        return max(applied[f] for f in self.followers) - self.t

    @property
    def outcome(self) -> str:
        if self.acked is not None:
            return "acknowledged"
        if self.rejected is not None:
            return f"rejected ({self.rejected})"
        if self.superseded_by is not None:
            return f"superseded by #{self.superseded_by}"
        return "never acknowledged"

    def delivery(self, device: str) -> Delivery | None:
        return next((d for d in self.deliveries if d.device == device), None)


def _name(e: TraceEvent) -> str | None:
    return e.fields.get("name") if e.kind == "event" else None


def _storage_key(e: TraceEvent, members: dict[str, str]) -> str | None:
    """The storage key of the graph a device's event names (``d:bob`` on alice's
    device is ``d:alice:bob``); None before the relay registered the device."""
    member, graph = members.get(e.actor), e.fields.get("graph")
    return None if member is None or graph is None else storage_key(graph, member)


def operations(story: Story) -> tuple[Operation, ...]:
    """Every ``app.write`` in the trace, in issue order, with its fate."""
    members: dict[str, str] = {}
    ops: list[Operation] = []
    by_rev: dict[tuple[str, str, int], int] = {}  # (graph, record, rev) -> op index
    open_: dict[tuple[str, str, str], list[int]] = {}  # (device, graph, record) -> unacked ops
    last_request: dict[tuple[str, str], int] = {}  # (device, push|pull) -> request seq
    followers: dict[str, set[str]] = {}
    found: dict[int, dict] = {}  # op index -> changes
    applied: dict[tuple[str, str], list] = {}  # (graph, record) -> (rev, delivery) applied

    for e in story.events:
        name = _name(e)
        if e.kind == "request" and e.fields.get("path", "").endswith(("/push", "/pull")):
            last_request[e.actor, e.fields["path"].rsplit("/", 1)[1]] = e.seq
        elif name == "device.register" and e.actor == RELAY:
            members[e.fields["device_id"]] = e.fields["member_id"]
        elif name == "app.write" and (sk := _storage_key(e, members)) is not None:
            f = e.fields
            key = (e.actor, sk, f["recordId"])
            for earlier in open_.get(key, []):
                found.setdefault(earlier, {}).setdefault("superseded_by", e.seq)
            open_[key] = [len(ops)]
            by_rev[sk, f["recordId"], f["rev"]] = len(ops)
            followers.setdefault(sk, set()).add(e.actor)
            ops.append(Operation(e.seq, e.t, e.actor, sk, f["recordId"], f["rev"], f.get("op", "")))
        elif name == "record.restamped" and (sk := _storage_key(e, members)) is not None:
            i = by_rev.get((sk, e.fields["recordId"], e.fields["old"]))
            if i is not None:
                by_rev[sk, e.fields["recordId"], e.fields["new"]] = i
        elif (
            name in ("push.accepted", "push.rejected")
            and (sk := _storage_key(e, members)) is not None
        ):
            i = _match(by_rev, open_, e, sk)
            if i is not None and "ack" not in found.get(i, {}):
                change = found.setdefault(i, {})
                if name == "push.accepted":
                    change.update(ack=(e.t, e.seq), push_seq=last_request.get((e.actor, "push")))
                else:
                    change["rejected"] = e.fields.get("reason", "")
                open_.get((e.actor, sk, e.fields["recordId"]), []).clear()
        elif (
            name in ("record.applied", "record.rejected")
            and (sk := _storage_key(e, members)) is not None
        ):
            followers.setdefault(sk, set()).add(e.actor)
            i = by_rev.get((sk, e.fields["recordId"], e.fields.get("rev")))
            refused = e.fields.get("reason") if name == "record.rejected" else None
            pull = last_request.get((e.actor, "pull"))
            if i is not None and e.actor != ops[i].device:
                deliveries = found.setdefault(i, {}).setdefault("deliveries", {})
                deliveries.setdefault(e.actor, Delivery(e.actor, e.t, e.seq, refused, pull))
            if refused is None:
                applied.setdefault((sk, e.fields["recordId"]), []).append(
                    (e.fields.get("rev"), Delivery(e.actor, e.t, e.seq, None, pull, newer=True))
                )
    out = []
    for i, op in enumerate(ops):
        change = found.get(i, {})
        acked, ack_seq = change.get("ack", (None, None))
        deliveries = dict(change.get("deliveries", {}))
        for rev, later in applied.get((op.graph, op.record), ()):
            if rev > op.rev and later.device != op.device and later.t >= op.t:
                deliveries.setdefault(later.device, later)
        out.append(
            attrs.evolve(
                op,
                acked=acked,
                ack_seq=ack_seq,
                push_seq=change.get("push_seq"),
                rejected=change.get("rejected"),
                superseded_by=None if acked is not None else change.get("superseded_by"),
                deliveries=tuple(deliveries[d] for d in sorted(deliveries)),
                followers=tuple(
                    f
                    for f in sorted(followers.get(op.graph, set()) - {op.device})
                    if story.revoked.get(f, op.t + 1) > op.t  # not revoked before the write
                ),
            )
        )
    return tuple(out)


def _match(by_rev, open_, e: TraceEvent, sk: str) -> int | None:
    """The write a relay answer is about: by its rev, else the device's oldest
    unanswered write of that record (a rejection does not carry the rev)."""
    rev = e.fields.get("rev")
    if rev is not None and (sk, e.fields["recordId"], rev) in by_rev:
        return by_rev[sk, e.fields["recordId"], rev]
    pending = open_.get((e.actor, sk, e.fields["recordId"]), [])
    return pending[0] if pending else None


@attrs.frozen
class Latencies:
    """How long writes took, over every write that got there (seconds)."""

    writes: int
    acked: int
    replicated: int
    ack: tuple[float, float, float] | None  # median, 95th percentile, max
    replication: tuple[float, float, float] | None

    def sentence(self) -> str:
        def spread(values) -> str:
            return (
                "n/a"
                if values is None
                else "median {:.2f} s, p95 {:.2f} s, max {:.2f} s".format(*values)
            )

        return (
            f"{self.writes} writes: {self.acked} acknowledged by the relay "
            f"({spread(self.ack)}); {self.replicated} applied by every other device following "
            f"their graph ({spread(self.replication)})."
        )


def latencies(ops: tuple[Operation, ...]) -> Latencies:
    ack = [op.ack_latency for op in ops if op.ack_latency is not None]
    replicated = [op.replicated for op in ops if op.replicated is not None]
    return Latencies(len(ops), len(ack), len(replicated), _spread(ack), _spread(replicated))


def _spread(values: list[float]) -> tuple[float, float, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95, ordered[-1]


# -- the evidence behind a violation ---------------------------------------------------------


@attrs.frozen
class Evidence:
    """A trace event the violation section links to, and the part it played."""

    role: str
    event: TraceEvent

    def cells(self) -> tuple[str, str, str, str, str, str]:
        e = self.event
        return (f"#{e.seq}", f"{e.t:.3f}", self.role, e.actor, label(e), describe(e.fields))


PER_RECORD_WRITES = 2
MAX_RECORDS = 3
DECISIONS = frozenset({
    "record.applied", "record.rejected", "record.restamped", "push.rejected", "lww.kept-local",
    "lww.equal-rev",
})  # fmt: skip
"""What a device decided about a record it holds or sends (last-write-wins included)."""


def evidence(story: Story, ops: tuple[Operation, ...], violation: dict) -> tuple[Evidence, ...]:
    """The events that explain a violation: for each record it names (the first few),
    the last writes before it (or the forged write a non-conforming client made) and
    their push, the relay's answer, and each named device's decision with the pull
    that delivered it; the named devices' first log alarm; and the moment the
    violation was seen. Trace order, each event once."""
    events = story.events
    if not events:
        return ()
    seen = min(violation.get("trace_seq") or len(events), len(events) - 1)
    graph, devices = violation.get("graph"), tuple(violation.get("devices") or ())
    chosen: dict[int, str] = {}
    members = {  # a device's member, to read the graph ID it sent as a storage key
        e.fields["device_id"]: e.fields["member_id"]
        for e in events[: seen + 1]
        if e.actor == RELAY and _name(e) == "device.register"
    }

    def add(seq: int | None, role: str) -> None:
        if seq is not None and 0 <= seq < len(events):
            chosen.setdefault(seq, role)

    for record in tuple(violation.get("records") or ())[:MAX_RECORDS]:
        writes = [o for o in ops if o.record == record and (graph is None or o.graph == graph)]
        for op in [o for o in writes if o.seq <= seen][-PER_RECORD_WRITES:] or writes[:1]:
            add(op.seq, f"the write of {record} by {op.device}")
            add(op.push_seq, "the push that carried it")
            add(op.ack_seq, "the relay accepted it")
            for d in op.deliveries:
                if d.device in devices and not d.newer:
                    add(d.pull_seq, f"the pull that brought it to {d.device}")
                    add(d.seq, f"{d.device}'s decision")
        forged = [
            e for e in events[: seen + 1]
            if _name(e) == "forged.write" and e.fields.get("recordId") == record
            and (graph is None or _storage_key(e, members) == graph)
        ]  # fmt: skip
        for e in forged[-PER_RECORD_WRITES:]:
            add(e.seq, f"the forged write of {record} by {e.actor}'s non-conforming client")
            push = next((p for p in events[e.seq : seen + 1] if _is_push(p, e.actor)), None)
            add(push and push.seq, "the push that carried it")
        for device in devices:
            decided = [
                e
                for e in events[: seen + 1]
                if e.actor == device and _name(e) in DECISIONS and e.fields["recordId"] == record
            ]
            for e in decided[-PER_RECORD_WRITES:]:
                add(e.seq, f"{device}'s decision")
    for device in devices:
        alarm = next((e for e in events if e.actor == device and _name(e) == "log.alarm"), None)
        add(alarm and alarm.seq, f"{device}'s log alarm")
    actors = {*devices, RELAY}
    departed = [
        e for e in events[: seen + 1]
        if e.kind == "check" and e.fields.get("what") == "departure"
        and (not devices or e.actor in actors)
    ]  # fmt: skip
    for e in departed[:1] + departed[-1:]:  # where the change first did otherwise, and last
        add(e.seq, f"the change departed from {e.fields.get('rule')} ({e.actor})")
    if not chosen:  # nothing named a record: the exchange where it was seen, from its request
        for seq, role in _exchange(events, seen):
            add(seq, role)
    if not chosen:  # nor an exchange: what the named devices did last
        mine = [e for e in events[: seen + 1] if e.actor in devices and e.kind == "event"]
        for e in mine[-5:]:
            add(e.seq, f"what {e.actor} did last")
    add(seen, "where the violation was seen")
    return tuple(Evidence(role, events[seq]) for seq, role in sorted(chosen.items()))


def _exchange(events, seen: int) -> list[tuple[int, str]]:
    """The request, delivery and answer of the exchange the event at ``seen`` belongs to
    (a relay-model finding is seen at an answer: its cause is the request)."""
    e = events[seen]
    device, xid = e.fields.get("device", e.actor), e.fields.get("xid")
    if xid is None or e.kind not in ("request", "delivery", "response", "check"):
        return []
    out = []
    for other in events[: seen + 1]:
        if other.fields.get("xid") != xid:
            continue
        if other.kind == "request" and other.actor == device:
            out = [(other.seq, f"the request of {device}")]
        elif other.kind == "delivery" and other.fields.get("device") == device and out:
            out.append((other.seq, "the relay's answer to it"))
        elif other.kind == "response" and other.actor == device and out:
            out.append((other.seq, f"what {device} received"))
    return out


def _is_push(event: TraceEvent, device: str) -> bool:
    return (
        event.kind == "request" and event.actor == device and event.fields.get("method") == "POST"
        and str(event.fields.get("path", "")).endswith("/push")
    )  # fmt: skip


def centred_on_cause(story: Story, found: tuple[Evidence, ...]) -> Story:
    """The story with its focus moved from where a violation was seen (an invariant that
    runs at quiescence sees it at the end) to what led to it: the latest decision of a
    device the violation names, else the latest write of a record it names; the
    violation stays the caption. The diagram also draws every event of the evidence."""
    cause = next((e for e in reversed(found) if e.role.endswith("'s decision")), None)
    if cause is None:
        cause = next((e for e in reversed(found) if e.role.startswith("the write")), None)
    focus = story.focus
    if found:
        story = attrs.evolve(story, cited=tuple((e.event.seq, e.role) for e in found))
    if cause is None or focus.kind != "violation" or cause.event.seq == focus.seq:
        return story
    e = cause.event
    text = f"{cause.role} ({label(e)}), behind {focus.text}"
    return attrs.evolve(story, focus=attrs.evolve(focus, seq=e.seq, t=e.t, text=text))
