"""One planted break per invariant, each a short deterministic replay that makes that
invariant, by name, report it (docs/fuzzing.md, "Every invariant can fail").

``FIRES`` maps each name of ``simkit.invariants.NAMES`` to a ``Planted``: a reproducer
(machine, world, steps, the version that plants the break, and a release's base) and
what the violation's detail must say. No entry searches at test time: each replays a
few steps on one seed, so it fails the same way on every Hypothesis version.

Most breaks are the variants the invariants' own tests plant (tests/invariants/,
tests/fuzz/variants.py, the kept release findings in tests/fuzz/release_findings/, two
with a shorter burst). The steps of relay-model and device-model were shrunk by
``simkit fuzz --seed 0``; those of lww, seq-and-log, key-wraps and revocation are
written by hand (the fuzzer's shrunk run of overwrite-wrap fires relay-model only).
Two breaks are new: epochs' (a client that keeps only the latest wrap a keys answer
serves, as the epochs tests drop a served key) and persisted-state's version (the
new version of tests/sim/test_releases.py, as a variant). One break is not a
version: ``blindness`` is a backstop that a conforming client never reaches
(``secrecy`` judges every request first), so its secret is planted in the relay's
state at quiescence (``plant``) and the replay's own monitor judges the world again.

``tests/invariants/test_every_invariant_can_fail.py`` replays each entry, and again with
its invariant switched off, where it must no longer be caught.
"""

from collections.abc import Callable

import attrs

from simkit.client import Device
from simkit.fuzz.params import WorldParams
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.invariants import Violation
from simkit.protocol.http import json_response
from simkit.sim.variant import Variant
from simkit.sim.workload import PLAINTEXT_MARK
from tests.sim.test_releases import ForgetsPins

HERE = "tests.invariants.firing"
PLANTED = "tests.invariants.planted_variants"
PROMISES = "tests.invariants.test_promises"
SECRECY = "tests.invariants.secrecy_variants"
VARIANTS = "tests.fuzz.variants"
COMPAT = "tests.fuzz.compat_variants"


class ReadsOnlyTheLatestWrap(Device):
    """Keeps only the latest epoch's wrap of a keys answer: an older epoch served and
    not kept (a device linked after a rotation never holds epoch 1)."""

    async def request(self, method, path, body=None, query=None, raw=None, headers=None):
        response = await super().request(method, path, body, query, raw, headers)
        if method == "GET" and path.endswith("/keys") and response.status == 200:
            answer = response.json()
            latest = [w for w in answer["wraps"] if w["epoch"] == answer["latestEpoch"]]
            return json_response(200, {**answer, "wraps": latest})
        return response


reads_only_the_latest_wrap = Variant(
    "reads-only-the-latest-wrap",
    "a keys answer's older wraps are served and not kept",
    device=ReadsOnlyTheLatestWrap,
)
forgets_pins = Variant("forgets-pins", "reads no pin back", device=ForgetsPins)


def plaintext_label(world) -> None:
    """A record's plaintext planted in a device's label in the relay's state (as
    tests/invariants/test_planted_breaks.py plants it)."""
    row = world.relay.state.devices["a1"]
    world.relay.state.devices["a1"] = attrs.evolve(row, label=PLAINTEXT_MARK)


def _world(instance, attribute, value) -> None:
    WorldParams(**value)  # a world's fields, as a reproducer holds them: seed included


@attrs.frozen(kw_only=True)
class Planted:
    """A planted break: a reproducer and what its invariant must say of it.

    ``variant`` and ``base`` are version references ("module:name" or a built-in
    name); a ``base`` makes the world a release (``world`` then holds ``rollout``).
    ``plant``: a break planted in the world's state once the replay reached quiescence
    (the replay's monitor then judges the world again). ``specified_world``: the world
    of the protocol as specified, when the break is a setting of ``world`` itself."""

    what: str  # the planted break, in a few words
    variant: str | None
    world: dict = attrs.field(validator=_world)
    steps: tuple[dict, ...] = attrs.field(converter=tuple)
    says: str  # what the violation's detail contains
    machine: str = "honest"
    base: str | None = None
    plant: Callable[[object], None] | None = None
    specified_world: dict | None = attrs.field(
        default=None, validator=attrs.validators.optional(_world)
    )


def _is_planted(ref: str | None) -> bool:
    """A reference to a planted version ("module:name"), not a built-in one."""
    return ref is not None and ":" in ref


def reproducer(planted: Planted, specified: bool = False) -> Reproducer:
    """The entry as a reproducer file would hold it (``simkit replay`` runs it once
    written: ``reproducer(FIRES[name]).write(path)``). ``specified``: the same world
    and steps with each planted version replaced by the protocol as specified (a
    built-in version, such as a release's older relay, stays)."""
    variant, base, world = planted.variant, planted.base, planted.world
    if specified:
        variant = None if _is_planted(variant) else variant
        base = "honest" if _is_planted(base) else base
        world = planted.specified_world or world
    data = {
        "machine": planted.machine,
        "variant": variant,
        "world": dict(world),
        "steps": list(planted.steps),
        **({} if base is None else {"base": base}),
    }
    return Reproducer.from_json(data)


def violations(planted: Planted, specified: bool = False) -> list[Violation]:
    """Replay the entry (``specified``: as the protocol specifies it, nothing planted);
    the violations its monitor reports, each with ``.invariant`` and ``.detail``."""
    result = replay(reproducer(planted, specified))
    found = list(result.violations)
    if planted.plant is not None and not specified and result.failed_at is None:
        planted.plant(result.world)
        found += result.monitor.final(result.world)
    return found


def check_fires(name: str) -> list[Violation]:
    """Replay ``FIRES[name]``: some violation names ``name`` and says what it must
    (an AssertionError otherwise); returns the violations."""
    planted = FIRES[name]
    found = violations(planted)
    assert any(v.invariant == name and planted.says in v.detail for v in found), (
        f"no {name} violation saying {planted.says!r}: " + "; ".join(str(v) for v in found)
    )
    return found


WRITE = {"rule": "write", "device": "a1", "graph": "g:team", "record": "r0", "op": "edit"}
WRITES = [WRITE, {"rule": "advance", "seconds": 60}]

FIRES: dict[str, Planted] = {
    "convergence": Planted(
        what="`seals_another_text`: a client seals another text than it keeps",
        variant=f"{PLANTED}:seals_another_text",
        world={"seed": 3},
        steps=[WRITE],
        says="does not hold the relay's winners",
    ),
    "lww": Planted(
        what="`keep-last-equal`: the relay keeps the last of two equal revs",
        variant=f"{VARIANTS}:keep_last_equal",
        world={"seed": 0},
        steps=[
            {"rule": "concurrent", "devices": ["a1", "b1"], "graph": "g:team", "record": "r0"},
            {"rule": "advance", "seconds": 30},
        ],
        says="the first write of the highest rev is",
    ),
    "no-lost-write": Planted(
        what="`drops_its_queue`: a client never queues its write",
        variant=f"{PLANTED}:drops_its_queue",
        world={"seed": 3},
        steps=[WRITE],
        says="is missing on a2, which holds nothing",
    ),
    "seq-and-log": Planted(
        what="`log-loser`: the relay logs an LWW loser",
        variant=f"{VARIANTS}:log_loser",
        world={"seed": 0},
        steps=[
            {"rule": "jump", "device": "a1", "ms": -60000},
            {"rule": "concurrent", "devices": ["a1", "b1"], "graph": "g:team", "record": "r0"},
            {"rule": "advance", "seconds": 30},
        ],
        says="an LWW loser was logged",
    ),
    "epochs": Planted(
        what="`reads_only_the_latest_wrap`: an older epoch served and not kept",
        variant=f"{HERE}:reads_only_the_latest_wrap",
        world={"seed": 5},
        steps=[
            {"rule": "rotate", "by": "a1", "graph": "g:team"},
            {"rule": "link", "member": "alice", "device": "a6"},
            {"rule": "advance", "seconds": 60},
        ],
        says="a6 holds the latest epoch 2 but not epoch 1",
    ),
    "key-wraps": Planted(
        what="`overwrite-wrap`: a grant overwrites a linked device's wrap",
        variant=f"{VARIANTS}:overwrite_wrap",
        world={"seed": 0},
        steps=[{"rule": "link", "member": "alice", "device": "a6"}],
        says="a grant overwrote the wrap of epoch 1 for a6",
    ),
    "approval-gate": Planted(
        what="`approves_on_sight`: a client approves every device it sees (approve mode)",
        variant=f"{PLANTED}:approves_on_sight",
        world={"seed": 3, "approval_mode": "approve"},
        steps=[{"rule": "link", "member": "alice", "device": "a6", "announce": True}],
        says="to a6 (no human approved it on",
    ),
    "blindness": Planted(
        what="a plaintext label planted in the relay's state at quiescence",
        variant=None,
        world={"seed": 3},
        steps=WRITES,
        says="the relay's state contains record plaintext",
        plant=plaintext_label,
    ),
    "secrecy": Planted(
        what="`door_opens_the_box`: an invite's box opens with its door code",
        variant=f"{SECRECY}:door_opens_the_box",
        world={"seed": 3},
        steps=[{"rule": "invite", "by": "a1", "graph": "g:team", "member": "dave", "device": "d1"}],
        says="the box of an invite opens with its door code alone",
    ),
    "alarm-soundness": Planted(
        what="`spurious_alarm`: a client alarms after every sync",
        variant=f"{PLANTED}:spurious_alarm",
        world={"seed": 3},
        steps=WRITES,
        says="raised the log alarm: spurious",
    ),
    "alarm-completeness": Planted(
        what="`silent_alarm` under a withholding relay",
        variant=f"{PLANTED}:silent_alarm",
        machine="adversary",
        world={"seed": 3},
        steps=[
            {
                "rule": "adversary",
                "mode": "withhold",
                "targets": ["b1"],
                "params": {"log": "lists"},
            },
            *[{**WRITE, "record": record} for record in ("r0", "r1", "r2")],
            {"rule": "advance", "seconds": 120},
        ],
        says="b1 was served a contradiction in g:team",
    ),
    "liveness": Planted(
        what="`epoch-optional` (kept release finding, a shorter burst)",
        variant=f"{COMPAT}:epoch_required",
        base="older-relay",
        world={
            "seed": 942,
            "approval_mode": "approve",
            "request_loss": 0.01,
            "response_loss": 0.01,
            "relay": {
                "max_ops_per_push": 3,
                "rate_limits": "off",
                "sweep_interval_ms": 0,
                "quota_blob_bytes": 200,
            },
            "client": {"log_page": 5, "max_batch_ops": 2, "recheck_s": 5.0, "poll_interval_s": 2.0},
            "capabilities": {"bob": "no-rotate"},
            "rollout": {"relay_new": False, "devices_new": []},
        },
        steps=[
            {"rule": "burst", "device": "a1", "graph": "u:alice", "count": 5},
            {"rule": "upgrade", "target": "a1"},
        ],
        says="queued write(s), believing the relay at epoch 2",
    ),
    "revocation": Planted(
        what="`skip-revoked`: a stolen device writes after its revocation",
        variant=f"{VARIANTS}:skip_revoked",
        machine="adversary",
        world={"seed": 0},
        steps=[
            {"rule": "steal", "by": "b1", "device": "b2"},
            {"rule": "write", "device": "b2", "graph": "g:team", "record": "r0", "op": "edit"},
        ],
        says="written by b2 after its revocation",
    ),
    "rotation-owed": Planted(
        what="only the revoker may rotate and cannot: no other device takes a turn "
        "(`rotate_after_s` null)",
        variant=None,
        world={"seed": 5, "client": {"rotate_after_s": None}},
        steps=[
            {"rule": "capability", "member": "bob", "may": "no-rotate"},
            {"rule": "revoke", "by": "b1", "device": "b2"},
        ],
        says="a rotation is still owed (a revoked device held its key)",
        specified_world={"seed": 5},  # every device takes its turn
    ),
    "post-revocation-confidentiality": Planted(
        what="`stale_keys`: writers keep the old key",
        variant=f"{PROMISES}:stale_keys",
        world={"seed": 5},
        steps=[
            {"rule": "revoke", "by": "a2", "device": "a1"},
            {"rule": "advance", "seconds": 120},
            {"rule": "advance", "seconds": 120},
            {"rule": "write", "device": "b1", "graph": "g:team", "record": "r1", "op": "edit"},
            {"rule": "advance", "seconds": 5},
        ],
        says="which revoked a1 holds, after the rotation that followed its revocation",
    ),
    "blob-policies": Planted(
        what="`delivered_at_once`: a transport blob goes before its receipts",
        variant=f"{PROMISES}:delivered_at_once",
        world={"seed": 5},
        steps=[
            {
                "rule": "blob-upload",
                "device": "a1",
                "graph": "g:team",
                "blob": "a1-b0",
                "policy": "transport",
                "ttl": None,
            },
            {"rule": "blob-fetch", "device": "b1", "graph": "g:team", "blob": "a1-b0", "ack": True},
        ],
        says="blob a1-b0 (transport) was forgotten before every receipt",
    ),
    "forgery": Planted(
        what="`accepts_forgeries`: a receiver skips the signature and author checks",
        variant=f"{PROMISES}:accepts_forgeries",
        world={"seed": 5},
        steps=[
            {"rule": "forge", "device": "b1", "graph": "g:team", "record": "r1", "how": "author"},
            {"rule": "advance", "seconds": 30},
        ],
        says="applied r1 (seq 1), a forged record",
    ),
    "paging": Planted(
        what="`endless_more`: pages that never end",
        variant="tests.fuzz.paging_variants:endless_more",
        world={"seed": 0},
        steps=[],
        says="a pull page that did not advance the cursor",
    ),
    "relay-model": Planted(
        what="`max-seq`: seq as MAX(seq)+1 instead of a counter (shrunk by `simkit fuzz`)",
        variant=f"{VARIANTS}:max_seq",
        world={
            "seed": 8388609,
            "max_offset_ms": 180000,
            "relay": {
                "max_pull_limit": 1,
                "max_ops_per_push": 3,
                "quota_records": 3,
                "quota_bytes": 6000,
                "sweep_interval_ms": 0,
                "max_rev_skew_ms": 60000,
                "max_blob_ttl_ms": 120000,
            },
            "client": {"max_batch_ops": 2, "recheck_s": 5.0},
            "capabilities": {"bob": "none", "carol": "no-rotate"},
        },
        steps=[
            {
                "rule": "malformed",
                "device": "a1",
                "graph": "g:team",
                "record": "r2",
                "what": "RecordEnvelope.d absent",
            },
            {"rule": "link", "member": "alice", "device": "a7", "announce": True},
            {
                "rule": "recover",
                "member": "alice",
                "device": "a9",
                "source": "a7",
                "malformed": None,
            },
            {"rule": "concurrent", "devices": ["a2", "a9"], "graph": "g:team", "record": "r1"},
        ],
        says="pull: pages: body.ops[0].seq expected 4, got 2",
    ),
    "device-model": Planted(
        what="`skip-missing-epoch`: a cursor moved past an op under a missing epoch "
        "(shrunk by `simkit fuzz`)",
        variant=f"{VARIANTS}:skip_missing_epoch",
        world={
            "seed": 171,
            "approval_mode": "approve",
            "max_offset_ms": 60000,
            "relay": {
                "max_ops_per_push": 1,
                "quota_bytes": 6000,
                "sweep_interval_ms": 0,
                "max_rev_skew_ms": 60000,
                "quota_blob_bytes": 200,
            },
            "client": {"pull_limit": 1, "recheck_s": 5.0, "poll_interval_s": 2.0},
            "capabilities": {"bob": "none", "carol": "read-only"},
        },
        steps=[
            {
                "rule": "write",
                "device": "b1",
                "graph": "d:alice:bob",
                "record": "r3",
                "op": "edit",
                "again": 0,
            },
            {"rule": "link", "member": "bob", "device": "b6"},
        ],
        says="client rule 4: b6 moved its cursor past seq 1",
    ),
    "work": Planted(
        what="`asks_forty_one`: every GET sent 41 times",
        variant=f"{PLANTED}:asks_forty_one",
        world={"seed": 3, "relay": {"rate_limits": "off"}},  # answered, never refused
        steps=[],
        says="requests for 0 writes",
    ),
    "no-partition": Planted(
        what="`unknown-members` (kept release finding): a strict reader refuses a newer "
        "client's record",
        variant="newer-client",
        base=f"{COMPAT}:strict_reader",
        world={
            "seed": 7491364,
            "approval_mode": "approve",
            "request_loss": 0.05,
            "response_loss": 0.05,
            "relay": {
                "max_pull_limit": 1,
                "quota_records": 3,
                "rate_limits": "tight",
                "quota_blob_bytes": 200,
            },
            "client": {"pull_limit": 1, "max_batch_ops": 2},
            "capabilities": {"bob": "none", "carol": "none"},
            "rollout": {"relay_new": True, "devices_new": []},
        },
        steps=[{"rule": "newer", "device": "a1", "graph": "g:team", "record": "r1"}],
        says="with members this version does not know (x-newer)",
    ),
    "log-unverified": Planted(
        what="`no-log-route` (kept release finding, a shorter burst): a missing log read as empty",
        variant=f"{COMPAT}:reads_missing_log_as_empty",
        base="older-relay",
        machine="adversary",
        world={
            "seed": 6944104,
            "approval_mode": "approve",
            "request_loss": 0.05,
            "response_loss": 0.05,
            "relay": {
                "max_pull_limit": 2,
                "quota_records": 3,
                "rate_limits": "tight",
                "max_rev_skew_ms": 60000,
                "max_blob_ttl_ms": 120000,
            },
            "client": {"pull_limit": 3, "log_page": 1, "poll_interval_s": 2.0},
            "capabilities": {"carol": "read-only"},
            "rollout": {"relay_new": False, "devices_new": []},
        },
        steps=[
            {"rule": "upgrade", "target": "a1"},
            {"rule": "burst", "device": "b1", "graph": "d:alice:bob", "count": 5},
        ],
        says="but the relay (older-relay) answered none of its log reads",
    ),
    "persisted-state": Planted(
        what="`forgets_pins`: a new version that reads no pin back",
        variant=f"{HERE}:forgets_pins",
        base="honest",
        world={"seed": 4, "rollout": {"relay_new": False, "devices_new": []}},
        steps=[{"rule": "upgrade", "target": "a2"}],
        says="a2 reads back what it kept differently after restarting into forgets-pins",
    ),
}
