"""A fuzz run as text (``simkit fuzz``; a campaign's coverage too): functions that
return lines and print nothing, so the wording lives beside ``FuzzResult`` and the
command line only writes it."""

import json
from collections import Counter

from simkit.fuzz.runner import FuzzResult
from simkit.invariants.text import grouped_lines
from simkit.sim.behaviours import KINDS, Coverage, worth_a_look
from simkit.sim.situations import FLOOR


def steps_per_second(run) -> float:
    """The throughput of anything that counts ``steps`` over ``seconds``."""
    return run.steps / run.seconds if run.seconds else 0


def progress_line(result: FuzzResult) -> str | None:
    """The status line while searching, then while shrinking; ``None`` between the
    first violation and its first reproducer."""
    if result.found_after is None:
        return (
            f"{result.seconds:6.1f} s  {result.examples} examples  {result.steps} steps  "
            f"{steps_per_second(result):,.0f} steps/s"
        )
    best = result.reproducer
    if best is None:
        return None
    invariant = best.violations[0]["invariant"] if best.violations else "crash"
    return (
        f"shrinking {result.seconds - result.found_after:6.1f} s: "
        f"{len(best.steps)} steps left (from {result.first_steps}), {invariant}, "
        f"{result.shrink_attempts} attempts"
    )


def found_line(result: FuzzResult, path: str, shrinking: bool) -> str:
    """The line that announces the first failing run, written before it is shrunk."""
    return (
        f"violation after {result.found_after:.1f} s ({result.first_steps} steps): "
        f"reproducer written to {path}"
        + ("; shrinking it (Ctrl-C stops with the best so far)" if shrinking else "")
    )


def no_violation_lines(result: FuzzResult) -> list[str]:
    """A run that found nothing of its own: the failures the base has too first (they
    are the stack's, not the change's), then the budget it spent, what it checked and
    reached (a "no violation" names its budget and coverage, ARCHITECTURE.md
    "Verdicts")."""
    verdict = result.exercise.verdict or "no violation"
    if result.base_findings:
        verdict = f"{verdict} caused by the change"
    return [
        *base_finding_lines(result, first=True),
        f"{'interrupted (Ctrl-C): ' if result.interrupted else ''}"
        f"{verdict}: {result.examples} examples, {result.steps} steps, "
        f"{steps_per_second(result):,.0f} steps/s in {result.seconds:.1f} s",
        "invariants checked: " + ", ".join(result.invariants),
        *release_lines(result),
        *changed_rules_lines(result),
        *coverage_lines(result.coverage),
    ]


def base_finding_lines(result: FuzzResult, first: bool = False) -> list[str]:
    """The failures the search met that the base has too: each is the stack's, present
    without the change, kept in its own reproducer (``first``: they open the output,
    the run having no finding of the change's own)."""
    found = result.base_findings
    if not found:
        return []
    base = found[0].attribution.base
    head = (
        f"PRESENT WITHOUT THE CHANGE: {len(found)} failing run(s) the base ({base}) fails "
        "too; none the change caused"
        if first
        else f"also met {len(found)} failing run(s) present without the change (on {base})"
    )
    lines = [head]
    for finding in found:
        where = f"reproducer {finding.path}" if finding.path else "same invariant as above"
        known = finding.attribution.known
        known = f"; the known finding {known}" if known else ""
        lines.append(f"  after {finding.found_after:.1f} s: {finding.attribution.base_failure}")
        lines.append(f"    {where}{known}")
    return lines


def release_lines(result: FuzzResult) -> list[str]:
    """A run of a release: what moved, over every example."""
    if not result.release:
        return []
    counts = result.coverage.counts
    return [
        f"release ({' and '.join(result.release)}) from {result.base}: "
        f"{counts['upgrade device']} device upgrades and {counts['upgrade relay']} relay "
        f"upgrades over {counts['release']} worlds"
    ]


def changed_rules_lines(result: FuzzResult) -> list[str]:
    """How often the change ran: departures per declared rule, overridden methods' calls."""
    return result.exercise.lines()


def violation_lines(
    result: FuzzResult, path: str, shrink_seconds: float | None, verbose: bool = False
) -> list[str]:
    """A finding: how shrinking ended (and which budget cut it off), what broke
    (grouped per invariant, the explaining one first; every violation when
    ``verbose``), the shortest failing run's steps and how to replay it."""
    best = result.reproducer
    took = (
        f"after {result.seconds - result.found_after:.1f} s and "
        f"{result.shrink_attempts} attempt{'s' * (result.shrink_attempts != 1)}"
    )
    kept = "the reproducer holds the shortest failing run found"
    budget = "--shrink-time" if shrink_seconds else "--time"
    ended = {
        "done": f"shrunk {took}: nothing shorter fails the same way",
        "off": "not shrunk",
        "budget": f"shrinking cut off by the {budget} budget {took}: {kept}; "
        "give shrinking more time with --shrink-time SECONDS",
        "attempts": f"shrinking cut off {took}: {kept}",
        "interrupted": f"shrinking was interrupted (Ctrl-C) {took}: {kept}",
    }[result.shrinking]
    broke = grouped_lines(best.violations, verbose) if best and best.violations else []
    whose = f" {result.attribution.line()}" if result.attribution else ""
    lines = [
        f"VIOLATION{whose} after {result.found_after:.1f} s in a run of {result.first_steps} "
        f"steps; {ended}",
        *(broke or [result.failure]),
        *changed_rules_lines(result),
        *base_finding_lines(result),
    ]
    if best is None:
        return [*lines, "no reproducer: the run broke before its world was built"]
    return [
        *lines,
        f"steps ({len(best.steps)}):",
        *(f"  {index:3d}  {json.dumps(step.to_json())}" for index, step in enumerate(best.steps)),
        f"reproducer: {path}  (replay with: simkit replay {path})",
    ]


SHOWN = 3  # never-reached behaviours named per group (the rest are counted)


def coverage_lines(coverage: Coverage) -> list[str]:
    """Behaviours reached K/N per kind (protocol paths, faults, hostile messages), then
    what was never reached: the paths worth a look named per group, the rest only
    counted. One screen; the whole list is in ``--json`` and the reports."""
    missing = coverage.missing()
    total: Counter[str] = Counter(KINDS[b.group] for b in coverage.catalogue)
    unreached = Counter(KINDS[b.group] for b in missing)
    kinds = ", ".join(f"{k} {n - unreached[k]}/{n}" for k, n in total.items())
    lines = [f"behaviours reached {len(coverage.reached)}/{len(coverage.catalogue)}: {kinds}"]
    if not missing:
        return lines + situation_lines(coverage)
    look = [b for b in missing if worth_a_look(b)]
    groups: dict[str, list[str]] = {}
    for behaviour in look:
        groups.setdefault(behaviour.group, []).append(behaviour.name)
    lines.append(f"never reached, worth a look: {len(look) or 'none'}" + (":" if look else ""))
    for group, names in groups.items():
        more = f", and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
        lines.append(f"  {group} ({len(names)}): {', '.join(names[:SHOWN])}{more}")
    rest = Counter(b.group for b in missing if not worth_a_look(b) and b.group in SELDOM)
    if rest:
        counted = ", ".join(f"{n} {SELDOM[g]}" for g, n in rest.items())
        lines.append(f"never reached, seldom a concern: {counted} (all of them: --json)")
    return lines + situation_lines(coverage)


SELDOM = {
    "relay answers": "refusals every route shares (401, 403, 429, ...)",
    "hostile messages": "hostile messages (each one draw in 242: hours reach most)",
}


def situation_lines(coverage: Coverage) -> list[str]:
    """How many of the rare situations reached their floor (per 1,000 worlds), and the
    rarest ones by name (docs/fuzzing.md, "Situations")."""
    if not coverage.worlds:
        return []
    rates = coverage.situations()
    low = sorted((rate, name) for name, rate in rates.items() if rate < FLOOR)
    line = (
        f"situations at or above {FLOOR:g} per 1,000 worlds: {len(rates) - len(low)}/"
        f"{len(rates)} over {coverage.worlds:,} worlds"
    )
    if not low:
        return [line]
    shown = [f"{name.removeprefix('situation ')} {rate:.1f}" for rate, name in low[:SHOWN]]
    more = f", and {len(low) - SHOWN} more" if len(low) > SHOWN else ""
    return [f"{line}; below: {', '.join(shown)}{more}"]
