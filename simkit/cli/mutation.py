"""``simkit mutate``: an operator-mutation score of simkit's protocol code or the user's."""

import json
import sys

import click

from simkit.cli import options
from simkit.cli.app import debug_option, main
from simkit.cli.terminal import Status, echo_lines


@main.command()
@debug_option
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@options.time("Seconds each mutant is fuzzed.")
@options.count("--sample", minimum=1, help="Mutants drawn at random from every site [default: 50].")
@options.fresh_seed("Seed of the draw and of each mutant's fuzzing.")
@options.count("--workers", minimum=1, help="Mutants fuzzed at once [default: one per core].")
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    default=None,
    help="Fuzz on the Dask cluster of this scheduler (tcp://host:8786) instead.",
)
@options.variant(
    "Fuzz this protocol variant instead of the honest stack (its module can be among "
    "the PATHs: it then runs mutated)."
)
@options.max_steps("Steps per example.")
@options.json("Write the score, each survivor's diff and every mutant's verdict here.")
@options.report("Write the campaign dashboard of the mutants here.")
@click.option("--list", "listing", is_flag=True, help="List the drawn mutants; fuzz none.")
def mutate(
    paths: tuple[str, ...],
    seconds: float,
    sample: int | None,
    seed: int,
    workers: int | None,
    scheduler: str | None,
    variant_ref: str | None,
    max_steps: int,
    json_path: str | None,
    report_dir: str | None,
    listing: bool,
) -> None:
    """Score the harness on operator mutants nobody chose.

    Draws --sample mutants at random (with --seed) from every place the mutation
    operators change the Python files under PATH (default: simkit/client, simkit/relay
    and simkit/protocol; another path is read under the current folder), fuzzes each in
    a fresh process on a mutated copy for --time seconds, on every core or a Dask
    cluster, and prints the score and each survivor's file, line and diff. Exit 0 when
    every mutant was killed, 1 when one survived, 2 on a usage error.
    """
    from pathlib import Path

    from simkit.campaign import Plan, connect, run_campaign
    from simkit.campaign import mutate as mutation
    from simkit.campaign.cluster import cores, local_pool
    from simkit.campaign.mutation import scores
    from simkit.campaign.report import write_report
    from simkit.campaign.text import progress_line
    from simkit.sim.variants import load_variant, ref_resolved_from

    if workers is not None and scheduler is not None:
        raise click.UsageError("--workers and --scheduler do not go together")
    if variant_ref:
        load_variant(variant_ref)
    drawn = mutation.draw(mutation.sources(paths, Path.cwd()), sample or 50, seed)
    click.echo(f"mutate: seed {seed}, {len(drawn)} mutants, {seconds:g} s each")
    if listing:
        echo_lines(f"{m.name}: {m.rule.partition(': ')[2]}" for m in drawn)
        return
    plan = Plan(
        seconds=seconds, seed=seed, mutants=tuple(drawn), chunk_examples=None,
        max_steps=max_steps, shrink=False, corpus=None,
        variants=(variant_ref and ref_resolved_from(variant_ref, Path.cwd()),),
        # as ``simkit fuzz`` does: the protocol is also released from the previous
        # version and into the next one (Versioning rule 3)
        neighbours=None if variant_ref else ("previous-release", "newer-client"),
    )  # fmt: skip
    status = Status()
    pool = connect(workers, scheduler) if scheduler else local_pool(workers or cores())
    with pool as client:
        result = run_campaign(plan, client, lambda state: status.show(progress_line(state)))
    status.end()
    table = scores(plan.mutants, result.outcomes)
    echo_lines(mutation.lines(drawn, table, seed))
    if json_path:
        data = mutation.to_json(drawn, table, seed, seconds)
        Path(json_path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if report_dir:
        click.echo(f"dashboard: {write_report(result, report_dir)}")
    survived = any(s.verdict != "killed" for s in table)
    sys.exit(130 if result.interrupted else 1 if survived else 0)
