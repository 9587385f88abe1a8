"""A scenario's promises (docs/scenarios.md, "Promises"): each claim of its description
names the checks that judge it; the loader refuses a claim nothing checks, and the
report and ``simkit run`` show each promise's verdict from those checks."""

import pytest

from simkit.invariants.verdicts import InvariantCheck
from simkit.report import render_report
from simkit.scenario.load import ScenarioError, load_library, load_scenario
from simkit.scenario.promises import BROKEN, HELD, NOT_CHECKED, Promise, judge
from simkit.scenario.run import ExpectationCheck, run_scenario
from tests.scenario.test_load import GOOD, _write

PROMISED = (
    GOOD
    + """
[expect]
settled = true

[[promise]]
says = "a small world"
checked_by = ["convergence", "settled"]
"""
)


def test_a_promise_names_the_invariants_and_expectations_that_judge_it(tmp_path):
    scenario = load_scenario(_write(tmp_path, PROMISED))
    assert scenario.promises == (Promise("a small world", ("convergence", "settled")),)


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda t: t.replace('"convergence", "settled"', '"happiness"'),
         "promise[0].checked_by: 'happiness' is no check of this run"),
        (lambda t: t.replace('"convergence", "settled"', '"no other alarm"'),
         "promise[0].checked_by: 'no other alarm' is no check of this run"),
        (lambda t: t.replace('"convergence", "settled"', ""),
         "promise[0].checked_by: expected a list of the checks that judge it"),
        (lambda t: t.replace('says = "a small world"', 'says = " "'),
         "promise[0].says: expected the claim"),
        (lambda t: t.replace("[[promise]]", "[[promise]]\nby = 3"), "unknown key 'promise[0].by'"),
        # an invariant left out of ``[expect] invariants`` is not checked: no promise rests on it
        (lambda t: t.replace("settled = true", 'settled = true\ninvariants = ["lww"]'),
         "promise[0].checked_by: 'convergence' is no check of this run"),
    ],
)  # fmt: skip
def test_a_promise_that_no_check_of_the_run_judges_is_refused_naming_file_and_key(
    tmp_path, change, said
):
    path = _write(tmp_path, change(PROMISED))
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(path) in str(caught.value) and said in str(caught.value)


def test_a_promise_is_broken_by_any_check_it_names_and_not_checked_if_one_did_not_run():
    promises = (
        Promise("it settles", ("settled",)),
        Promise("it converges and settles", ("convergence", "settled")),
        Promise("nothing is forged", ("forgery", "settled")),
        Promise("writes win by rev", ("lww", "forgery")),
    )
    expectations = (ExpectationCheck("settled", True),)
    invariants = (
        InvariantCheck("convergence", True, ("b1 holds another value",)),
        InvariantCheck("forgery", False, note="no forger in this run"),
        InvariantCheck("lww", True),
    )
    verdicts = [(p.verdict, p.detail) for p in judge(promises, expectations, invariants)]
    assert verdicts == [
        (HELD, ""),
        (BROKEN, "failed: convergence"),
        (NOT_CHECKED, "did not run: forgery"),
        (NOT_CHECKED, "did not run: forgery"),
    ]


def test_every_library_scenario_ties_each_claim_of_its_description_to_a_check():
    """Each library scenario states its promises, each one words of its description
    (so the report's Promises table reads as the description, checked)."""
    for scenario in load_library("scenarios"):
        assert scenario.promises, f"{scenario.name}: no [[promise]]"
        for promise in scenario.promises:
            assert promise.says.lower() in scenario.description.lower(), (
                f"{scenario.name}: {promise.says!r} is not in its description"
            )


def test_the_report_shows_each_promise_with_its_verdict_and_checks(tmp_path):
    scenario = load_scenario(_write(tmp_path, PROMISED.replace("duration = 60", "duration = 20")))
    result = run_scenario(scenario)
    summary = result.summary()
    assert summary["promises"] == [{
        "says": "a small world", "checked_by": ["convergence", "settled"],
        "verdict": HELD, "detail": "",
    }]  # fmt: skip
    files = render_report(result.world.trace, summary, tmp_path / "report")
    page = files["report.md"].read_text(encoding="utf-8")
    assert "## Promises" in page
    assert "| ✓ held | a small world | convergence, settled | - |" in page
    assert page.index("## Promises") < page.index("## Expectations")
