"""The machines can reach the branches of client rules 5, 6 and 12 that a careless
change breaks without anything else noticing (the mutation campaign showed they were
out of reach; docs/fuzzing.md, "Mutants"). Each test replays, on the honest code,
the steps the machine rules take (``handover``, ``forge`` with ``gap: oldest``, a
partial outage from ``relay_trouble``): no invariant breaks, and the branch is
reached. ``test_mutants_caught.py`` checks that breaking each branch is caught. And
quiescence tells a stuck client from a busy one."""

from pathlib import Path

import pytest

from simkit.fuzz.mutants import run_mutated
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.protocol.http import Refused
from simkit.relay import Relay
from simkit.sim.variant import Variant
from tests.fuzz.mutants import BY_NAME


def _replay(world: dict, steps: list[dict]):
    data = {"machine": "honest", "variant": None, "world": world, "steps": steps}
    result = replay(Reproducer.from_json(data))
    assert not result.violations, "\n".join(str(v) for v in result.violations)
    return result.world


def _events(world, name: str) -> list[dict]:
    return [e.fields for e in world.trace if e.kind == "event" and e.fields["name"] == name]


# handover in approve mode: a1 approves a6 and grants it epoch 1; a2, which never
# approved a6, revokes a1 and rotates epoch 2 without it
HANDOVER_WORLD = {"seed": 5, "approval_mode": "approve", "rules": ["link", "approve", "revoke"]}
HANDOVER = [
    {"rule": "link", "member": "alice", "device": "a6", "announce": False},
    {"rule": "advance", "seconds": 30},
    {"rule": "advance", "seconds": 30},
    {"rule": "approve", "by": "a1", "device": "a6"},
    {"rule": "advance", "seconds": 30},
    {"rule": "revoke", "by": "a2", "device": "a1"},
    {"rule": "advance", "seconds": 120},
]


def test_rule_5_a_device_behind_an_epoch_holds_its_writes_while_it_holds_an_older_key():
    """handover in approve mode: a6 is approved and granted by a1 alone; a2 revokes a1
    and rotates without a6 (it never approved it), so a6 holds epoch 1 only."""
    world = _replay(
        HANDOVER_WORLD,
        [
            *HANDOVER,
            {"rule": "write", "device": "a6", "graph": "g:team", "record": "r0", "op": "edit"},
            {"rule": "advance", "seconds": 120},
        ],
    )
    behind = [f for f in _events(world, "keys.behind") if f["graph"] == "g:team"]
    assert behind and all(f["holding"] == 1 and f["held"] == 1 for f in behind)
    assert "keys.behind holding" in world.coverage.reached
    assert world.slots["a6"].device.pending("g:team") == 1  # never sealed under epoch 1


def test_rule_6_a_pull_that_cannot_read_the_roster_leaves_the_batch_for_a_later_run():
    """A partial outage of GET devices while a newly linked device's record arrives:
    every other device's sync run ends before applying it, and applies it later."""
    world = _replay(
        {"seed": 5, "rules": ["errors", "link"]},
        [
            {"rule": "advance", "seconds": 30},
            {"rule": "link", "member": "bob", "device": "b6", "announce": True},
            {"rule": "advance", "seconds": 30},
            {"rule": "errors", "status": 503, "seconds": 120, "route": "GET /graphs/:gid/devices"},
            {"rule": "write", "device": "b6", "graph": "g:team", "record": "r0", "op": "edit"},
            {"rule": "advance", "seconds": 30},
            {"rule": "advance", "seconds": 120},
        ],
    )
    failed = [e.fields for e in world.trace if e.fields.get("fault") == "relay-error"]
    assert failed  # the roster route failed while pushes and pulls went on
    assert _events(world, "roster.deferred")
    assert (
        world.coverage.counts["situation a batch deferred for a roster that could not be fetched"]
        == 1
    )
    assert not _events(world, "record.rejected")
    for device_id in ("a1", "a2", "b1", "b2", "c1"):
        assert world.slots[device_id].device.get("g:team", "r0")["data"]["by"] == "b6"


def test_rule_12_an_unopenable_wrap_below_the_latest_epoch_is_discarded_and_granted_again():
    """After a rotation, a member's non-conforming client fills a new device's oldest
    gap (epoch 1) with a wrap it cannot open, before any holder grants it."""
    world = _replay(
        {"seed": 5, "rules": ["rotate", "link", "rogue"]},
        [
            {"rule": "write", "device": "a1", "graph": "g:team", "record": "r0", "op": "edit"},
            {"rule": "advance", "seconds": 5},
            {"rule": "rotate", "by": "a1", "graph": "g:team"},
            {"rule": "link", "member": "alice", "device": "a6", "announce": False},
            {"rule": "forge", "device": "b1", "graph": "g:team", "record": "r0", "how": "wrap"}
            | {"gap": "oldest"},
            {"rule": "advance", "seconds": 120},
        ],
    )
    unopenable = [f for f in _events(world, "keys.unopenable") if f["graph"] == "g:team"]
    assert [(f["epoch"], f["latest"]) for f in unopenable] == [(1, 2)]
    assert "keys.unopenable below latest" in world.coverage.reached
    assert set(world.slots["a6"].device.keyring("g:team").keys) == {1, 2}


def test_quiescence_judges_a_client_resending_a_refused_write_for_ever_stuck(tmp_path):
    """A refused op spends a seq (spec, push rules), so a client that re-sends a write
    the relay refuses moves the relay's counter and every cursor without anything
    happening. Quiescence counts log entries, not seqs: the world is judged stuck after
    ``drain_s`` and ``liveness`` names the write (counting seqs, it ran the three-hour
    cap and exhausted memory). Shown with the clock repair inverted (client rule 9),
    which makes a device hours ahead re-send its write further ahead each time, declared
    an intended change so that the device model leaves it to the other invariants."""
    steps = [
        {"rule": "jump", "device": "a1", "ms": 3_600_000},
        {"rule": "write", "device": "a1", "graph": "g:team", "record": "r0", "op": "edit"},
        {"rule": "advance", "seconds": 30},
    ]
    changed = f"{Path(__file__).parent / 'variants.py'}:clock_repair_changed"  # not a bug here
    data = {"machine": "honest", "variant": changed, "world": {"seed": 5}, "steps": steps}
    path = tmp_path / "stuck.json"
    Reproducer.from_json(data).write(path)
    done = run_mutated(BY_NAME["clock-repair-skew-inverted"], tmp_path, ["replay", str(path)], 300)
    # in the mutated copy the protocol as specified carries the inversion too, undeclared:
    # the same steps fail on it (device-model), so the finding is present without the change
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert "[liveness] a1 still holds 1 queued write(s)" in done.stdout
    assert not _replay({"seed": 5}, steps).slots["a1"].device.pending()


def test_rule_13_two_devices_rotating_at_once_both_adopt_the_key_the_relay_holds():
    """rotate_race: one mints epoch 2, the other's post is taken as a grant (F1); both
    then read the keys back and hold the winner's key, the one their wraps carry."""
    world = _replay(
        {"seed": 3, "rules": ["rotate"]},
        [
            {"rule": "write", "device": "a1", "graph": "g:team", "record": "r0", "op": "edit"},
            {"rule": "advance", "seconds": 5},
            {"rule": "rotate-race", "devices": ["a1", "b1"], "graph": "g:team"},
            {"rule": "advance", "seconds": 30},
        ],
    )
    rotations = [f for f in _events(world, "graph.rotate") if f["graph"] == "g:team"]
    assert [f["epoch"] for f in rotations] == [1, 2]  # one mint of epoch 2, not two
    keys = {d: world.slots[d].device.keyring("g:team").keys[2] for d in ("a1", "b1", "c1")}
    assert len(set(keys.values())) == 1


@pytest.mark.parametrize("how", ["unsigned", "stale-signature", "other-graph-signature"])
def test_rule_2_a_signature_absent_or_over_another_version_or_graph_is_refused(how):
    """Forged authorship beyond a wrong byte: no ``s``, the device's own ``s`` over the
    record before an edit, or over the same record in another graph. Every receiver
    refuses it as bad-signature, and every invariant and both models hold."""
    world = _replay(
        {"seed": 3, "rules": ["rogue"]},
        [
            {"rule": "forge", "device": "a1", "graph": "g:team", "record": "r1", "how": how},
            {"rule": "advance", "seconds": 30},
        ],
    )
    refused = [f for f in _events(world, "record.rejected") if f["recordId"] == "r1"]
    assert refused and {f["reason"] for f in refused} == {"bad-signature"}


class AsksAboutEveryGraph(Relay):
    """A relay that asks the host about every graph, not only ``g:`` ones."""

    def _require_capability(self, call, capability):
        granted = self.host.capabilities(call.member, call.graph.key.split(":", 1)[1])
        if granted is not None and capability not in granted:
            raise Refused(403, "not-permitted", f"{capability} is needed", need=capability)


asks_every_graph = Variant("asks-every-graph", "capabilities asked on u:/d: graphs too",
                           relay=AsksAboutEveryGraph)  # fmt: skip


def test_capabilities_only_g_graphs_are_asked_and_the_fuzz_host_would_refuse_the_others():
    """The fuzz host would refuse every capability on ``u:``/``d:`` graphs if asked: the
    honest relay never asks; one that asks refuses alice's own writes, and a model says so."""
    steps = [
        {"rule": "write", "device": "a1", "graph": "u:alice", "record": "r0", "op": "edit"},
        {"rule": "advance", "seconds": 30},
    ]
    world = _replay({"seed": 3}, steps)  # the honest relay: no violation
    situation = (
        "situation a personal or pairwise graph written on a host that would refuse if asked"
    )
    assert world.coverage.counts[situation] == 1
    data = {"machine": "honest", "variant": f"{__name__}:asks_every_graph",
            "world": {"seed": 3}, "steps": steps}  # fmt: skip
    result = replay(Reproducer.from_json(data))
    assert {v.invariant for v in result.violations} & {"relay-model", "no-lost-write"}


def test_rule_7_batches_fill_a_stricter_relays_byte_budget_and_never_pass_it():
    """Limits: 'a relay may enforce stricter limits'; a deployment's clients batch within
    its maxPushBytes (client rule 7, by bytes): a burst of 70 records goes out in several
    batches, the fullest near the budget, none refused 413, every record on every device."""
    world = _replay(
        {"seed": 5, "relay": {"max_push_bytes": 6_000}},
        [
            {"rule": "burst", "device": "a1", "graph": "g:team", "count": 70},
            {"rule": "advance", "seconds": 30},
        ],
    )
    pushes = [
        e.fields["size"]
        for e in world.trace
        if e.kind == "request" and e.actor == "a1" and e.fields["path"].endswith("/push")
    ]
    assert len(pushes) >= 5 and 4_800 < max(pushes) <= 6_000
    assert world.coverage.counts["situation a push filled to the relay's byte budget"] == 1
    assert not [label for label in world.coverage.counts if " 413 " in label]
    for device_id in ("a2", "b1", "c1"):
        assert world.slots[device_id].device.get("g:team", "x0-69") is not None


def test_log_status_a_device_away_while_a_relay_prunes_its_log_anchors_and_the_model_agrees():
    """Log verification status: 'ok -> unverified: log pruned past the device'. A relay
    keeping the newest five log entries (a spec-allowed setting) while c1 is partitioned
    and a1 writes a burst: c1, which had verified the log, anchors its chain where the
    kept log starts, never reports ok again and raises no alarm; the device model, which
    reads the same log answers, agrees (no violation)."""
    world = _replay(
        {"seed": 5, "relay": {"log_keep": 5}, "rules": ["partition"]},
        [
            {"rule": "partition", "devices": ["c1"], "seconds": 120},
            {"rule": "burst", "device": "a1", "graph": "g:team", "count": 8},
            {"rule": "advance", "seconds": 180},
            {"rule": "write", "device": "a2", "graph": "g:team", "record": "r0", "op": "edit"},
            {"rule": "advance", "seconds": 60},
        ],
    )
    anchored = [f for f in _events(world, "log.anchored") if f["graph"] == "g:team"]
    assert anchored
    c1 = world.slots["c1"].device
    status = c1.graph_status("g:team")
    assert status.log == "unverified" and status.log_from is not None
    assert not _events(world, "log.alarm")
    assert world.coverage.counts["situation a log pruned past a device that had verified it"] == 1
