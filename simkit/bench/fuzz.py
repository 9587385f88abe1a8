"""Fuzzing throughput: state-machine steps per wall second, side by side with the
code of commit 685eb33 (the figure issue 16 compared against), the peak memory of
the fuzzing process (a fresh one), and what the device model costs: the same
examples with and without it.

Steps are not all equal: today's machines draw bursts of 140 writes, tight rate
limits and one-record pages that 685eb33's never did. So the comparison runs equal
work: today's code with the rules and draws of 685eb33's machines (``classic``),
against 685eb33's own code, each in a fresh process. The two alternate in rounds
(this machine's speed drifts by a third from one minute to the next: rounds put
both sides in the same minutes). The baseline is extracted with ``git archive``
from the repository simkit runs from; from an installed copy without one, its row
says "not measured".
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import simkit
from simkit.bench import BenchRow, isolated

BASELINE = "685eb33"
ROUNDS = 3  # the baseline and this code take turns, each a third of its time per round
BEFORE = "8f3f9d3"  # the code before issue 37: today's machines, the same seeds


def fuzz_for(
    seconds: float,
    classic: bool = False,
    seed: int = 1,
    examples: int | None = None,
    device_model: bool = True,
) -> dict:
    from simkit.fuzz.runner import fuzz
    from simkit.sim.variant import HONEST

    result = fuzz(
        HONEST, seconds=seconds, seed=seed, max_steps=25, shrink=False, classic=classic,
        examples=examples, device_model=device_model,
    )  # fmt: skip
    return {"examples": result.examples, "steps": result.steps, "seconds": result.seconds}


MIX = (
    "from simkit.sim.versions import newer_client, previous_release; "
    "mix = (previous_release, newer_client)"
)
"""The default mix's neighbouring versions (``simkit fuzz`` of the protocol as specified
runs every third chunk as a release of them), as the baseline commit's process imports
them (``default_mix_for`` does the same here)."""


def default_mix_for(seconds: float, seed: int, examples: int) -> dict:
    """``simkit fuzz``'s default mix in one process: ``examples`` examples of ``seed``."""
    from simkit.fuzz.runner import fuzz
    from simkit.sim.variant import HONEST
    from simkit.sim.versions import newer_client, previous_release

    result = fuzz(
        HONEST, seconds=seconds, seed=seed, max_steps=25, shrink=False, examples=examples,
        neighbours=(previous_release, newer_client),
    )  # fmt: skip
    return {"examples": result.examples, "steps": result.steps, "seconds": result.seconds}


def model_cost(examples: int) -> tuple[dict, dict]:
    """The same examples (seeds 1 to ``ROUNDS``, ``examples`` each, derandomized) fuzzed
    with and without the device model, in fresh processes taking turns: the model only
    watches, so both sides run the same steps and only their time differs."""
    with_model: dict = {}
    without: dict = {}
    for r in range(ROUNDS):
        for on in (True, False) if r % 2 == 0 else (False, True):
            got = isolated(fuzz_for, 3600.0, False, r + 1, examples, on)[0]
            if on:
                with_model = _sum(with_model, got)
            else:
                without = _sum(without, got)
    return with_model, without


CONDUCT_HOOKS = (  # issue 48's checks of the device model: what a device says and when
    "_timing_sent", "_timing_failed", "_timing_answered", "_timing_ran", "_cadence_sent",
    "_cadence_done", "_judge_quiet", "_status_judged", "_rereads_sent", "_rereads_keys",
    "_says_trouble", "_says_answered", "_says_ran", "_says_followed", "_reason_true",
    "_pruning",
)  # fmt: skip


def default_mix_without_conduct(seconds: float, seed: int, examples: int) -> dict:
    """``default_mix_for`` with issue 48's checks made no-ops (in this fresh process
    only): the device model only watches, so the examples and steps are the same."""
    from simkit.model.device.model import DeviceModel
    from simkit.sim.oracles import DeviceOracle

    def skip(*args, **kwargs) -> None:
        return None

    for name in CONDUCT_HOOKS:
        setattr(DeviceModel, name, skip)
    DeviceOracle.said = skip
    return default_mix_for(seconds, seed, examples)


def conduct_cost(examples: int) -> tuple[dict, dict]:
    """The same examples (seeds 1 to ``ROUNDS``) with issue 48's checks on and off, in
    fresh processes taking turns: examples, steps and seconds summed per side."""
    on: dict = {}
    off: dict = {}
    for r in range(ROUNDS):
        for checks in (True, False) if r % 2 == 0 else (False, True):
            fn = default_mix_for if checks else default_mix_without_conduct
            got = isolated(fn, 3600.0, r + 1, examples)[0]
            on, off = (_sum(on, got), off) if checks else (on, _sum(off, got))
    return on, off


def _extract(tmp: str, commit: str = BASELINE) -> bool:
    repo = Path(simkit.__file__).resolve().parents[1]
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", commit], capture_output=True, check=False
    )
    if archive.returncode != 0:
        return False
    subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
    return True


def _baseline_in(tmp: str, seconds: float, seed: int, budget: str = "database=None") -> dict | None:
    """The extracted commit's fuzz throughput on its own machines (its own API);
    ``budget``: the extra arguments its ``fuzz`` takes."""
    code = (
        "import json; from simkit.fuzz.runner import fuzz; from simkit.sim.variant import HONEST; "
        f"{MIX}; "
        f"r = fuzz(HONEST, seconds={seconds!r}, seed={seed}, max_steps=25, {budget}, "
        "shrink=False); "
        "print(json.dumps({'examples': r.examples, 'steps': r.steps, 'seconds': r.seconds}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp, capture_output=True, text=True,
        env={"PYTHONPATH": tmp, "PATH": "/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def side_by_side(seconds: float) -> tuple[dict | None, dict]:
    """685eb33 and this code on classic work, ``seconds`` each, in ``ROUNDS`` rounds:
    round r fuzzes seed r + 1 on both sides, and which side goes first alternates.
    Each side's examples, steps and seconds are summed."""
    with tempfile.TemporaryDirectory(prefix="simkit-baseline-") as tmp:
        baseline: dict | None = {} if _extract(tmp) else None
        classic: dict = {}
        for r in range(ROUNDS):
            sides = ["baseline", "classic"] if r % 2 == 0 else ["classic", "baseline"]
            for side in sides:
                if side == "classic":
                    got = isolated(fuzz_for, seconds / ROUNDS, True, r + 1)[0]
                    classic = _sum(classic, got)
                elif baseline is not None:
                    got = _baseline_in(tmp, seconds / ROUNDS, r + 1)
                    baseline = None if got is None else _sum(baseline, got)
    return baseline, classic


def before_and_after(examples: int, seeds: int = ROUNDS) -> tuple[dict | None, dict]:
    """Commit ``BEFORE`` and this code on today's default mix (the honest protocol, its
    every third chunk a release), ``examples`` examples per seed, seeds 1 to ``seeds``,
    fresh processes taking turns (which side goes first alternates): examples, steps and
    seconds summed per side. The same seeds, though not quite the same examples: each
    commit's own constants are in Hypothesis's pool."""
    with tempfile.TemporaryDirectory(prefix="simkit-before-") as tmp:
        before: dict | None = {} if _extract(tmp, BEFORE) else None
        after: dict = {}
        for seed in range(1, seeds + 1):
            for side in ("before", "after") if seed % 2 else ("after", "before"):
                if side == "after":
                    after = _sum(after, isolated(default_mix_for, 3600.0, seed, examples)[0])
                elif before is not None:
                    got = _baseline_in(tmp, 3600.0, seed, f"examples={examples}, neighbours=mix")
                    before = None if got is None else _sum(before, got)
    return before, after


def _sum(total: dict, run: dict) -> dict:
    return {name: total.get(name, 0) + value for name, value in run.items()}


def _rate(result: dict) -> float:
    return result["steps"] / result["seconds"]


def _note(result: dict) -> str:
    return (
        f"{result['examples']:,} examples, {result['steps']:,} steps in {result['seconds']:.0f} s"
    )


def run(quick: bool = False) -> list[BenchRow]:
    seconds = 20.0 if quick else 60.0
    baseline, classic = side_by_side(seconds)
    full, peak = isolated(fuzz_for, seconds)
    rows = []
    if baseline is None:
        rows.append(BenchRow("fuzz", f"steps/s, commit {BASELINE} (classic work)", 0.0, "/s",
                             "not measured: no git repository with that commit"))  # fmt: skip
    else:
        rows.append(BenchRow("fuzz", f"steps/s, commit {BASELINE} (classic work)",
                             _rate(baseline), "/s", _note(baseline)))  # fmt: skip
    rows.append(BenchRow("fuzz", "steps/s, this code (classic work)", _rate(classic), "/s",
                         _note(classic)))  # fmt: skip
    if baseline is not None:
        rows.append(BenchRow("fuzz", f"speed-up over {BASELINE} (classic work)",
                             _rate(classic) / _rate(baseline), "x",
                             "issue 16's 3x goal is retired"))  # fmt: skip
    rows.append(BenchRow("fuzz", "steps/s, this code (today's machines)", _rate(full), "/s",
                         _note(full)))  # fmt: skip
    rows.append(BenchRow("fuzz", "peak memory (fuzzing process)", peak, "MiB"))
    before, after = before_and_after(10 if quick else 40)
    for name, side in ((f"commit {BEFORE}", before), ("this code", after)):
        if side is None:
            rows.append(BenchRow("fuzz", f"examples/s, {name} (default mix)", 0.0, "/s",
                                 "not measured: no git repository with that commit"))  # fmt: skip
            continue
        rows.append(BenchRow("fuzz", f"examples/s, {name} (default mix)",
                             side["examples"] / side["seconds"], "/s",
                             f"{_rate(side):.1f} steps/s; " + _note(side)))  # fmt: skip
    if before is not None:
        note = "the same seeds and example budgets, fresh processes taking turns"
        rows.append(BenchRow("fuzz", f"examples/s over {BEFORE} (default mix)",
                             before["seconds"] / after["seconds"], "x", note))  # fmt: skip
    on, off = conduct_cost(10 if quick else 40)
    rows.append(BenchRow("fuzz", "issue 48's checks: time on over off", on["seconds"] /
                         off["seconds"], "x", "same examples both ways; goal <= 1.1 "
                         f"({_note(on)} on)"))  # fmt: skip
    with_model, without = model_cost(10 if quick else 40)
    rows.append(BenchRow("fuzz", "steps/s, device model off", _rate(without), "/s",
                         _note(without)))  # fmt: skip
    rows.append(BenchRow("fuzz", "steps/s, device model on", _rate(with_model), "/s",
                         _note(with_model)))  # fmt: skip
    rows.append(BenchRow("fuzz", "device model cost (steps/s lost)",
                         100 * (1 - _rate(with_model) / _rate(without)), "%",
                         "same examples both ways; goal <= 15 %"))  # fmt: skip
    return rows
