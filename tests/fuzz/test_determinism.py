"""A fuzz run is a pure function of its steps and parameters: the same reproducer
replays to the same trace hash in processes with different hash seeds, with every
kind of step and non-default settings in play."""

import json
import os
import subprocess
import sys
from pathlib import Path

from simkit.fuzz.params import WorldParams
from simkit.fuzz.reproducer import Reproducer

REPO = Path(__file__).resolve().parents[2]

EVERY_KIND_OF_STEP = (
    {"rule": "capability", "member": "carol", "may": "read-only"},
    {"rule": "burst", "device": "b1", "graph": "g:team", "count": 70},
    {"rule": "concurrent", "devices": ["a1", "b1"], "graph": "g:team", "record": "r1"},
    {"rule": "forge", "device": "a2", "graph": "u:alice", "record": "r2", "how": "signature"},
    {
        "rule": "blob-upload", "device": "a1", "graph": "g:team", "blob": "a1-b4",
        "policy": "ephemeral", "ttl": 1000,
    },
    {
        "rule": "interrupt", "ceremony": {"rule": "revoke", "by": "a1", "device": "a2"},
        "requests": 2, "before": False, "fault": "crash",
    },
    {"rule": "link", "member": "bob", "device": "b6", "announce": True},
    {"rule": "pair", "by": "b1", "device": "b6"},
    {"rule": "partition", "devices": ["c1"], "seconds": 60},
    {"rule": "jump", "device": "b2", "ms": 90000},
    {"rule": "leave", "member": "carol"},
    {"rule": "advance", "seconds": 120},
)  # fmt: skip
PARAMS = WorldParams(
    11, "approve", 60_000, 0.05, 0.05,
    relay={"max_pull_limit": 2, "rate_limits": "tight", "sweep_interval_ms": 1000},
    client={"log_page": 5, "max_batch_ops": 3}, capabilities={"bob": "no-rotate"},
)  # fmt: skip


def _replay_in_fresh_process(path: Path, hash_seed: str) -> str:
    code = (
        "from simkit.fuzz.reproducer import Reproducer, replay; "
        f"print(replay(Reproducer.load({str(path)!r})).trace_hash)"
    )
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_a_reproducer_replays_to_one_trace_hash_whatever_the_hash_seed(tmp_path):
    path = tmp_path / "every-step.json"
    Reproducer("honest", PARAMS, EVERY_KIND_OF_STEP).write(path)
    hashes = {_replay_in_fresh_process(path, seed) for seed in ("1", "2")}
    assert len(hashes) == 1 and len(hashes.pop()) == 64
    assert json.loads(path.read_text())["world"]["relay"]["rate_limits"] == "tight"


def test_a_release_replays_to_one_trace_hash_whatever_the_hash_seed(tmp_path):
    """Two versions at once, upgrades of a device and of the relay among the steps."""
    path = tmp_path / "release.json"
    steps = (
        {"rule": "upgrade", "target": "a1"},
        *EVERY_KIND_OF_STEP[:3],
        {"rule": "upgrade", "target": "relay"},
        {"rule": "advance", "seconds": 30},
    )
    params = WorldParams(12, rollout={"relay_new": False, "devices_new": ["b2"]})
    Reproducer("honest", params, steps, variant="newer-client", base="older-relay").write(path)
    hashes = {_replay_in_fresh_process(path, seed) for seed in ("1", "2")}
    assert len(hashes) == 1 and len(hashes.pop()) == 64
