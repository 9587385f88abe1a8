"""``simkit mutate``: an operator-mutation score of simkit's protocol code or the user's."""

import json
import sys

import click

from simkit.cli import options
from simkit.cli.app import debug_option, main
from simkit.cli.exits import FINDING
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
    cluster, and prints the score and each survivor's file, line and diff. A mutant
    whose run hangs or whose process dies gets that verdict ("timed out", "crashed");
    --json is rewritten as each verdict comes in, so it holds every verdict so far after
    Ctrl-C or a crash. Exit 0 when no mutant survived, 1 when one survived, 2 on a usage
    error, 70 when simkit itself failed, 130 after Ctrl-C.
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
    written = [-1]  # verdicts in the JSON file so far

    def write(outcomes: list[dict], complete: bool) -> None:
        if json_path and (complete or len(outcomes) != written[0]):
            written[0] = len(outcomes)
            data = mutation.to_json(drawn, scores(plan.mutants, outcomes), seed, seconds, complete)
            Path(json_path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    seen = [None]  # the campaign's state so far

    def progress(state) -> None:
        status.show(progress_line(state))
        seen[0] = state
        write(state.outcomes, False)

    pool = connect(workers, scheduler) if scheduler else local_pool(workers or cores())
    try:
        with pool as client:
            result = run_campaign(plan, client, progress)
    except Exception:
        if report_dir and seen[0] is not None:  # the verdicts until simkit failed
            write_report(seen[0], report_dir)
        raise
    status.end()
    table = scores(plan.mutants, result.outcomes)
    echo_lines(mutation.lines(drawn, table, seed))
    write(result.outcomes, not result.interrupted)
    if report_dir:
        click.echo(f"dashboard: {write_report(result, report_dir)}")
    survived = any(s.verdict == "survived" for s in table)
    sys.exit(130 if result.interrupted else FINDING if survived else 0)
