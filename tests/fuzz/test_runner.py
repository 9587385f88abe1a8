"""The fuzz budget covers search and shrinking, the reproducer is on disk from the
first violation and only ever gets shorter, and Ctrl-C stops with the best so far.

Budgets here are counts of examples (``shrink_attempts``) or spent before the
first example starts, never seconds that a busy machine could overrun.
"""

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from simkit.cli import main
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.fuzz.runner import Budget, fuzz
from simkit.sim.variant import HONEST
from tests.fuzz.variants import log_loser

ROOT = Path(__file__).parents[2]
# log_loser: caught within a few examples (which ones depends on the seed and on the
# constants of the simkit modules loaded: Hypothesis draws some from them).
CAUGHT = {"seed": 1, "max_steps": 25, "variant_ref": "tests.fuzz.variants:log_loser"}


def on_disk(path) -> tuple:
    """The run a reproducer file holds."""
    repro = Reproducer.load(path)
    return repro.machine, repro.params, repro.steps


def run_of(result) -> tuple:
    return result.reproducer.machine, result.reproducer.params, result.reproducer.steps


def invariants_of(violations) -> list[str]:
    return [v["invariant"] if isinstance(v, dict) else v.invariant for v in violations]


def test_the_reproducer_is_written_at_the_first_violation_and_only_replaced_by_shorter_runs(
    tmp_path,
):
    out = tmp_path / "repro.json"
    writes = []

    def written(result):
        on_disk = json.loads(out.read_text())
        assert len(on_disk["steps"]) == len(result.reproducer.steps)
        writes.append((result.shrink_attempts, len(result.reproducer.steps)))

    def stop_once_shorter(result):
        if writes and writes[-1][1] < writes[0][1]:
            raise KeyboardInterrupt

    # seed 1: a first failing run of 27 steps, which the shrinker shortens
    result = fuzz(
        log_loser, seconds=300, shrink_attempts=300, out=out, written=written,
        progress=stop_once_shorter, **CAUGHT,
    )  # fmt: skip

    first_attempts, first_steps = writes[0]
    assert first_attempts == 0 and first_steps == result.first_steps  # before any shrinking
    steps = [s for _, s in writes]
    assert steps == sorted(steps, reverse=True) and steps[-1] < first_steps
    assert result.shrinking == "interrupted"
    assert on_disk(out) == run_of(result)


def test_shrinking_stops_at_its_budget_and_the_best_run_replays_to_the_same_violation(tmp_path):
    result = fuzz(log_loser, seconds=300, shrink_attempts=3, out=tmp_path / "r.json", **CAUGHT)

    assert result.shrinking == "attempts" and result.shrink_attempts == 3
    replayed = replay(Reproducer.load(tmp_path / "r.json"))
    assert invariants_of(replayed.violations) == invariants_of(result.reproducer.violations)
    assert replayed.failed_at is not None


def test_a_spent_search_budget_runs_no_further_example():
    result = fuzz(HONEST, seconds=1e-9, seed=0, max_steps=5)
    assert result.examples == 0 and result.steps == 0 and result.failure is None


def test_a_spent_shrink_budget_keeps_the_unshrunk_run(tmp_path):
    result = fuzz(log_loser, seconds=300, shrink_seconds=1e-9, out=tmp_path / "r.json", **CAUGHT)
    assert result.shrinking == "budget" and result.shrink_attempts == 0
    assert len(result.reproducer.steps) == result.first_steps
    assert on_disk(tmp_path / "r.json") == run_of(result)


def test_time_covers_search_and_shrinking_unless_shrinking_has_its_own_budget():
    assert Budget(60).shrink_deadline(start=100, found=105) == 160
    assert Budget(60, shrink_seconds=10).shrink_deadline(start=100, found=155) == 165


def test_ctrl_c_while_shrinking_stops_before_the_next_example_with_the_best_run(tmp_path):
    def press_ctrl_c(result):
        if result.shrink_attempts == 3:
            os.kill(os.getpid(), signal.SIGINT)

    handler = signal.getsignal(signal.SIGINT)
    result = fuzz(log_loser, seconds=300, out=tmp_path / "r.json", progress=press_ctrl_c, **CAUGHT)
    assert result.interrupted and result.shrinking == "interrupted"
    assert result.shrink_attempts == 3  # the attempt running then finished; no other began
    assert on_disk(tmp_path / "r.json") == run_of(result)
    assert signal.getsignal(signal.SIGINT) is handler


def test_a_keyboard_interrupt_during_the_search_ends_the_run_without_a_finding():
    def interrupt(result):
        if result.examples == 2:
            raise KeyboardInterrupt

    result = fuzz(HONEST, seconds=300, seed=0, max_steps=5, progress=interrupt)
    assert result.interrupted and result.failure is None and result.examples == 2


def test_simkit_fuzz_on_sigint_while_shrinking_exits_1_with_the_best_reproducer(tmp_path):
    """SIGINT the moment the first failing run is announced: the shrinker stops and
    the reproducer written is the best so far (the first run, or shorter)."""
    out = tmp_path / "repro.json"
    fuzz_args = ["--variant", CAUGHT["variant_ref"], "--seed", "1", "--time", "300"]
    fuzz_args += ["--workers", "1"]  # this seed's long shrinking (2 workers find a short run)
    command = [sys.executable, "-P", "-m", "simkit.cli", "fuzz", *fuzz_args, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    ) as process:
        seen = b""
        while b"shrinking it (Ctrl-C" not in seen:  # shrinking has started
            chunk = os.read(process.stdout.fileno(), 4096)
            assert chunk, seen.decode()
            seen += chunk
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=600)
    output = (seen + rest).decode()
    assert process.returncode == 1, output
    assert "shrinking was interrupted (Ctrl-C)" in output
    assert "seq-and-log" in output  # the verdict names the invariant
    assert replay(Reproducer.load(out)).violations


@pytest.mark.parametrize(
    "args",
    [
        ["--time", "0"],
        ["--time", "-5"],
        ["--shrink-time", "-1"],
        ["--max-steps", "0"],
    ],
    ids=["time-0", "time-negative", "shrink-time-negative", "max-steps-0"],
)
def test_a_budget_out_of_range_is_a_usage_error(args):
    result = CliRunner().invoke(main, ["fuzz", *args])
    assert result.exit_code == 2 and args[0] in result.output, result.output


def test_simkit_fuzz_with_shrink_time_0_stops_at_the_first_violation_unshrunk(tmp_path):
    out = tmp_path / "repro.json"
    args = ["--variant", CAUGHT["variant_ref"], "--seed", "1", "--time", "300"]
    result = CliRunner().invoke(main, ["fuzz", *args, "--shrink-time", "0", "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert "no shrinking" in result.output and "not shrunk" in result.output
    written = json.loads(out.read_text())
    first = re.search(r"in a run of (\d+) steps", result.output)
    assert first and len(written["steps"]) == int(first.group(1))
    assert replay(Reproducer.load(out)).violations
