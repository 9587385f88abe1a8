"""Campaigns on a LocalCluster of 2 worker processes: a planted bug is found, found
once however many chunks hit it, found the same way from the same seed, tried first
by the next run, and a chunk whose worker dies is rerun.

Budgets are counts (examples per chunk, chunks, shrink attempts), never seconds; the
time budgets are large enough never to be what ends a chunk. No test depends on
which examples a seed draws (that changes with the state machines and with the
Hypothesis version), only on a seed drawing the same ones every time.
"""

import json
import shutil
from collections import Counter

import pytest
from click.testing import CliRunner

from simkit.campaign import Plan, run_campaign
from simkit.campaign.findings import key_of
from simkit.campaign.report import write_report
from simkit.cli import main
from simkit.fuzz.reproducer import Reproducer, replay

KEEP_LAST_EQUAL = "tests.fuzz.variants:keep_last_equal"
# keep_last_equal breaks LWW at the first equal-rev write: a chunk finds it within a
# few examples (rarely more than 20; it stops at the first).
PLANTED = {"seconds": 600, "seed": 8, "variants": (KEEP_LAST_EQUAL,), "chunks": 2,
           "chunk_examples": 40, "shrink_attempts": 3}  # fmt: skip
# a1's loop raises in every example (at the latest at quiescence), so every chunk
# fails at its first example, on the honest machine, with the same exception.
CRASH = "tests.fuzz.crash_variants:a1_loop_raises"
TIMING = ("seconds", "at", "found_after", "worker", "started")


@pytest.fixture(scope="module")
def known(tmp_path_factory):
    return tmp_path_factory.mktemp("known")


@pytest.fixture(scope="module")
def first(client, known):
    return run_campaign(Plan(**PLANTED, corpus=known), client)


@pytest.fixture(scope="module")
def second(client, known, first):
    """The same campaign again, after ``first`` left its findings in the known folder."""
    return run_campaign(Plan(**PLANTED, corpus=known), client)


def without_timing(outcome: dict) -> dict:
    return {k: v for k, v in outcome.items() if k not in TIMING}


def test_a_planted_broken_variant_is_found_and_its_reproducers_replay(first):
    assert {f.key.target for f in first.findings} == {KEEP_LAST_EQUAL}
    assert {"lww", "seq-and-log"} & {f.key.invariant for f in first.findings}
    for finding in first.findings:
        replayed = replay(Reproducer.load(finding.path))
        assert replayed.violations[0].invariant == finding.key.invariant
        result = CliRunner().invoke(main, ["replay", finding.path])
        assert result.exit_code == 1 and f"[{finding.key.invariant}]" in result.output


def test_the_dashboard_links_each_findings_reproducer_and_its_replayed_runs_report(first, tmp_path):
    page = write_report(first, tmp_path).read_text()
    data = json.loads((tmp_path / "campaign.json").read_text())
    assert len(data["findings"]) == len(first.findings)
    for finding in data["findings"]:
        for link in (finding["reproducer_file"], finding["replay_report"]):
            assert f'href="{link}"' in page and (tmp_path / link).is_file()
        assert f"[{finding['invariant']}]" in (tmp_path / finding["replay_report"]).read_text()


def test_two_workers_finding_the_same_bug_give_one_finding(client, tmp_path):
    plan = Plan(600, variants=(CRASH,), chunks=2, shrink_attempts=3, corpus=tmp_path)
    campaign = run_campaign(plan, client)
    failing = [o for o in campaign.outcomes if o["failure"] is not None]
    assert len(failing) == 2 and len({o["worker"] for o in failing}) == 2
    assert failing[0]["seed"] != failing[1]["seed"]
    (finding,) = campaign.findings
    assert finding.key.invariant == "crash" and finding.hits == 2
    assert finding.steps == min(len(o["reproducer"]["steps"]) for o in failing)
    assert [p.name for p in tmp_path.iterdir()] == [f"{finding.key.stem}.json"]


def test_every_distinct_failure_is_one_finding_counting_its_chunks(first):
    keys = Counter(
        key_of(o["target"], o["failure"], o["reproducer"])
        for o in first.outcomes
        if o["failure"] is not None
    )
    assert {f.key: f.hits for f in first.findings} == dict(keys)


def test_the_same_campaign_seed_runs_the_same_chunks_and_finds_the_same(first, second):
    def chunks(campaign):
        return sorted((without_timing(o) for o in campaign.outcomes), key=lambda o: o["index"])

    assert all(o["ended"] in ("examples", "violation") for o in first.outcomes)
    assert chunks(second) == chunks(first)
    assert [f.key for f in second.findings] == [f.key for f in first.findings]
    assert [f.reproducer for f in second.findings] == [f.reproducer for f in first.findings]


def test_a_campaign_replays_the_known_findings_first(first, second):
    assert first.known == []
    assert sorted(k["path"] for k in second.known) == sorted(f.path for f in first.findings)
    assert all(k["failure"] is not None for k in second.known)
    for before, after in zip(first.findings, second.findings, strict=True):
        assert after.hits == before.hits + 1 and after.found_at == 0.0


def test_the_next_simkit_fuzz_tries_the_known_findings_first(first, tmp_path, monkeypatch):
    finding = next(iter(first.findings))
    folder = tmp_path / ".hypothesis" / "simkit-findings"
    folder.mkdir(parents=True)
    shutil.copy(finding.path, folder)
    monkeypatch.chdir(tmp_path)
    args = ["fuzz", "--variant", KEEP_LAST_EQUAL, "--time", "600", "--out", "repro.json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert "a known finding still fails (replayed before searching)" in result.output
    assert "fuzzing" not in result.output  # no search ran
    assert (
        json.loads((tmp_path / "repro.json").read_text())["steps"] == (finding.reproducer["steps"])
    )


def test_a_killed_workers_chunk_is_rerun_elsewhere(client, kill_dir, tmp_path):
    (kill_dir / "armed").touch()
    plan = Plan(600, variants=("tests.campaign.variants:dies_once",), chunks=2,
                chunk_examples=2, corpus=tmp_path)  # fmt: skip
    campaign = run_campaign(plan, client)
    assert (kill_dir / "fired").exists() and not (kill_dir / "armed").exists()
    assert sorted(o["index"] for o in campaign.outcomes) == [0, 1] and campaign.lost == []
    assert all(o["ended"] == "examples" for o in campaign.outcomes)
    assert len(campaign.lost_workers) == 1
    assert campaign.lost_workers[0] not in {o["worker"] for o in campaign.outcomes}
