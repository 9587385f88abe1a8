"""``simkit fuzz`` and ``simkit replay``: find a violation, then rerun it exactly."""

import json
import sys

import click

# imported whatever the worker count: Hypothesis draws constants from the local modules
# a process holds, and ``--workers 1`` must draw as the first chunk of N workers does
from simkit.campaign.parallel import fuzz_on_cores
from simkit.cli import options
from simkit.cli.app import debug_option, main
from simkit.cli.exits import BASE_ONLY, FINDING, without_finding
from simkit.cli.outputs import check_file
from simkit.cli.terminal import Status, echo_lines

SHRINK_S = 60.0  # shrinking's own budget from the first violation (``--shrink-time``)


@main.command()
@debug_option
@options.time(
    "Wall-clock budget of the search in seconds: no finding is reported past it "
    "(shrinking has its own, --shrink-time)."
)
@options.shrink_time(
    "Shrinking's own budget: seconds from the first violation (0: do not shrink).",
    default=SHRINK_S,
    zero_ok=True,
)
@options.fresh_seed("Seed of the fuzz session.")
@options.count(
    "--workers",
    minimum=1,
    help="Worker processes to search on [default: the cores this process may use]; 1 runs "
    'the search in this process (docs/fuzzing.md, "On every core").',
)
@options.max_steps("Steps per example.")
@options.variant(
    "Fuzz a protocol variant (docs/variants.md) instead of the honest stack; "
    "MODULE is looked up in the current directory first. A built-in version's name "
    "(honest, older-relay, older-client, previous-release, newer-client) needs no module."
)
@options.release
@click.option(
    "--no-steer",
    "steer",
    is_flag=True,
    flag_value=False,
    default=True,
    help="Do not steer the search toward where the change departs from the spec "
    "(to measure what steering does; docs/variants.md).",
)
@options.out("simkit-repro-<variant>-<seed>.json")
@options.json("Also write the run's figures, invariants, behaviours reached and finding as JSON.")
@options.verbose()
def fuzz(
    seconds: float,
    shrink_seconds: float | None,
    seed: int,
    workers: int | None,
    max_steps: int,
    variant_ref: str | None,
    rollout: bool,
    mix: bool,
    base_ref: str | None,
    steer: bool,
    out: str | None,
    json_path: str | None,
    verbose: bool,
) -> None:
    """Run the state machines until the budget ends or an invariant breaks.

    On a violation: write a reproducer at once (JSON), overwrite it as shrinking
    finds shorter failing runs, print the shortest one's steps and exit 1. Ctrl-C
    stops with the best reproducer so far. Otherwise print examples run, steps per
    second and the invariants checked.
    """
    from pathlib import Path

    from simkit.campaign.cluster import cores
    from simkit.fuzz.runner import fuzz as run_fuzz
    from simkit.fuzz.text import found_line, no_violation_lines, progress_line, violation_lines
    from simkit.sim.variant import HONEST
    from simkit.sim.variants import load_variant, ref_resolved_from
    from simkit.sim.versions import newer_client, previous_release

    variant = load_variant(variant_ref) if variant_ref else HONEST
    release, base = options.release_of(rollout, mix, base_ref, variant)
    path = out or f"simkit-repro-{variant.name}-{seed}.json"
    check_file(path, "--out")
    _replay_known_first(variant_ref, path)
    budget = f"{seconds:g} s"
    budget += f" + {shrink_seconds:g} s to shrink" if shrink_seconds else ", no shrinking"
    # the protocol as specified is also fuzzed as a release, from the previous version
    # and into the next one (Versioning rule 3)
    neighbours = (previous_release, newer_client) if not (variant_ref or release) else None
    what = f"{variant.name} ({variant.description})"
    if release:
        what = f"a release ({' and '.join(sorted(release))}) from {base.name} to {what}"
    workers = workers or cores()
    on = f"{workers} workers" if workers > 1 else "1 worker (this process)"
    click.echo(f"fuzzing {what} for {budget}, seed {seed}, on {on}")
    if neighbours is not None:
        click.echo(
            f"every third chunk: a release, from {neighbours[0].name} to it or from it to "
            f"{neighbours[1].name} (docs/releases.md)"
        )
    status = Status()

    def written(result) -> None:
        if not status.announced:  # the first failing run, unshrunk
            status.announced = True
            status.line(found_line(result, path, shrinking=shrink_seconds != 0))

    def based(result) -> None:  # a failure the base has too: said at once, and searched on
        found = result.base_findings[-1]
        where = f"; reproducer {found.path}" if found.path else ""
        status.line(f"met a failure {found.attribution.line()}{where}; searching on")

    common = {
        "seconds": seconds, "shrink_seconds": shrink_seconds or None,
        "shrink": shrink_seconds != 0, "seed": seed, "max_steps": max_steps, "out": path,
        "progress": lambda result: status.show(progress_line(result)), "written": written,
        "based": based,
        "release": release, "base_ref": base_ref and ref_resolved_from(base_ref, Path.cwd()),
    }  # fmt: skip
    if workers > 1:
        ref = variant_ref and ref_resolved_from(variant_ref, Path.cwd())
        names = neighbours and (neighbours[0].name, neighbours[1].name)
        result = fuzz_on_cores(workers, variant_ref=ref, neighbours=names, steer=steer, **common)
    else:
        result = run_fuzz(
            variant, variant_ref=variant_ref, shrink_workers=workers, base=base,
            neighbours=neighbours, steer=steer, **common,
        )  # fmt: skip
    status.end()
    if json_path:
        Path(json_path).write_text(json.dumps(result.to_json(path), indent=2) + "\n")
    if result.failure is None:
        echo_lines(no_violation_lines(result))
        base_only = bool(result.base_findings)
        sys.exit(without_finding(result.interrupted, base_only, result.exercise.verdict))
    echo_lines(violation_lines(result, path, shrink_seconds, verbose))
    sys.exit(1)


def _replay_known_first(variant_ref: str | None, path: str) -> None:
    """Replay the known findings of this variant (docs/campaigns.md); the first that
    still fails is this run's violation, copied to ``path`` (exit 1)."""
    import attrs

    from simkit.fuzz.corpus import KNOWN, still_failing

    known, replayed = still_failing(KNOWN, variant_ref)
    if known is None:
        if replayed:
            click.echo(f"replayed {replayed} known findings from {KNOWN} first: none fails now")
        return
    attrs.evolve(known.reproducer, violations=known.violations).write(path)
    click.echo(f"VIOLATION: a known finding still fails (replayed before searching): {known.path}")
    click.echo(known.failure)
    click.echo(f"reproducer: {path}  (replay with: simkit replay {path})")
    sys.exit(1)


def _matched(recorded: str | None, replayed: str) -> str:
    """Whether the replay ran exactly as the run the file recorded."""
    if recorded is None:
        return " (the file records none to compare)"
    if recorded == replayed:
        return " (matches the recorded run)"
    return f" (DIFFERS from the recorded run's {recorded[:16]}...: the code or the file changed)"


@main.command()
@debug_option
@click.argument("file", type=click.Path(dir_okay=False))
@options.report("Also render the replayed run as a report into DIR (docs/reports.md).")
@options.verbose()
def replay(file: str, report_dir: str | None, verbose: bool) -> None:
    """Rerun a reproducer exactly and say which invariant failed where.

    Exits 1 when an invariant fails (the reproducer reproduces), 0 when none does,
    2 when the file is missing or broken. A failing run of a change is replayed on
    the base too: exit 4 when the base fails on the same steps (present without the
    change). With --report, the run becomes a report whose
    violation section names the invariant, the step it broke after, and the trace
    events behind it.
    """
    from simkit.fuzz.attribution import PRESENT, attribute, is_change
    from simkit.fuzz.reproducer import Reproducer, replay_summary
    from simkit.fuzz.reproducer import replay as run_replay
    from simkit.invariants.text import grouped_lines

    repro = Reproducer.load(file)
    if repro.base is not None:
        upgrades = sum(1 for step in repro.steps if step.RULE == "upgrade")
        click.echo(
            f"a release from {repro.base} to {repro.variant or 'honest'}: "
            f"{upgrades} upgrade step(s) (docs/releases.md)"
        )
    result = run_replay(repro)
    click.echo(f"trace-hash: {result.trace_hash}{_matched(repro.trace_hash, result.trace_hash)}")
    attribution = attribute(repro) if result.violations and is_change(repro) else None
    if report_dir:
        from pathlib import Path

        from simkit.report import render_report

        summary = replay_summary(repro, result, Path(file).stem, attribution)
        paths = render_report(result.world.trace, summary, report_dir)
        click.echo(f"report: {paths['report.html']}")
    exercise = result.world.exercise()
    echo_lines(exercise.lines())
    if not result.violations:
        verdict = exercise.verdict or "no violation"
        click.echo(f"{verdict} in {len(repro.steps)} steps and quiescence")
        sys.exit(3 if exercise.verdict else 0)
    whose = f" {attribution.line()}" if attribution else ""
    click.echo(f"VIOLATION{whose}: violated {result.where(repro)}")
    echo_lines(grouped_lines(result.violations, verbose))
    sys.exit(BASE_ONLY if attribution and attribution.verdict == PRESENT else FINDING)
