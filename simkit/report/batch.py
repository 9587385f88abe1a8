"""Many runs on many cores, their results in the order they were asked for.

``simkit run DIR`` and ``simkit compare`` run scenarios independently of each other: a
run is a pure function of its scenario and seed, so running them on ``jobs`` worker
processes changes when each ends, never what it gives (the same trace hashes, the same
reports, byte for byte). Results are handed back in the library's order as each next
one is ready, so what is printed and written is the same whatever ``jobs`` is.
"""

import concurrent.futures
import multiprocessing
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from simkit.scenario.load import load_scenario
from simkit.scenario.run import ScenarioOutcome, run_scenario

T = TypeVar("T")
R = TypeVar("R")


def in_order(fn: Callable[[T], R], items: Iterable[T], jobs: int) -> Iterator[R]:
    """``fn(item)`` for each item, on ``jobs`` fresh processes (1: here, one at a time),
    yielded in the items' order. ``fn`` must be a module-level function; an exception it
    raises is raised here, at its item's turn."""
    items = list(items)
    if jobs <= 1 or len(items) <= 1:
        yield from map(fn, items)
        return
    context = multiprocessing.get_context("spawn")  # no fork of a process running threads
    with concurrent.futures.ProcessPoolExecutor(min(jobs, len(items)), context) as pool:
        futures = [pool.submit(fn, item) for item in items]
        try:
            for future in futures:
                yield future.result()
        finally:
            for future in futures:
                future.cancel()


def scenario_outcome(job: tuple[str, int | None, str | None]) -> ScenarioOutcome:
    """Run the scenario file ``path`` (with ``seed`` instead of its own, when given) and
    render its report into ``report_dir/<name>/`` (when given): ``job`` is the three."""
    from simkit.report import render_report

    path, seed, report_dir = job
    scenario = load_scenario(path)
    if seed is not None:
        scenario = scenario.with_seed(seed)
    out = Path(report_dir) / scenario.name if report_dir else None
    if out is not None:  # the trace streams to the report folder as it is written
        out.mkdir(parents=True, exist_ok=True)
    result = run_scenario(scenario, trace_path=out and out / "trace.jsonl")
    outcome = result.outcome()
    if out is not None:
        render_report(out / "trace.jsonl", outcome.summary, out)
    return outcome
