"""Mutation analysis: each mutant (a variant, or a source mutant fuzzed in a fresh
process on a mutated copy of simkit) is fuzzed for the same budget; the broken ones
are killed, named with the invariant, the time and the shrunk length, and the ones
that change nothing survive."""

import pytest

from simkit.campaign import Plan, load_mutants, run_campaign
from simkit.campaign.mutation import MutantsError, scores
from simkit.campaign.report import summary

# Examples per mutant: a count, so the verdicts do not depend on the machine. With
# seed 4 the two broken mutants break within 7 examples, with the newest Hypothesis
# and with its floor (which examples a seed draws depends on the version).
BUDGET = 10


def test_mutants_of_both_kinds_are_scored_killed_or_survived(client):
    broken, same = load_mutants("tests.campaign.variants:VARIANTS")
    source_broken, source_same = load_mutants("tests.campaign.variants:SOURCE")
    mutants = (broken, source_broken, same, source_same)
    plan = Plan(600, seed=4, mutants=mutants, chunk_examples=BUDGET, shrink_attempts=3)
    campaign = run_campaign(plan, client)

    table = {s.name: s for s in scores(plan.mutants, campaign.outcomes)}
    assert [s.kind for s in table.values()] == ["variant", "source", "variant", "source"]
    for name in ("keep_last_equal", "first-equal-rev-replaced"):
        killed = table[name]
        assert killed.verdict == "killed", killed
        assert killed.invariant in ("lww", "seq-and-log")
        assert killed.found_after is not None and killed.shrunk_steps <= killed.first_steps
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
