"""The shrinker's passes (docs/fuzzing.md, "On a violation")."""

import json
from pathlib import Path

from simkit.fuzz.reproducer import Reproducer
from simkit.fuzz.shrink import Shrinker, Target

UNSHRUNK = Path(__file__).parent / "unshrunk"


def test_a_failure_in_the_last_steps_is_cut_to_them_in_a_few_short_replays():
    """A forged record applied at the end of a 63-step run: keeping the last 1, 2, 4, ...
    steps, shortest first, finds its one step in a few replays of a step or two (the
    other passes replayed the whole run per candidate: 18 replays, 507 steps)."""
    data = json.loads((UNSHRUNK / "a-forgery-at-the-end-of-a-long-run.json").read_text())
    repro = Reproducer.from_json(data)
    assert len(repro.steps) == 63
    shrunk = Shrinker(repro, Target("forgery", change=True), attempts=6).run()
    assert [s.to_json()["rule"] for s in shrunk.reproducer.steps] == ["malformed"]
    assert shrunk.ended == "done" and shrunk.steps < 12
    assert shrunk.reproducer.violations[0]["invariant"] == "forgery"
