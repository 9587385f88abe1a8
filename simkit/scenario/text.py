"""Scenario results as text (``simkit list``, ``simkit run``): functions that return
lines and print nothing, so the wording lives beside ``ScenarioResult`` and the
command line only writes it."""

from simkit.fuzz.attribution import PRESENT
from simkit.scenario.load import Scenario
from simkit.scenario.promises import HELD
from simkit.scenario.run import ScenarioOutcome


def library_lines(scenarios: list[Scenario]) -> list[str]:
    """One line per scenario: its name and description, in aligned columns."""
    width = max(len(s.name) for s in scenarios)
    return [f"{scenario.name:<{width}}  {scenario.description}" for scenario in scenarios]


def table(results: list[ScenarioOutcome]) -> list[str]:
    """A verdict per scenario, what failed under it and its trace hash, then the
    totals. Invariants that did not run are counted as not checked, never as held."""
    width = max(len(r.name) for r in results)
    lines = []
    for result in results:
        failed = [c for c in result.expectations if not c.passed]
        checked = [i for i in result.invariants if i.checked]
        broken = [i for i in checked if i.violations]
        verdict = "NONE" if result.no_verdict else "PASS" if result.passed else "FAIL"
        if result.attribution == PRESENT:
            verdict = "BASE"
        met = sum(c.passed for c in result.expectations)
        unchecked = len(result.invariants) - len(checked)
        held = sum(p.verdict == HELD for p in result.promises)
        lines.append(
            f"{verdict}  {result.name:<{width}}  seed {result.seed}  "
            f"{met}/{len(result.expectations)} expectations  "
            f"{len(checked) - len(broken)}/{len(checked)} invariants held"
            + (f", {unchecked} not checked" if unchecked else "")
            + (f"  {held}/{len(result.promises)} promises held" if result.promises else "")
        )
        if result.no_verdict:
            lines.append(f"        {result.no_verdict}")
        if result.attribution:
            lines.append(f"        {result.attribution}: the same scenario on the base "
                         + ("fails these checks too" if result.attribution == PRESENT
                            else "holds them"))  # fmt: skip
        lines += [f"        {p.line()}" for p in result.promises if p.verdict != HELD]
        for check in failed:
            lines.append(f"        expected {check.name}: {check.detail or 'did not happen'}")
        for inv in broken:
            more = len(inv.violations) - 1
            lines.append(f"        {inv.violations[0]}" + (f" (+{more})" if more else ""))
        lines.append(f"      trace-hash: {result.trace_hash}")
    passed = sum(r.passed and not r.no_verdict for r in results)
    none = sum(bool(r.no_verdict) for r in results)
    base = sum(r.attribution == PRESENT for r in results)
    failed = len(results) - passed - none - base
    lines.append(
        f"{passed} passed, {failed} failed"
        + (f", {base} failing on the base too (present without the change)" if base else "")
        + (f", {none} no verdict" if none else "")
    )
    return lines
