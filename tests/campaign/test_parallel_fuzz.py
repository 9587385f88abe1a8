"""``simkit fuzz`` on every core (docs/fuzzing.md, "On every core"): a campaign of one
target that stops at its first finding, shrunk here; the same output, JSON,
reproducers and exit codes as a run of one worker."""

import json

from click.testing import CliRunner

from simkit.campaign.cluster import cores
from simkit.cli import main
from simkit.fuzz.reproducer import Reproducer, replay


def fuzz(*args: str):
    return CliRunner().invoke(main, ["fuzz", *args])


def test_simkit_fuzz_without_workers_searches_on_every_core_and_says_how_many():
    result = fuzz("--time", "4", "--seed", "3", "--max-steps", "4")
    assert result.exit_code == 0, result.output
    many = cores()
    said = f"on {many} workers" if many > 1 else "on 1 worker (this process)"
    assert said in result.output.splitlines()[0]
    assert "no violation" in result.output and "invariants checked" in result.output


def test_two_workers_find_shrink_and_write_a_reproducer_that_replays(tmp_path):
    out, data = tmp_path / "repro.json", tmp_path / "run.json"
    result = fuzz(
        "--workers", "2", "--variant", "tests.fuzz.variants:max_seq", "--time", "120",
        "--seed", "1", "--shrink-time", "5", "--out", str(out), "--json", str(data),
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "on 2 workers" in result.output.splitlines()[0]
    assert (
        "VIOLATION caused by the change" in result.output and "reproducer written" in result.output
    )
    written = json.loads(out.read_text())
    assert written["fuzz_seed"] == 1 and written["variant"] == "tests.fuzz.variants:max_seq"
    assert replay(Reproducer.load(out)).violations
    run = json.loads(data.read_text())
    assert run["seed"] == 1 and run["examples"] >= 1 and run["finding"]["reproducer"] == str(out)
    assert run["finding"]["shrinking"] in ("done", "budget", "attempts")


def test_two_workers_give_no_verdict_on_a_change_that_never_ran():
    result = fuzz(
        "--workers", "2", "--variant", "tests.fuzz.variants:unused", "--time", "4",
        "--seed", "2", "--max-steps", "4",
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    assert "no verdict: the change was never exercised" in result.output


def test_the_first_chunk_of_many_workers_is_the_run_of_one_worker():
    """Chunk 0 of ``simkit fuzz --workers N`` runs under the run's own seed with no
    example budget and the same neighbouring releases: whatever one worker finds, N
    find as early; the other chunks are a campaign's."""
    from simkit.campaign.chunk import CHUNK_EXAMPLES, chunk_seed
    from simkit.campaign.driver import Plan

    plan = Plan(60, seed=7, run_first=True, neighbours=("previous", "next"))
    first, second = plan.chunk(0, 60, "stop"), plan.chunk(1, 60, "stop")
    assert (first.seed, first.examples, first.neighbours) == (7, None, ("previous", "next"))
    assert (second.seed, second.examples) == (chunk_seed(7, 1), CHUNK_EXAMPLES)
    assert second.neighbours is None
    campaign = Plan(60, seed=7).chunk(0, 60, "stop")
    assert (campaign.seed, campaign.examples) == (chunk_seed(7, 0), CHUNK_EXAMPLES)
