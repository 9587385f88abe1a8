"""The determinism promise across dependency versions: rerun here, a scenario gives the
trace hash and the summary its committed report holds (reports/<scenario>/summary.json).

.ci/run runs this with the newest release of every dependency and with the oldest
pyproject.toml declares, so a Trio, Hypothesis or cryptography release that changes
a run shows up as a failing scenario, not as reports that silently stop matching.
The hashes are read from the committed summaries, so re-rendering the reports after
a deliberate change keeps this test true.
"""

import json
from pathlib import Path

import pytest

from simkit.scenario.load import load_scenario
from simkit.scenario.run import run_scenario

ROOT = Path(__file__).resolve().parent.parent.parent
# A few cheap ones covering setup and ceremonies, retries under loss, and a malicious relay.
CHEAP = ("bootstrap", "revoke-then-rotate", "lost-responses-and-retries", "adversary-rollback")


@pytest.mark.parametrize("name", CHEAP)
def test_a_rerun_scenario_matches_its_committed_trace_hash(name):
    committed = json.loads((ROOT / "reports" / name / "summary.json").read_text("utf-8"))
    result = run_scenario(load_scenario(ROOT / "scenarios" / f"{name}.toml"))
    assert result.seed == committed["seed"], f"scenarios/{name}.toml's seed changed"
    assert result.trace_hash == committed["trace_hash"], (
        f"{name}: trace hash {result.trace_hash} differs from reports/{name}/summary.json "
        "(a dependency release changed the run, or the reports need re-rendering)"
    )
    # The whole summary, not only the hash: a grown behaviour catalogue or a new
    # situation changes what the report says while the trace stays the same, and CI's
    # main-job step would find the committed reports stale only after the whole suite.
    rendered = json.loads(json.dumps(result.summary()))
    stale = sorted(
        k for k in committed.keys() | rendered.keys() if committed.get(k) != rendered.get(k)
    )
    assert not stale, (
        f"reports/{name}/summary.json differs in {stale}: "
        "rerun simkit run scenarios/ --report reports/ and commit them"
    )


def test_a_pass_in_a_world_that_never_settled_says_what_it_judged():
    """Issue 30: a report said "pass" beside "the world did not settle", unexplained."""
    result = run_scenario(load_scenario(ROOT / "scenarios" / "adversary-lie-epoch.toml"))
    assert result.world.settled_at is None
    notes = {inv["name"]: inv["note"] for inv in result.summary()["invariants"] if inv["passed"]}
    assert notes["revocation"].startswith("held in the state the drain ended in; the world never")
    assert notes["lww"] == ""  # checked after every step: its pass needs no such word
