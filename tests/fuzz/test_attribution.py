"""Whose finding it is: a failure met under a change is replayed on the base first; the
base's failures are kept aside (present without the change, exit 4) and the search goes
on; the change's own are "caused by the change" (exit 1)."""

import json

from click.testing import CliRunner

from simkit.cli import main
from simkit.fuzz.attribution import CAUSED, PRESENT, STACK, attribute
from simkit.fuzz.reproducer import Reproducer
from simkit.fuzz.runner import fuzz
from simkit.sim.variants import load_variant

LOG_LOSER = "tests.fuzz.variants:log_loser"
WIDER_SKEW = "simkit.bench.changes:wider_skew"  # a change of push rule 1 (10 minutes, not 5)
# a1's clock a minute behind: of two concurrent writes of r0, a1's loses last-write-wins,
# and a relay that logs LWW losers (``log_loser``) breaks seq-and-log at once
RACE = [
    {"rule": "jump", "device": "a1", "ms": -60000},
    {"rule": "concurrent", "devices": ["a1", "b1"], "graph": "g:team", "record": "r0"},
    {"rule": "advance", "seconds": 30},
]


def _write(tmp_path, name: str, **fields) -> str:
    path = tmp_path / name
    data = {"machine": "honest", "world": {"seed": 0}, "steps": RACE, **fields}
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_a_finding_of_the_change_is_caused_by_it_and_one_the_base_has_too_is_not(tmp_path):
    change = Reproducer.load(_write(tmp_path, "change.json", variant=LOG_LOSER))
    assert attribute(change).verdict == CAUSED
    release = {
        "variant": WIDER_SKEW,
        "base": LOG_LOSER,
        "world": {"seed": 0, "rollout": {"relay_new": False, "devices_new": []}},
    }
    present = attribute(Reproducer.load(_write(tmp_path, "release.json", **release)))
    assert present.verdict == PRESENT and present.broke == "seq-and-log"
    assert "present without the change" in present.line()
    stack = attribute(Reproducer.load(_write(tmp_path, "honest.json")))
    assert stack.verdict == STACK
    into = {**release, "variant": None}  # a release into the protocol as specified: the stack's
    assert attribute(Reproducer.load(_write(tmp_path, "into.json", **into))).verdict == STACK


def test_replay_says_whose_finding_it_is_in_its_verdict_and_its_exit_code(tmp_path):
    runner = CliRunner()
    done = runner.invoke(main, ["replay", _write(tmp_path, "change.json", variant=LOG_LOSER)])
    assert done.exit_code == 1, done.output
    assert "VIOLATION caused by the change (the same world and steps on honest hold)" in done.output
    release = {
        "variant": WIDER_SKEW,
        "base": LOG_LOSER,
        "world": {"seed": 0, "rollout": {"relay_new": False, "devices_new": []}},
    }
    done = runner.invoke(main, ["replay", _write(tmp_path, "release.json", **release)])
    assert done.exit_code == 4, done.output
    assert "VIOLATION present without the change" in done.output
    assert "the same steps fail too: seq-and-log" in done.output


def test_a_search_that_meets_a_failure_of_the_base_keeps_it_aside_and_goes_on(tmp_path):
    """A release from a broken base (it logs LWW losers) to a change (a wider skew):
    every failure is the base's; each is kept in its own reproducer (one per invariant)
    and the search runs its whole budget of examples instead of stopping."""
    out = tmp_path / "run.json"
    for seed in (3, 5, 1):  # a seed whose 15 examples meet the base's bug (each does, so far)
        result = fuzz(
            load_variant(WIDER_SKEW), variant_ref=WIDER_SKEW, seconds=600, seed=seed,
            max_steps=25, examples=15, shrink=False, out=out, release=frozenset({"mix"}),
            base=load_variant(LOG_LOSER), base_ref=LOG_LOSER,
        )  # fmt: skip
        if result.base_findings:
            break
    assert result.failure is None and not out.exists()  # no finding of the change's own
    assert result.examples == 15  # the search went on past them
    assert result.base_findings
    assert {f.attribution.verdict for f in result.base_findings} == {PRESENT}
    written = [f for f in result.base_findings if f.path]
    assert written and all(Reproducer.load(f.path).variant == LOG_LOSER for f in written)
    data = result.to_json()
    assert data["finding"] is None and data["base_findings"][0]["attribution"]["verdict"] == PRESENT


def test_a_change_whose_declared_rule_runs_and_never_departs_gives_no_verdict(tmp_path):
    """Exit 3 for a change whose method runs in every example but never does otherwise
    than the spec in the rule it declares (push rule 3: the quota, unchanged)."""
    (tmp_path / "same_quota.py").write_text(
        "from simkit.relay import Relay\n"
        "from simkit.sim.variant import Variant\n\n\n"
        "class SameQuota(Relay):\n"
        "    def _quota_reason(self, graph, stored, op):\n"
        "        return super()._quota_reason(graph, stored, op)\n\n\n"
        'same_quota = Variant("same-quota", "the quota as it is", relay=SameQuota,\n'
        '                     changes=("push rule 3",))\n',
        encoding="utf-8",
    )
    done = CliRunner().invoke(
        main,
        [
            "fuzz",
            "--variant",
            f"{tmp_path}/same_quota.py:same_quota",
            "--time",
            "3",
            "--seed",
            "1",
            "--workers",
            "1",
            "--max-steps",
            "8",
            "--out",
            str(tmp_path / "r.json"),
        ],
    )  # fmt: skip  (any budget: the method never departs, however long it runs)
    assert done.exit_code == 3, done.output
    assert "push rule 3: 0 in 0 of" in done.output
    assert "overridden methods ran: SameQuota._quota_reason" in done.output
    assert "no verdict: the change was never exercised" in done.output
