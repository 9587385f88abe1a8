"""Conformance results as text (``simkit conform``): functions that return lines and
print nothing, so the layout lives beside ``Result``."""

from simkit.wire.conform import Result


def check_lines(result: Result) -> list[str]:
    """One row per check: outcome, the spec line it tests, its area and name; a
    failure's or skip's reason indented below."""
    check = result.check
    row = f"{result.outcome.upper():<4}  {check.spec:<9} {check.area:<12} {check.name}"
    return [row, f"        {result.detail}"] if result.detail else [row]


def totals_line(url: str, results: list[Result]) -> str:
    """How many checks passed, failed and were skipped against ``url``."""
    counts = {o: sum(r.outcome == o for r in results) for o in ("pass", "fail", "skip")}
    return (
        f"{url}: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped "
        f"of {len(results)} checks (spec lines: relay-spec.md)"
    )
