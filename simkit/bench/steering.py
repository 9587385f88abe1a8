"""What steering does (docs/variants.md, "Steering"): each change of
``simkit.bench.changes`` fuzzed with and without it, same seeds, same budget, runs
taking turns on every core: departures per example (for a change that declares no
rule: calls of its overridden methods), the examples they happened in, and the time
to the first violation (and which invariant found it).

Not part of ``simkit bench all`` (it takes minutes): ``simkit bench steering``.
"""

import concurrent.futures
import multiprocessing
import os

from simkit.bench import BenchRow

SEEDS = (1, 2)
SECONDS = 60.0


def one(ref: str, seed: int, seconds: float, steer: bool) -> dict:
    """One fuzz run of the change ``ref`` (a fresh process: no run warms another)."""
    from simkit.fuzz.runner import fuzz
    from simkit.sim.variants import load_variant

    result = fuzz(
        load_variant(ref), seconds=seconds, seed=seed, max_steps=25, shrink=False, steer=steer
    )
    ran = result.exercise
    found = result.reproducer.violations if result.reproducer else ()
    counted = ran.departures if ran.declared else ran.calls  # what says the change ran
    return {
        "examples": ran.worlds,
        "departures": sum(counted.values()),
        "departed": max((ran.examples[k] for k in counted), default=0),
        "found_after": result.found_after,
        "invariant": found[0]["invariant"] if found else result.failure and "crash",
    }


def _cell(run: dict) -> str:
    found = (
        f"{run['invariant']} after {run['found_after']:.1f} s"
        if run["found_after"] is not None
        else "no violation"
    )
    per = run["departures"] / run["examples"] if run["examples"] else 0
    return f"{per:.1f} per example, in {run['departed']} of {run['examples']}; {found}"


def run(quick: bool = False) -> list[BenchRow]:
    from simkit.bench.changes import CHANGES

    seconds, seeds = (20.0, SEEDS[:1]) if quick else (SECONDS, SEEDS)
    jobs = [
        (f"simkit.bench.changes:{name}", seed, steer)
        for change in CHANGES
        for name in [_name_of(change)]
        for seed in seeds
        for steer in (False, True)
    ]
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(os.cpu_count() or 1, mp_context=context) as pool:
        futures = {job: pool.submit(one, job[0], job[1], seconds, job[2]) for job in jobs}
        runs = {job: future.result() for job, future in futures.items()}
    rows = []
    for ref, seed, steer in jobs:
        if not steer:
            continue
        plain, steered = runs[ref, seed, False], runs[ref, seed, True]
        per = steered["departures"] / steered["examples"] if steered["examples"] else 0
        rows.append(
            BenchRow(
                "steering", f"{ref.partition(':')[2]} seed {seed}", per, "per example",
                f"plain {_cell(plain)} | steered {_cell(steered)} ({seconds:g} s each)",
            )
        )  # fmt: skip
    return rows


def _name_of(change) -> str:
    from simkit.bench import changes

    return next(name for name, value in vars(changes).items() if value is change)
