"""Mutation analysis: each mutant (a variant, or a source mutant fuzzed in a fresh
process on a mutated copy of simkit) is fuzzed for the same budget; the broken ones
are killed, named with the invariant, the time and the shrunk length, and the ones
that change nothing survive. The killed mutants here break in the first example any
seed draws, so no verdict depends on the examples a seed draws."""

import pytest

from simkit.campaign import Plan, load_mutants, run_campaign
from simkit.campaign.mutation import MutantsError, scores
from simkit.campaign.report import summary

BUDGET = 3  # examples per mutant: a count, so the verdicts do not depend on the machine


def test_mutants_of_both_kinds_are_scored_killed_or_survived(client):
    mutants = load_mutants("tests.campaign.variants:VARIANTS")
    mutants += load_mutants("tests.campaign.variants:SOURCE")
    plan = Plan(600, seed=4, mutants=mutants, chunk_examples=BUDGET, shrink_attempts=3)
    campaign = run_campaign(plan, client)

    table = {s.name: s for s in scores(plan.mutants, campaign.outcomes)}
    assert [s.kind for s in table.values()] == ["variant", "variant", "source", "source"]
    killers = {"a1_loop_raises": "crash", "graph-key-sent-unwrapped": "epochs"}
    for name, invariant in killers.items():
        killed = table[name]
        assert killed.verdict == "killed" and killed.invariant == invariant, killed
        assert killed.examples == 1 and killed.found_after is not None
        assert killed.shrunk_steps <= killed.first_steps
    for name in ("same_as_honest", "docstring-only"):
        survivor = table[name]
        assert survivor.verdict == "survived", survivor
        assert survivor.examples == BUDGET and survivor.steps > 0
    assert summary(campaign)["mutation"]["killed"] == 2


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("nocolon", "expected MODULE:NAME"),
        ("no_such_module:X", "cannot import no_such_module"),
        ("tests.campaign.variants:KILL_DIR", "is a str, not a list of mutants"),
        ("tests.campaign.variants:missing", "is nothing, not a list of mutants"),
    ],
)
def test_a_bad_mutants_reference_is_a_one_line_input_error(ref, message):
    with pytest.raises(MutantsError, match=message):
        load_mutants(ref)


def test_a_kill_whose_run_fails_on_the_honest_code_too_kills_nothing():
    mutant = load_mutants("tests.campaign.variants:SOURCE")[0]
    repro = {"steps": [{"rule": "heal"}], "violations": [{"invariant": "crash"}]}
    outcome = {
        "index": 0, "examples": 1, "steps": 1, "failure": "boom", "reproducer": repro,
        "found_after": 0.1, "first_steps": 1, "shrinking": "done",
    }  # fmt: skip
    [killed] = scores((mutant,), [outcome])
    [void] = scores((mutant,), [{**outcome, "honest_fails": True}])
    assert killed.verdict == "killed"
    assert void.verdict == "honest-fails" and void.invariant == "crash"
