"""Each malicious relay mode, run once, with its expected detection outcome
(docs/adversary.md explains each row)."""

from simkit.sim import spec as S
from simkit.sim.world import run_world
from tests.sim.worlds import alarms, converged, events, pair, rejections

ROTATE = (S.Rotate(by="a1", graph="g:team", at=100),)


def _alarmed_by(world):
    return sorted({device for device, _, _ in alarms(world)})


def test_fork_without_merging_is_not_detected_fork_consistency():
    world = run_world(pair("fork", {}))
    assert alarms(world) == []
    assert world.settled_at is None  # b1 lives in another history and never catches up


def test_fork_is_detected_by_checkpoint_heads_once_the_views_meet():
    world = run_world(pair("fork", {"merge_at": 250}))
    (device, t, reason), *_ = alarms(world)
    assert device == "b1" and 250 <= t <= 260
    assert "differs from the checkpoint" in reason


def test_rollback_is_detected_when_the_relay_counter_goes_back():
    world = run_world(pair("rollback", {"snapshot_at": 30}))
    (device, t, reason), *_ = alarms(world)
    assert device == "b1" and 60 <= t <= 70
    assert "cursor" in reason and "below" in reason


def test_withholding_ops_the_log_still_lists_is_detected_by_check_1():
    world = run_world(pair("withhold", {"log": "lists"}))
    (device, t, reason), *_ = alarms(world)
    assert device == "b1" and 60 <= t <= 70
    assert "never served" in reason


def test_withholding_ops_and_their_log_entries_is_detected_by_peers_checkpoints():
    world = run_world(pair("withhold", {"log": "hides"}))
    assert {"a1", "a2", "b2"} <= set(_alarmed_by(world))
    assert all("differs from the checkpoint of 'b1'" in r for d, _, r in alarms(world) if d != "b1")


def test_an_op_replayed_into_another_slot_is_refused_and_never_applied():
    world = run_world(pair("replay", {"into": "slot"}))
    assert rejections(world)[("b1", "decrypt")] > 0
    assert alarms(world) == []
    b1 = world.slots["b1"].device
    assert not [rid for rid in b1.records("g:team") if rid.endswith("-replay")]


def test_an_op_replayed_from_another_graph_is_refused_and_never_applied():
    world = run_world(pair("replay", {"into": "graph"}, graphs=("g:team", "u:bob")))
    assert rejections(world)[("b1", "decrypt")] > 0
    assert alarms(world) == []


def test_rewritten_log_revs_are_detected_at_the_next_checkpoint_boundary():
    world = run_world(pair("rewrite-log", {"how": "rev"}))
    assert {"b1", "b2"} <= set(_alarmed_by(world))  # b2 sees b1's checkpoint disagree
    assert all("boundary" in reason for _, _, reason in alarms(world))


def test_dropped_log_entries_are_detected_at_the_next_checkpoint_boundary():
    world = run_world(pair("rewrite-log", {"how": "drop"}))
    assert "b1" in _alarmed_by(world)


def test_a_reordered_log_is_detected():
    world = run_world(pair("reorder", {"what": "log"}))
    assert "b1" in _alarmed_by(world)


def test_reordered_pull_pages_are_harmless_last_write_wins_still_converges():
    world = run_world(pair("reorder", {"what": "pull"}))
    assert alarms(world) == [] and not rejections(world)
    assert converged(world) == []


def test_substituted_roster_keys_make_the_victims_records_fail_their_signatures():
    world = run_world(pair("substitute-keys", {"victim": "a1"}))
    assert rejections(world)[("b1", "bad-signature")] > 0
    assert alarms(world) == []


def test_substituted_roster_keys_raise_device_conflict_in_approve_mode():
    world = run_world(
        pair(
            "substitute-keys",
            {"victim": "a1"},
            schedule=(S.Rotate(by="b1", graph="g:team", at=100),),
            approval_mode="approve",
        )
    )
    conflicts = [e for e in events(world, "device.conflict") if e.actor == "b1"]
    assert conflicts and conflicts[0].fields["device"] == "a1"
    rotation = [e for e in events(world, "graph.rotate") if e.fields["epoch"] == 2]
    assert "a1" in rotation[0].fields["excluded"]  # b1 never wrapped to the fake keys
    a1, b1 = world.slots["a1"].device, world.slots["b1"].device
    assert a1.keyring("g:team").keys[2] == b1.keyring("g:team").keys[2]  # a2 granted the real a1


def test_dropped_wraps_strand_the_device_behind_without_an_alarm():
    world = run_world(pair("drop-wraps", {}, schedule=ROTATE))
    b1 = world.slots["b1"].device
    assert 2 not in b1.keyring("g:team").keys
    assert [e for e in events(world, "keys.behind") if e.actor == "b1"]
    assert alarms(world) == []


def test_substituted_wraps_make_the_new_epochs_records_unopenable():
    world = run_world(pair("substitute-wraps", {}, schedule=ROTATE))
    assert rejections(world)[("b1", "decrypt")] > 0
    assert alarms(world) == []


def test_a_lied_epoch_holds_the_targets_writes_forever_without_an_alarm():
    world = run_world(pair("lie-epoch", {}))
    b1 = world.slots["b1"].device
    assert b1.pending() > 0 and b1.graph_status("g:team").behind
    assert alarms(world) == []
