"""A campaign as text (``simkit campaign``): functions that return lines and print
nothing, so the wording lives beside ``Campaign`` (the dashboard is campaign.report)."""

from simkit.campaign.driver import Campaign
from simkit.campaign.findings import Finding
from simkit.campaign.mutation import scores
from simkit.fuzz.text import coverage_lines, steps_per_second
from simkit.sim.exercise import NEVER


def progress_line(state: Campaign) -> str:
    """The status line: workers, chunks, work done, behaviours and findings so far."""
    return (
        f"{state.seconds:6.1f} s  workers {len(state.workers)}  chunks {len(state.outcomes)} "
        f"done, {state.running} running  {state.examples:,} examples  {state.steps:,} steps "
        f"({steps_per_second(state):,.0f}/s)  behaviours {len(state.coverage.reached)}  "
        f"findings {len(state.findings)}"
    )


def finding_lines(finding: Finding) -> list[str]:
    """A new finding, the moment a chunk sends it back, and where its reproducer is."""
    key = finding.key
    whose = f", {finding.attribution['verdict']}" if finding.attribution else ""
    line = f"FINDING {key.invariant} on {key.target} ({key.machine}{whose}): "
    line += finding.failure.splitlines()[0]
    return [line, f"  reproducer: {finding.path}"] if finding.path else [line]


def _release_lines(result: Campaign) -> list[str]:
    """A campaign of a release (or of the protocol as specified, whose every third chunk
    is one): what moved, over every chunk (docs/releases.md)."""
    plan, counts = result.plan, result.coverage.counts
    if plan.release:
        what = f"every chunk a release ({' and '.join(plan.release)}) from {plan.base or 'honest'}"
    elif plan.neighbours:
        what = f"every third chunk a release, from {plan.neighbours[0]} or to {plan.neighbours[1]}"
    else:
        return []
    return [
        f"{what}: {counts['upgrade device']:,} device upgrades and {counts['upgrade relay']:,} "
        f"relay upgrades over {counts['release']:,} worlds"
    ]


def summary_lines(result: Campaign) -> list[str]:
    """What ran (known findings replayed, chunks, workers lost), what was checked and
    reached, then the verdict: the mutation score, or each distinct finding."""
    lines = []
    if result.known:
        failing = sum(k["failure"] is not None for k in result.known)
        lines.append(f"known findings replayed first: {len(result.known)}, {failing} still failing")
    lines.append(
        f"{'interrupted (Ctrl-C): ' if result.interrupted else ''}"
        f"{len(result.outcomes)} chunks, {result.examples:,} examples, {result.steps:,} steps, "
        f"{steps_per_second(result):,.0f} steps/s in {result.seconds:.1f} s "
        f"on {len(result.seen)} workers"
        + (f" ({len(result.lost_workers)} lost)" if result.lost_workers else "")
    )
    if result.lost:
        lines.append(f"chunks lost (their workers kept dying): {len(result.lost)}")
    invariants = sorted({name for o in result.outcomes for name in o["invariants"]})
    lines.append("invariants checked: " + (", ".join(invariants) or "none (no chunk finished)"))
    lines += _release_lines(result)
    for target, exercise in sorted(result.exercise.items()):
        lines += [f"{target}: {line}" for line in exercise.lines()]
    lines += coverage_lines(result.coverage)
    if result.plan.mutants:
        return lines + _mutation_lines(result)
    if not result.findings:
        verdict = NEVER if result.unexercised else "no violation"
        if result.base_findings:
            verdict = f"{verdict} caused by the change"
        return [*lines, *_base_lines(result), verdict]
    lines.append(f"{len(result.findings)} distinct findings:")
    for f in result.findings:
        whose = f" [{f.attribution['verdict']}]" if f.attribution else ""
        lines.append(
            f"  {f.key.invariant} on {f.key.target} ({f.key.machine}), {f.steps} steps, "
            f"{f.hits} hits{whose}: {f.failure.splitlines()[0]}"
        )
        if f.path:
            lines.append(f"    replay with: simkit replay {f.path}")
    return lines + _base_lines(result)


def _base_lines(result: Campaign) -> list[str]:
    """Failures met under a change that the base has too: the stack's, each once."""
    if not result.base_findings:
        return []
    lines = [
        f"PRESENT WITHOUT THE CHANGE: {len(result.base_findings)} distinct failures the base "
        "fails on too (the stack's, not the change's):"
    ]
    for f in result.base_findings:
        lines.append(f"  {f.key.invariant} on {f.key.target}, {f.hits} hits: "
                     f"{f.failure.splitlines()[0]}")  # fmt: skip
        if f.path:
            lines.append(f"    replay with: simkit replay {f.path}")
    return lines


def _mutation_lines(result: Campaign) -> list[str]:
    table = scores(result.plan.mutants, result.outcomes)
    killed = sum(s.verdict == "killed" for s in table)
    lines = [f"mutation score: {killed}/{len(table)} killed"]
    for s in table:
        how = (
            f"by {s.invariant} after {s.found_after:.1f} s, shrunk {s.first_steps} -> "
            f"{s.shrunk_steps} steps"
            if s.verdict == "killed"
            else f"[{s.invariant}] fails on the honest code too: a fault of the stack"
            if s.verdict == "honest-fails"
            else f"{s.examples:,} examples, {s.steps:,} steps"
        )
        lines.append(f"  {s.verdict:<8} {s.name}  {how}")
    return lines
