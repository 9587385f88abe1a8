"""Worlds: convergence under faults, determinism across processes, crashes."""

import json
import os
import subprocess
import sys

import pytest

from simkit.sim import spec as S
from simkit.sim.world import run_world
from tests.sim.worlds import alarms, converged, faulty_team, rejections


def test_nine_devices_with_loss_skew_and_a_partition_all_converge():
    world = run_world(faulty_team())
    assert world.settled_at is not None
    assert converged(world) == []
    assert alarms(world) == [] and not rejections(world)
    faults = [e for e in world.trace if e.kind == "fault"]
    assert any(e.fields.get("fault") == "request-lost" for e in faults)
    assert any(e.fields.get("name") == "Partition" for e in faults)
    assert max(abs(s.clock.offset_ms) for s in world.slots.values()) > 60_000


def test_devices_that_crash_and_a_relay_that_restarts_converge_with_nothing_lost():
    world = run_world(
        faulty_team(
            schedule=(
                S.CrashDevice("a2", at=50, restart_after=30),
                S.CrashDevice("c1", at=130.5, restart_after=1),
                S.CrashRelay(at=150, until=170),
                S.ErrorBurst(503, at=220, until=230),
            )
        )
    )
    assert world.settled_at is not None
    assert converged(world) == []
    assert alarms(world) == []
    crashes = [e.fields["what"] for e in world.trace if e.kind == "crash"]
    assert crashes.count("device-crash") == 2 and "relay-restart" in crashes


WORLDS = {
    "faulty-team": "faulty_team(seed={seed}, duration_s=120)",
    "crashes": "faulty_team(seed={seed}, duration_s=120, schedule=(S.CrashDevice('a1', at=40),"
    " S.CrashRelay(at=60, until=70)))",
    "adversary": "pair('withhold', {{'log': 'hides'}}, seed={seed}, duration_s=150)",
}
SCRIPT = """
import sys
from simkit.sim import spec as S
from simkit.sim.world import run_world
from tests.sim.worlds import faulty_team, pair
print(run_world({world}).trace.trace_hash())
"""


def _hash_in_process(world: str, seed: int, hashseed: str) -> str:
    code = SCRIPT.format(world=WORLDS[world].format(seed=seed))
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


@pytest.mark.parametrize("world", sorted(WORLDS))
def test_same_seed_same_trace_hash_in_two_processes_with_different_hash_seeds(world):
    hashes = {seed: _hash_in_process(world, seed, "1") for seed in (1, 2)}
    assert hashes[1] == _hash_in_process(world, 1, "2")
    assert hashes[2] == _hash_in_process(world, 2, "3")
    assert hashes[1] != hashes[2]


def test_the_trace_is_json_lines_with_every_request_fault_and_event(tmp_path):
    world = run_world(faulty_team(duration_s=60))
    path = tmp_path / "trace.jsonl"
    world.trace.dump(path)
    kinds = {json.loads(line)["kind"] for line in path.read_text().splitlines()}
    assert {"request", "response", "delivery", "fault", "event", "check"} <= kinds


def test_a_world_with_every_ceremony_blobs_and_a_filtered_subscription_converges():
    spec = S.WorldSpec(
        seed=11,
        devices={"alice": ("a1", "a2"), "bob": ("b1", "b2"), "carol": ("c1",)},
        groups={"team": ("alice", "bob")},
        graphs=("g:team", "u:alice", "d:alice:bob"),
        subscriptions=(S.Subscription("a2", "g:team", kinds=("task",), only=True),),
        workload=S.Workload(interval_s=15, kinds=("note", "task"), blobs=0.3),
        approval_mode="approve",
        send_metadata=True,
        schedule=(
            S.LinkDevice("alice", "a3", at=30),
            S.Approve(by="a1", device="a3", at=70),
            S.Revoke(by="b1", device="b2", at=120),
            S.Rotate(by="a1", graph="u:alice", at=150),
            S.Recover("alice", "a9", source="a2", at=180),
            S.Approve(by="a1", device="a9", at=220),
            S.Join("team", "carol", at=200),
        ),
        duration_s=300,
    )
    world = run_world(spec)
    assert converged(world) == []
    assert alarms(world) == []
    team = world.relay.state.graphs["g:team"]
    assert team.latest_epoch >= 2 and "b2" not in team.wraps[team.latest_epoch]
    assert {"a3", "a9", "c1"} <= set(team.wraps[team.latest_epoch])
    assert world.relay.state.graphs["u:alice"].latest_epoch >= 2
    assert world.slots["a3"].device.linking == "ok"
    a2 = world.slots["a2"].device
    held = a2.records("g:team")
    tasks = {rid for rid, row in team.records.items() if row.k == "task"}
    others = {rid for rid, r in held.items() if r["data"].get("by") != "a2"}
    assert tasks and tasks <= set(held) and others <= tasks  # every task, and nothing else
    assert a2.graph_status("g:team").log == "off"
    kinds = {e.fields.get("name") for e in world.trace if e.kind == "event"}
    assert {"device.pending", "device.approved", "blob.forgotten", "graph.rotate"} <= kinds
