"""Traces the report tests render: two small worlds (one with a partition and a
withholding relay that makes b1 raise the log alarm, one with nothing wrong) and
a hand-written builder for the corner cases a world rarely produces."""

import pytest

from simkit.sim import Adversary, Partition, Trace, Workload, WorldSpec, run_world

TEAM = {"alice": ("a1", "a2"), "bob": ("b1",)}


def summary(scenario: str, passed: bool = True, violations: tuple[str, ...] = ()) -> dict:
    return {
        "scenario": scenario,
        "description": f"{scenario}: a test world",
        "seed": 1,
        "passed": passed,
        "trace_hash": "0" * 64,
        "expectations": [{"name": "b1 raises log.alarm", "passed": passed, "detail": "at 60 s"}],
        "invariants": [
            {"name": "convergence", "passed": True, "violations": []},
            {"name": "alarm-soundness", "passed": not violations, "violations": list(violations)},
        ],
    }


@pytest.fixture(scope="session")
def alarm_trace() -> Trace:
    spec = WorldSpec(
        seed=1,
        devices=TEAM,
        groups={"team": ("alice", "bob")},
        graphs=("g:team", "u:alice"),
        duration_s=120,
        workload=Workload(interval_s=5),
        schedule=(
            Partition(("a2",), 30, 90),
            Adversary("withhold", 60, ("b1",), {"log": "lists"}),
        ),
    )
    return run_world(spec).trace


@pytest.fixture(scope="session")
def clean_trace() -> Trace:
    spec = WorldSpec(
        seed=2,
        devices={"alice": ("a1",), "bob": ("b1",)},
        groups={"team": ("alice", "bob")},
        graphs=("g:team",),
        duration_s=40,
        workload=Workload(interval_s=5),
    )
    return run_world(spec).trace


class Builder:
    """A trace written by hand: ``at(t)`` moves virtual time, ``emit`` records."""

    def __init__(self) -> None:
        self.t = 0.0
        self.trace = Trace(lambda: self.t)

    def at(self, t: float) -> "Builder":
        self.t = t
        return self

    def emit(self, kind: str, actor: str, **fields) -> "Builder":
        self.trace.emit(kind, actor, **fields)
        return self

    def exchange(self, device: str, xid: int, start: float, end: float, status: int = 200):
        self.at(start).emit("request", device, method="GET", path="/graphs/g/pull", size=0, xid=xid)
        return self.at(end).emit("response", device, status=status, size=2, xid=xid)


STOLEN = """
description = "A stolen device keeps writing; the client skips the revoked-at check"
variant = "tests.fuzz.variants:skip_revoked"
seed = 3
duration = 120
drain = 60
graphs = ["g:team", "u:bob"]

[members]
alice = ["a1", "a2"]
bob = ["b1", "b2"]

[groups]
team = ["alice", "bob"]

[workload]
interval = 5

[[schedule]]
at = 30
action = "steal"
by = "a1"
device = "a2"

[expect]
rejections = [{ device = "b1", reason = "revoked-device" }]
"""


@pytest.fixture(scope="session")
def failing_run(tmp_path_factory):
    """A run that breaks ``revocation`` (a client variant skips the revoked-at check)
    and cannot check the invariants that need an honest relay: (trace, summary)."""
    from simkit.scenario.load import load_scenario
    from simkit.scenario.run import run_scenario

    path = tmp_path_factory.mktemp("stolen") / "stolen.toml"
    path.write_text(STOLEN)
    result = run_scenario(load_scenario(path))
    assert not result.passed
    return result.world.trace, result.summary()
