"""``simkit fuzz`` on every core: the campaign's chunks, one search.

A fuzz run with more than one worker is a campaign of one target that stops at its
first finding (docs/fuzzing.md, "On every core"): its chunks, seeded from the run's
seed as a campaign's are, run by the campaign's driver on worker processes forked from
this one (``LocalPool``: ready at once, where a LocalCluster's workers take a second);
the first chunk to fail sends its run back unshrunk and stops the others; the pool
closes, and the run is shrunk here on every core, as a run of one worker shrinks its
own. What the command prints and writes is ``FuzzResult``, whichever way it ran.
"""

from collections.abc import Callable
from pathlib import Path

import attrs

from simkit.campaign.cluster import local_pool
from simkit.campaign.driver import Campaign, Plan, run_campaign
from simkit.campaign.findings import Finding
from simkit.fuzz.attribution import CAUSED, Attribution
from simkit.fuzz.reproducer import Reproducer
from simkit.fuzz.runner import Budget, FuzzResult, keep_aside, shrink_found
from simkit.fuzz.shrink import Target
from simkit.realtime import wall_clock
from simkit.sim.costs import Costs
from simkit.sim.exercise import Exercise
from simkit.sim.variant import HONEST


def fuzz_on_cores(
    workers: int,
    *,
    variant_ref: str | None,
    seconds: float,
    seed: int,
    max_steps: int,
    shrink_seconds: float | None = None,
    shrink: bool = True,
    out: str | Path | None = None,
    progress: Callable[[FuzzResult], None] = lambda result: None,
    written: Callable[[FuzzResult], None] = lambda result: None,
    based: Callable[[FuzzResult], None] = lambda result: None,
    release: frozenset = frozenset(),
    base_ref: str | None = None,
    neighbours: tuple[str, str] | None = None,
    steer: bool = True,
) -> FuzzResult:
    """Fuzz ``variant_ref`` (None: the protocol as specified) on ``workers`` processes
    until the budget ends or a chunk finds a violation, then shrink it on as many.
    ``release``, ``base_ref`` and ``neighbours`` as ``simkit.fuzz.runner.fuzz`` takes
    them (by reference: each worker loads them); ``based`` as ``fuzz`` calls it, as each
    failure the base has too arrives."""
    start = wall_clock()
    plan = Plan(
        seconds=seconds, seed=seed, variants=(variant_ref,), max_steps=max_steps,
        stop_on_failure=True, release=tuple(sorted(release)), base=base_ref,
        neighbours=neighbours, shrink=False, steer=steer, run_first=True,
        deadline=start + seconds,  # one host: every chunk's search ends with the run's
    )  # fmt: skip
    result = FuzzResult(seed=seed, release=tuple(sorted(release)), base=base_ref)
    if release:
        result.base = base_ref or "honest"
    elif neighbours:
        result.release = ("mix", "rollout")
        result.base = f"{neighbours[0]} to it, and it to {neighbours[1]} (every third chunk)"
    target: list[Target] = []
    taken: set = set()  # the campaign's base findings already in ``result``

    def kept_aside(campaign: Campaign) -> None:
        """Take the campaign's new failures of the base into ``result``."""
        for finding in campaign.base_findings:
            if finding.key not in taken:
                taken.add(finding.key)
                repro = Reproducer.from_json(finding.reproducer)
                attribution = Attribution.from_json(finding.attribution)
                when = finding.found_after or finding.found_at
                keep_aside(result, finding.failure, repro, attribution, when, out)
                based(result)

    def running(campaign: Campaign) -> None:
        _count(result, campaign)
        begun = pool.begun  # what running chunks have done too, not only finished ones
        result.examples, result.steps = max(result.examples, begun[0]), max(result.steps, begun[1])
        kept_aside(campaign)
        progress(result)

    def found(campaign: Campaign, finding: Finding) -> None:
        if result.found_after is not None:
            return  # another chunk's, sent back before it stopped: the first one is kept
        _count(result, campaign)
        chunk = next((o for o in campaign.outcomes if o["index"] == finding.chunk), {})
        # when it broke, on the run's clock: its chunk's start and its time into it (the
        # chunk sends it back after its base's replay, which the search budget does not pay)
        started = chunk.get("started")
        result.found_after = (
            started - start + finding.found_after if started is not None else finding.found_at
        )
        result.first_steps = finding.first_steps
        result.failure = finding.failure
        result.attribution = Attribution.from_json(finding.attribution)
        if finding.reproducer is None:
            return  # it broke before its world existed: nothing to replay
        repro = attrs.evolve(Reproducer.from_json(finding.reproducer), fuzz_seed=seed)
        result.reproducer = repro
        error = chunk.get("error")
        change = result.attribution is not None and result.attribution.verdict == CAUSED
        target.append(Target.of(repro, change=change) if repro.violations
                      else Target(None, error, change))  # fmt: skip
        if out is not None:
            repro.write(out)
            written(result)

    with local_pool(workers) as pool:
        campaign = run_campaign(plan, pool, running, found)
    _count(result, campaign)
    kept_aside(campaign)
    result.interrupted = campaign.interrupted and result.failure is None
    result.invariants = sorted({name for o in campaign.outcomes for name in o["invariants"]})
    for outcome in campaign.outcomes:
        result.coverage.counts.update(outcome["coverage"])
        result.coverage.worlds += outcome.get("worlds", 0)
        result.costs.merge(Costs.from_state(outcome["costs"]))
        if outcome["target"] == (variant_ref or HONEST.name):  # not a neighbouring version
            result.exercise.merge(Exercise.from_json(outcome["exercise"]))
    if target:
        budget = Budget(seconds, shrink_seconds)
        shrink_found(
            result, target[0], start=start, budget=budget, workers=workers if shrink else 0,
            out=out, progress=progress, written=written,
        )  # fmt: skip
    else:
        result.seconds = wall_clock() - start
    return result


def _count(result: FuzzResult, campaign: Campaign) -> None:
    """The campaign's work so far, as a fuzz run counts it."""
    result.examples, result.steps, result.seconds = (
        campaign.examples, campaign.steps, campaign.seconds,
    )  # fmt: skip
