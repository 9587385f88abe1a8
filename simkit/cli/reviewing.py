"""``simkit compare``: a protocol change against what runs today, for a reviewer."""

import sys

import click

from simkit.cli import options
from simkit.cli.app import debug_option, main
from simkit.cli.exits import FINDING, without_finding
from simkit.cli.terminal import Status

FUZZ_S = 60.0
"""Fuzzing on each side by default: a change is judged by more than the library's
scenarios unless the reviewer says so (``--time 0``)."""


@main.command()
@debug_option
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@options.variant("The change to review (required): MODULE:NAME, PATH.py:NAME or a built-in name.")
@click.option(
    "--base",
    "base_ref",
    metavar=options.VARIANT_METAVAR,
    default=None,
    help="What runs today (default: honest, the protocol as specified).",
)
@click.option(
    "--time",
    "seconds",
    type=click.FloatRange(min=0),
    default=FUZZ_S,
    show_default=True,
    help="Seconds of seeded fuzzing on each version after the scenarios (0: none: the "
    "scenarios alone judge the change).",
)
@options.fresh_seed("Seed of the fuzzing (the scenarios keep their own seeds).")
@click.option(
    "--max-cost-growth",
    type=click.FloatRange(min=1.0),
    default=1.2,
    show_default=True,
    help="Requests under the change over requests under the base past which a scenario "
    "(or the whole library) counts as a regression.",
)
@click.option(
    "--rollout",
    is_flag=True,
    help="Fuzz the change as a release rolled out from the base (docs/releases.md).",
)
@click.option(
    "--check", "check_depth", type=click.IntRange(min=0, max=4), default=0, show_default=True,
    help="Also run `simkit check` to this depth on each version (its default scope; "
    "docs/checking.md): every short history, beside the fuzzing (0: none).",
)  # fmt: skip
@options.report("Write compare.md, compare.html, compare.json and any finding here (required).")
@options.json("Also write the comparison's JSON here.")
@options.jobs
def compare(
    paths: tuple[str, ...],
    variant_ref: str | None,
    base_ref: str | None,
    seconds: float,
    seed: int,
    max_cost_growth: float,
    rollout: bool,
    check_depth: int,
    report_dir: str | None,
    json_path: str | None,
    jobs: int | None,
) -> None:
    """Run the scenario library (or the scenarios or folders given) under the base and
    under the change with the same seeds, then fuzz each for --time seconds, and write
    one report for reviewers: verdicts and checks that flipped, where each pair of runs
    first went apart, what each cost, what each fuzz run found.

    Exit 0 when nothing regressed, 1 when a verdict regressed (a scenario that passed
    fails, or the fuzzing found a failure the change caused) or requests grew past
    --max-cost-growth, 2 on bad input, 3 when the change never made a difference in
    any run (no verdict; docs/reviewing.md), 4 when only the base fails (scenarios
    failing under both, failures the same steps make on the base).
    """
    from simkit.campaign.cluster import cores
    from simkit.report.compare import Side, compare, write_comparison
    from simkit.scenario.load import load_library
    from simkit.sim.variant import HONEST
    from simkit.sim.variants import load_variant

    if variant_ref is None:
        raise click.UsageError("--variant names the change to review")
    if report_dir is None:
        raise click.UsageError("--report names the folder the comparison is written to")
    change = Side(load_variant(variant_ref), variant_ref)
    base = Side(load_variant(base_ref, where=f"--base {base_ref}"), base_ref) if base_ref else (
        Side(HONEST, HONEST.name)
    )  # fmt: skip
    scenarios = [s for path in paths or (None,) for s in load_library(path)]
    click.echo(
        f"comparing {change.ref} against {base.ref}: {len(scenarios)} scenarios"
        + (
            f", then {seconds:g} s of fuzzing on each, seed {seed}"
            if seconds
            else "; no fuzzing (--time 0): the scenarios alone judge the change"
        )
    )
    status = Status()
    result = compare(
        scenarios, base, change, seconds=seconds, seed=seed, max_cost_growth=max_cost_growth,
        rollout=rollout, progress=status.show, jobs=jobs or cores(), check_depth=check_depth,
    )  # fmt: skip
    status.end()
    page = write_comparison(result, report_dir, json_path)
    click.echo((page.parent / "compare.md").read_text(encoding="utf-8"), nl=False)
    click.echo(f"report: {page}")
    if result.failed:
        sys.exit(FINDING)
    sys.exit(without_finding(False, bool(result.base_failures()), result.exercise().verdict))
