"""``simkit campaign``: fuzzing on every core or a Dask cluster, and mutation analysis."""

import json
import sys

import click

from simkit.cli import options
from simkit.cli.app import debug_option, main
from simkit.cli.exits import FINDING, without_finding
from simkit.cli.outputs import check_folder
from simkit.cli.terminal import Status, echo_lines


@main.command()
@debug_option
@options.time(
    "Wall-clock budget in seconds: the whole campaign's, or with --mutants each mutant's."
)
@options.count(
    "--workers",
    minimum=1,
    help="Worker processes of the embedded Dask LocalCluster [default: one per core].",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    default=None,
    help="Run on the Dask cluster of this scheduler (tcp://host:8786) instead (docs/campaigns.md).",
)
@options.fresh_seed("Seed of the campaign.")
@options.variant(
    "Fuzz a protocol variant instead of the honest stack; repeat it to fuzz several "
    "(chunks take turns).",
    multiple=True,
)
@options.release
@click.option("--stop-on-failure", is_flag=True, help="Stop every chunk at the first finding.")
@options.json("Write the JSON here.")
@options.report(
    "Write the dashboard (index.html), campaign.json and the findings' reproducers here."
)
@click.option(
    "--mutants",
    "mutants_ref",
    metavar="MODULE:NAME",
    help="Mutation analysis: fuzz each Variant or source Mutant of the list NAME in MODULE "
    "for --time seconds and score how many are killed.",
)
@options.max_steps("Steps per example.")
@options.shrink_time(
    "Seconds a chunk may shrink a violation, from the moment it finds it.",
    default=60.0,
    zero_ok=False,
)
@options.count(
    "--chunks",
    minimum=1,
    help="Stop after this many chunks: chunks that end by their example budget make a "
    "campaign that reruns the same from its seed.",
)
@options.folder(
    "--known",
    "known_dir",
    help="Folder of known findings, replayed first; new findings are added to it "
    "[default: .hypothesis/simkit-findings].",
)
def campaign(
    seconds: float,
    workers: int | None,
    scheduler: str | None,
    seed: int,
    variant_refs: tuple[str, ...],
    rollout: bool,
    mix: bool,
    base_ref: str | None,
    stop_on_failure: bool,
    json_path: str | None,
    report_dir: str | None,
    mutants_ref: str | None,
    max_steps: int,
    shrink_seconds: float,
    chunks: int | None,
    known_dir: str | None,
) -> None:
    """Fuzz on a Dask cluster: many chunks in parallel, findings deduplicated.

    Chunks of examples, each seeded from --seed, run on every worker until the budget
    ends; each distinct failure is written as a reproducer into the known findings
    (replayed first by the next fuzz or campaign). Exit 0 when nothing broke, 1 on a
    finding (with --mutants: when a mutant survives), 2 on a usage error.
    """
    from pathlib import Path

    from simkit.campaign import Plan, connect, load_mutants, run_campaign
    from simkit.campaign.chunk import CHUNK_EXAMPLES
    from simkit.campaign.report import summary, write_report
    from simkit.campaign.text import finding_lines, progress_line, summary_lines
    from simkit.fuzz.corpus import KNOWN
    from simkit.sim.variants import load_variant, ref_resolved_from

    for bad, hint in (
        (workers is not None and scheduler is not None, "--workers and --scheduler"),
        (bool(mutants_ref and variant_refs), "--mutants and --variant"),
        (bool(mutants_ref and stop_on_failure), "--mutants and --stop-on-failure"),
    ):
        if bad:
            raise click.UsageError(f"{hint} do not go together")
    if (rollout or mix) and mutants_ref:
        raise click.UsageError("--mutants and --rollout/--mix do not go together")
    if not known_dir and not mutants_ref:  # the default folder new findings are added to
        check_folder(KNOWN, "--known")
    loaded = [load_variant(ref) for ref in variant_refs]
    release, _ = options.release_of(rollout, mix, base_ref, loaded[0] if len(loaded) == 1 else None)
    variants = tuple(ref_resolved_from(ref, Path.cwd()) for ref in variant_refs) or (None,)
    plan = Plan(
        seconds=seconds, seed=seed, variants=variants,
        mutants=load_mutants(mutants_ref) if mutants_ref else (), chunks=chunks,
        chunk_examples=None if mutants_ref else CHUNK_EXAMPLES,  # a mutant: --time alone
        max_steps=max_steps, shrink_seconds=shrink_seconds, stop_on_failure=stop_on_failure,
        corpus=Path(known_dir) if known_dir else KNOWN, release=tuple(sorted(release)),
        base=base_ref and ref_resolved_from(base_ref, Path.cwd()),
        # the protocol as specified is also fuzzed as a release, from the previous
        # version and into the next one (Versioning rule 3)
        neighbours=None if (variant_refs or release) else ("previous-release", "newer-client"),
    )  # fmt: skip
    status = Status()

    def found(state, finding) -> None:
        status.end()
        echo_lines(finding_lines(finding))

    count = f"{workers} worker{'s' if workers != 1 else ''}" if workers else "a worker per core"
    where = scheduler or f"a LocalCluster of {count}"
    click.echo(f"campaign: seed {seed}, {seconds:g} s, on {where}")
    seen = [None, -1]  # the campaign's state, and the chunks --json holds so far

    def progress(state) -> None:
        status.show(progress_line(state))
        seen[0] = state
        if json_path and len(state.outcomes) != seen[1]:  # each chunk's result as it comes
            seen[1] = len(state.outcomes)
            Path(json_path).write_text(json.dumps(summary(state), indent=2) + "\n")

    try:
        with connect(workers, scheduler) as client:
            result = run_campaign(plan, client, progress, found)
    except Exception:
        if report_dir and seen[0] is not None:  # what ran until simkit failed
            write_report(seen[0], report_dir)
        raise
    status.end()
    echo_lines(summary_lines(result))
    data = summary(result)
    if json_path:
        Path(json_path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if report_dir:
        click.echo(f"dashboard: {write_report(result, report_dir)}")
    if plan.mutants:
        failed = any(s["verdict"] == "survived" for s in data["mutation"]["scores"])
    else:
        failed = bool(result.findings)
    if failed:
        sys.exit(FINDING)
    base_only = bool(result.base_findings)
    sys.exit(without_finding(result.interrupted, base_only, result.unexercised))
