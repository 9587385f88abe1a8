"""``simkit check``: every history of a small world up to a depth, judged."""

import json
import sys

import click

from simkit.cli import options
from simkit.cli.app import debug_option, main
from simkit.cli.exits import BASE_ONLY, FINDING, HELD, INTERRUPTED, NO_VERDICT
from simkit.cli.outputs import check_file
from simkit.cli.terminal import Status, echo_lines


@main.command()
@debug_option
@click.option(
    "--scope", "scope_path", metavar="FILE", default=None,
    help="The scope: a TOML file naming the world and the alphabet of steps "
    "(default: simkit's own, simkit/check/default.toml; docs/checking.md).",
)  # fmt: skip
@click.option(
    "--from", "moment", metavar="REPRODUCER", type=click.Path(dir_okay=False), default=None,
    help="Start every sequence from this reproducer's world after its steps (a moment worth "
    "exploring) instead of the scope's set-up world.",
)  # fmt: skip
@click.option(
    "--depth", type=click.IntRange(min=1, max=8), default=2, show_default=True,
    help="Every sequence of up to this many steps is run and judged.",
)  # fmt: skip
@click.option(
    "--time", "seconds", type=click.FloatRange(min=0, min_open=True), default=None,
    help="Wall-clock budget in seconds: cut short, the verdict names the deepest depth "
    "completed [default: none].",
)  # fmt: skip
@options.count(
    "--workers",
    minimum=1,
    help="Worker processes [default: the cores this process may use]; 1 runs here.",
)
@click.option(
    "--cluster", is_flag=True,
    help="Run the workers as an embedded Dask LocalCluster (as campaigns do).",
)  # fmt: skip
@click.option(
    "--scheduler", metavar="ADDRESS", default=None,
    help="Run on the Dask cluster of this scheduler (tcp://host:8786).",
)  # fmt: skip
@options.variant("Check a protocol variant (docs/variants.md) instead of the honest stack.")
@click.option(
    "--no-snapshots", "snapshots", is_flag=True, flag_value=False, default=True,
    help="Replay every sequence from a fresh world (to measure what snapshots save).",
)  # fmt: skip
@click.option(
    "--no-state-hashing", "states", is_flag=True, flag_value=False, default=True,
    help="Extend every prefix, even one whose state was reached before.",
)  # fmt: skip
@click.option(
    "--no-symmetry", "symmetry", is_flag=True, flag_value=False, default=True,
    help="Run mirror images under the scope's symmetric groups too.",
)  # fmt: skip
@options.out("simkit-check-<variant>-depth<K>.json")
@options.json("Also write the verdict, the counts per depth and any finding as JSON.")
def check(
    scope_path, moment, depth, seconds, workers, cluster, scheduler, variant_ref, snapshots, states,
    symmetry, out, json_path,
) -> None:  # fmt: skip
    """Run every sequence of up to --depth steps of a scope, from its set-up world.

    Breadth first: depth 1, then 2, ...; each sequence is judged after every step and at
    quiescence by every invariant and both models. The first violation found is a
    shortest one: it is written as a reproducer and the command exits 1. Otherwise the
    verdict names the depth completed, the sequences judged and the distinct states
    reached (exit 0); 3 when no depth completed or the change never ran, 4 when only
    failures the base has too were met.
    """
    import tempfile
    from pathlib import Path

    from simkit.campaign.cluster import connect, cores, local_pool
    from simkit.check.scope import load_scope
    from simkit.check.search import Reductions
    from simkit.check.search import check as run_check
    from simkit.check.text import heading, verdict_lines
    from simkit.sim.variant import HONEST
    from simkit.sim.variants import load_variant, ref_resolved_from

    scope = load_scope(scope_path)
    if moment is not None:
        from simkit.fuzz.reproducer import Reproducer

        repro = Reproducer.load(moment)
        if repro.base is not None:
            raise click.BadParameter("a release's run (it has a base) cannot be a check's "
                                     "moment", param_hint="--from")  # fmt: skip
        scope = scope.starting_from(repro.params, repro.steps, moment)
        if repro.variant and not variant_ref:  # the moment's own version, unless told
            variant_ref = repro.variant
            click.echo(f"--from {moment}: checking its variant {variant_ref}")
    variant = load_variant(variant_ref) if variant_ref else HONEST
    ref = variant_ref and ref_resolved_from(variant_ref, Path.cwd())
    path = out or f"simkit-check-{variant.name}-depth{depth}.json"
    check_file(path, "--out")
    workers = workers or cores()
    reductions = Reductions(snapshots, states, symmetry)
    on = "a Dask cluster" if cluster or scheduler else (
        f"{workers} workers" if workers > 1 else "1 worker (this process)")  # fmt: skip
    click.echo(heading(scope, depth, f"{variant.name} ({variant.description})", on, reductions))
    status = Status()

    def progress(line: str) -> None:
        if line.startswith("  "):
            status.show(line.strip())
        else:
            status.line(line)

    common = {"variant": ref, "reductions": reductions, "seconds": seconds, "progress": progress}
    # the file that stops the workers' shares after a failure: it outlives the pool,
    # which waits for the shares still running when the check ends
    with tempfile.TemporaryDirectory(prefix="simkit-check-") as folder:
        common["stop_file"] = str(Path(folder, "stop"))
        if cluster or scheduler:
            from simkit.campaign.cluster import DaskCluster

            with connect(workers, scheduler) as client:
                pool = DaskCluster(client)
                result = run_check(scope, depth, workers=len(pool.workers()), pool=pool, **common)
        elif workers > 1:
            with local_pool(workers) as pool:
                result = run_check(scope, depth, workers=workers, pool=pool, **common)
        else:
            result = run_check(scope, depth, **common)
    status.end()
    if result.reproducer is not None:
        result.reproducer.write(path)
    echo_lines(verdict_lines(result, path if result.reproducer else None))
    if json_path:
        Path(json_path).write_text(json.dumps(result.to_json(path), indent=2) + "\n")
    if result.failure is not None:
        sys.exit(FINDING)
    if result.base_failures:
        sys.exit(BASE_ONLY)
    if result.interrupted:
        sys.exit(INTERRUPTED)
    sys.exit(NO_VERDICT if not result.completed or result.exercise.verdict else HELD)
