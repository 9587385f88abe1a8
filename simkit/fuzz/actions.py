"""The fuzzer's vocabulary: every step a state machine takes or a reproducer holds, as
a small frozen class with a JSON form and the rules its fields obey.

A step is done *now*, when it runs: a rule builds one, ``simkit.fuzz.steps`` applies
it, and a reproducer file holds its JSON. Where the world already has an action for it
(``simkit.sim.spec``: a partition, a revoke, a rotation ...), the step builds that
action at the moment it runs (``action(now)``), so a ceremony or a fault means one
thing in a scenario and in a fuzz run. A step that reads wrongly (an unknown rule, a
missing field, a number out of range, an unknown key) is refused with a ``StepError``
naming the step, the rule and the field, before anything runs.
"""

import difflib

import attrs

from simkit.fuzz.fields import (
    DEVICE,
    GRAPH,
    MAX_BURST,
    MAX_REQUESTS,
    RECORD,
    SECONDS,
    Step,
    StepError,
    fail,
    flag,
    listed,
    number,
    omitted,
    one_of,
    safe_id,
    safe_ids,
)
from simkit.fuzz.params import CAPABILITIES, GROUP
from simkit.protocol.messages import (
    ANSWER_MALFORMATIONS,
    BOX_MALFORMATIONS,
    INVITE_MALFORMATIONS,
    RECORD_MALFORMATIONS,
)
from simkit.sim import spec as S
from simkit.sim.adversary import MODES
from simkit.sim.behaviours import ROUTE_NAMES
from simkit.sim.forge import HOWS


@attrs.frozen
class Advance(Step):
    """Virtual time passes."""

    RULE = "advance"
    seconds: float = attrs.field(validator=SECONDS)


@attrs.frozen
class Write(Step):
    """A user writes a record on a device: a create or an edit, or a delete of a
    record the device holds (a delete of one it does not hold writes it)."""

    RULE = "write"
    device: str = DEVICE
    graph: str = GRAPH
    record: str = RECORD
    op: str = attrs.field(default="edit", validator=one_of("edit", "delete"))
    # edited again this many seconds later (0: not), while its push may be on the way
    again: float = attrs.field(default=0, validator=number(0, 5))


@attrs.frozen
class Concurrent(Step):
    """Two devices write one record at the same instant."""

    RULE = "concurrent"
    devices: tuple[str, ...] = attrs.field(converter=listed, validator=safe_ids)
    graph: str = GRAPH
    record: str = RECORD


@attrs.frozen
class Burst(Step):
    """Many new records at once (enough to cross a checkpoint boundary)."""

    RULE = "burst"
    device: str = DEVICE
    graph: str = GRAPH
    count: int = attrs.field(validator=number(1, MAX_BURST, integer=True))


@attrs.frozen
class Refresh(Step):
    """Users press "sync now" on several devices at once."""

    RULE = "refresh"
    devices: tuple[str, ...] = attrs.field(converter=listed, validator=safe_ids)


@attrs.frozen
class _Decision(Step):
    by: str = DEVICE
    device: str = DEVICE


@attrs.frozen
class Pair(_Decision):
    """A human compares pairing codes: approve when they match, reject when not."""

    RULE = "pair"


@attrs.frozen
class Approve(_Decision):
    """A human approves a device without comparing codes."""

    RULE = "approve"

    def action(self, now: float) -> S.Approve:
        return S.Approve(self.by, self.device, now)


@attrs.frozen
class Reject(_Decision):
    RULE = "reject"

    def action(self, now: float) -> S.Reject:
        return S.Reject(self.by, self.device, now)


@attrs.frozen
class Revoke(_Decision):
    RULE = "revoke"

    def action(self, now: float) -> S.Revoke:
        return S.Revoke(self.by, self.device, now)


@attrs.frozen
class Steal(_Decision):
    RULE = "steal"

    def action(self, now: float) -> S.Steal:
        return S.Steal(self.by, self.device, now)


@attrs.frozen
class Link(Step):
    """A new device registers; ``announce``: then every device syncs at once; ``older``:
    it runs an older client, which registers without selfSig (Versioning rule 3), so no
    holder may approve it by possession."""

    RULE = "link"
    member: str = attrs.field(validator=safe_id)
    device: str = DEVICE
    announce: bool = omitted(False, validator=flag)
    older: bool = omitted(False, validator=flag)  # an older client: no selfSig

    def creates(self) -> str:
        return self.device

    def action(self, now: float) -> S.LinkDevice:
        return S.LinkDevice(self.member, self.device, now, self_sig=not self.older)


@attrs.frozen
class Rotate(Step):
    RULE = "rotate"
    by: str = DEVICE
    graph: str = GRAPH

    def action(self, now: float) -> S.Rotate:
        return S.Rotate(self.by, self.graph, now)


@attrs.frozen
class RotateRace(Step):
    """Two holders rotate one graph at the same instant."""

    RULE = "rotate-race"
    devices: tuple[str, ...] = attrs.field(converter=listed, validator=safe_ids)
    graph: str = GRAPH


@attrs.frozen
class Recover(Step):
    """A new device restores a member's keyrings from a recovery bundle (``malformed``:
    one malformation of the bundle, which a conforming device refuses when invalid)."""

    RULE = "recover"
    member: str = attrs.field(validator=safe_id)
    device: str = DEVICE
    source: str = DEVICE
    malformed: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(one_of(*BOX_MALFORMATIONS))
    )

    def creates(self) -> str:
        return self.device

    def action(self, now: float) -> S.Recover:
        return S.Recover(self.member, self.device, self.source, now, self.malformed)


@attrs.frozen
class Invite(Step):
    """A member invites a new one (``malformed``: the invite string or the box the host
    hands back broken one way, which a conforming device refuses when invalid)."""

    RULE = "invite"
    by: str = DEVICE
    graph: str = attrs.field(validator=one_of(f"g:{GROUP}"))
    member: str = attrs.field(validator=safe_id)
    device: str = DEVICE
    malformed: str | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(one_of(*BOX_MALFORMATIONS, *INVITE_MALFORMATIONS)),
    )

    def creates(self) -> str:
        return self.device

    def action(self, now: float) -> S.Invite:
        return S.Invite(self.by, self.graph, self.member, self.device, now, self.malformed)


@attrs.frozen
class Join(Step):
    """A member joins the group (the directory changes)."""

    RULE = "join"
    member: str = attrs.field(validator=safe_id)

    def action(self, now: float) -> S.Join:
        return S.Join(GROUP, self.member, now)


@attrs.frozen
class Leave(Join):
    RULE = "leave"

    def action(self, now: float) -> S.Leave:
        return S.Leave(GROUP, self.member, now)


@attrs.frozen
class Capability(Step):
    """The host changes what a member may do in the group."""

    RULE = "capability"
    member: str = attrs.field(validator=safe_id)
    may: str = attrs.field(validator=one_of(*CAPABILITIES))


@attrs.frozen
class BlobUpload(Step):
    RULE = "blob-upload"
    device: str = DEVICE
    graph: str = GRAPH
    blob: str = attrs.field(validator=safe_id)
    policy: str = attrs.field(validator=one_of("retain", "transport", "ephemeral"))
    ttl: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(number(1, 30 * 86_400_000, True))
    )


@attrs.frozen
class BlobFetch(Step):
    """A device downloads a blob (and acks it)."""

    RULE = "blob-fetch"
    device: str = DEVICE
    graph: str = GRAPH
    blob: str = attrs.field(validator=safe_id)
    ack: bool = attrs.field(default=False, validator=flag)


@attrs.frozen
class BlobDelete(Step):
    RULE = "blob-delete"
    device: str = DEVICE
    graph: str = GRAPH
    blob: str = attrs.field(validator=safe_id)


@attrs.frozen
class Sweep(Step):
    """The one external job sweeps (the built-in sweeper is off)."""

    RULE = "sweep"


@attrs.frozen
class Heal(Step):
    """Every partition ends."""

    RULE = "heal"


@attrs.frozen
class Crash(Step):
    """A device crashes and stays down until a ``restart`` (or quiescence)."""

    RULE = "crash"
    device: str = DEVICE

    def action(self, now: float) -> S.CrashDevice:
        return S.CrashDevice(self.device, now, restart_after=None)


@attrs.frozen
class Restart(Step):
    RULE = "restart"
    device: str = DEVICE


@attrs.frozen
class Partition(Step):
    RULE = "partition"
    devices: tuple[str, ...] = attrs.field(converter=listed, validator=safe_ids)
    seconds: float = attrs.field(validator=SECONDS)

    def action(self, now: float) -> S.Partition:
        return S.Partition(self.devices, now, now + self.seconds)


@attrs.frozen
class Upgrade(Step):
    """A release reaches ``target``: a device (or ``relay``) restarts into the new
    version from its own persisted state (a rollout, docs/releases.md)."""

    RULE = "upgrade"
    target: str = attrs.field(validator=safe_id)

    def actors(self) -> tuple[str, ...]:
        return () if self.target == "relay" else (self.target,)

    def action(self, now: float) -> S.Upgrade:
        return S.Upgrade(self.target, now)


@attrs.frozen
class RelayCrash(Step):
    RULE = "relay-crash"
    seconds: float = attrs.field(validator=SECONDS)

    def action(self, now: float) -> S.CrashRelay:
        return S.CrashRelay(now, now + self.seconds)


@attrs.frozen
class Errors(Step):
    """The relay answers ``status`` to everything (or to one route) for a while."""

    RULE = "errors"
    status: int = attrs.field(validator=one_of(429, 500, 502, 503, 504))
    seconds: float = attrs.field(validator=SECONDS)
    route: str | None = omitted(None, validator=attrs.validators.optional(one_of(*ROUTE_NAMES)))

    def action(self, now: float) -> S.ErrorBurst:
        return S.ErrorBurst(self.status, now, now + self.seconds, self.route)


@attrs.frozen
class Jump(Step):
    """A device's wall clock steps by ``ms``."""

    RULE = "jump"
    device: str = DEVICE
    ms: int = attrs.field(validator=number(-10 * 365 * 86_400_000, 10 * 365 * 86_400_000, True))

    def action(self, now: float) -> S.ClockStep:
        return S.ClockStep(self.device, now, self.ms)


@attrs.frozen
class Adversary(Step):
    """The relay turns malicious for ``targets``."""

    RULE = "adversary"
    mode: str = attrs.field(validator=one_of(*MODES))
    targets: tuple[str, ...] = attrs.field(converter=listed, validator=safe_ids)
    params: dict = attrs.field(factory=dict, validator=attrs.validators.instance_of(dict))

    def __attrs_post_init__(self) -> None:
        if self.mode == "substitute-keys" and not isinstance(self.params.get("victim"), str):
            raise StepError("adversary substitute-keys: params.victim must name the device "
                            "whose keys the relay substitutes")  # fmt: skip
        what = self.params.get("what")
        if self.mode == "malform" and what not in ANSWER_MALFORMATIONS:
            near = difflib.get_close_matches(str(what), ANSWER_MALFORMATIONS, n=1)
            hint = f"; did you mean {near[0]!r}?" if near else " (simkit.protocol.messages)"
            raise StepError(f"adversary malform: params.what must name an answer's "
                            f"malformation, not {what!r}{hint}")  # fmt: skip

    def action(self, now: float) -> S.Adversary:
        return S.Adversary(self.mode, now, self.targets, self.params)


@attrs.frozen
class Merge(Step):
    """The relay ends its oldest malicious mode (a fork meets the honest history)."""

    RULE = "merge"


@attrs.frozen
class Forge(Step):
    """A member's non-conforming client pushes a record that breaks one receive check,
    or (``how: wrap``) fills a key gap with a wrap nobody can open."""

    RULE = "forge"
    device: str = DEVICE
    graph: str = GRAPH
    record: str = RECORD
    how: str = attrs.field(validator=one_of(*HOWS))
    gap: str | None = omitted(None, validator=attrs.validators.optional(one_of("latest", "oldest")))
    op: str = omitted("edit", validator=one_of("edit", "delete"))


@attrs.frozen
class Malformed(Step):
    """A member's non-conforming client pushes a record with one malformation of the
    spec's tables (``simkit.protocol.messages``): a member absent, of the wrong type,
    out of range or at its boundary, an unknown member, a key given twice. Receivers
    refuse what is invalid and apply what is valid."""

    RULE = "malformed"
    device: str = DEVICE
    graph: str = GRAPH
    record: str = RECORD
    what: str = attrs.field(validator=one_of(*RECORD_MALFORMATIONS))


@attrs.frozen
class FalseCheckpoint(Step):
    """A member's client publishes a checkpoint nobody may believe: for another
    member's device (``of: other-member``) or in another device's slot
    (``of: other-slot``). Receivers apply the record and must not believe it."""

    RULE = "false-checkpoint"
    device: str = DEVICE
    graph: str = GRAPH
    of: str = attrs.field(validator=one_of("other-member", "other-slot"))


@attrs.frozen
class Newer(Step):
    """A newer client of the device's member writes a record with a member this client
    does not know (Versioning rule 3): every receiver accepts it and stores the parsed
    record."""

    RULE = "newer"
    device: str = DEVICE
    graph: str = GRAPH
    record: str = RECORD


@attrs.frozen
class Reimport(Step):
    """The user imports a recovery bundle from ``source`` on a device that has synced
    for a while: importing first wipes its local record store (Ceremonies, Recover)."""

    RULE = "reimport"
    device: str = DEVICE
    source: str = DEVICE


@attrs.frozen
class Rogue(Step):
    """A raw request from a client outside the fleet (``simkit.fuzz.rogue``'s form)."""

    RULE = "rogue"
    request: dict = attrs.field()

    @request.validator
    def _request(self, attribute, value) -> None:
        shape = {"method": str, "path": str, "query": dict, "headers": dict}
        if not isinstance(value, dict) or any(
            not isinstance(value.get(k), t) for k, t in shape.items()
        ):
            fail(attribute, value, "a raw request {method, path, query, headers, body}")
        body = value.get("body")
        filler = isinstance(body, dict) and set(body) == {"fill", "byte"}
        if not (isinstance(body, str) or filler):
            fail(attribute, body, "a base64url body or {fill, byte}")


CEREMONIES = (Link, Revoke, Rotate, Recover, Invite, Steal)


def _ceremony(value):
    return parse_step(value, "its ceremony", CEREMONIES) if isinstance(value, dict) else value


@attrs.frozen
class Interrupt(Step):
    """A ceremony cut by a crash or a partition right before (or after) one of its
    requests."""

    RULE = "interrupt"
    ceremony: Step = attrs.field(
        converter=_ceremony, validator=attrs.validators.instance_of(CEREMONIES)
    )
    requests: int = attrs.field(validator=number(1, MAX_REQUESTS, integer=True))
    before: bool = attrs.field(validator=flag)
    fault: str = attrs.field(validator=one_of("crash", "partition"))

    def actors(self) -> tuple[str, ...]:
        return self.ceremony.actors()

    def creates(self) -> str | None:
        return self.ceremony.creates()

    def named_member(self) -> str | None:
        return self.ceremony.named_member()


STEPS: tuple[type[Step], ...] = (
    Advance, Write, Concurrent, Burst, Refresh, Pair, Approve, Reject, Revoke, Steal, Link,
    Rotate, RotateRace, Recover, Invite, Join, Leave, Capability, BlobUpload, BlobFetch,
    BlobDelete, Sweep, Heal, Crash, Restart, Partition, RelayCrash, Errors, Jump, Adversary,
    Merge, Forge, Malformed, FalseCheckpoint, Newer, Reimport, Rogue, Interrupt, Upgrade,
)  # fmt: skip
BY_RULE = {cls.RULE: cls for cls in STEPS}


def turns_malicious(step: Step) -> bool:
    """Whether a step makes the relay act maliciously (a mode, a merge, a theft; cut as a
    ceremony too): from it on, only the invariants that hold whatever the relay does
    judge the run (``replay``, ``simkit check``)."""
    return isinstance(getattr(step, "ceremony", step), Adversary | Merge | Steal)


def parse_step(data, where: str = "step", allowed: tuple[type[Step], ...] = STEPS) -> Step:
    """The step a JSON object describes, checked field by field."""
    if isinstance(data, Step):
        return data
    if not isinstance(data, dict):
        raise StepError(f'{where}: a step is a JSON object with a "rule", not {data!r}')
    rule = data.get("rule")
    cls = BY_RULE.get(rule) if isinstance(rule, str) else None
    if cls is None or cls not in allowed:
        names = [c.RULE for c in allowed]
        close = difflib.get_close_matches(str(rule), names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; one of {', '.join(names)}"
        raise StepError(f"{where}: unknown rule {rule!r}{hint}")
    fields = {f.name: f for f in attrs.fields(cls)}
    unknown = sorted(set(data) - set(fields) - {"rule"})
    if unknown:
        raise StepError(f"{where} ({rule}): unknown field {unknown[0]!r}")
    missing = [n for n, f in fields.items() if f.default is attrs.NOTHING and n not in data]
    if missing:
        raise StepError(f"{where} ({rule}): missing field {missing[0]!r}")
    try:
        return cls(**{k: v for k, v in data.items() if k != "rule"})
    except StepError as exc:
        raise StepError(f"{where} ({rule}): {exc}") from None
