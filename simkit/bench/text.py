"""A bench run as text (``simkit bench``): a function that returns lines and prints
nothing, so the table's layout lives beside ``BenchRow``."""

from simkit.bench import BenchRow


def table(rows: list[BenchRow], cache: str, quick: bool, targets: list[str]) -> list[str]:
    """The signature-cache setting, one aligned row per figure, then each performance
    target's verdict (``simkit.bench.targets.verdicts``)."""
    width = max(len(r.name) for r in rows)
    lines = [f"signature cache: {cache}{'  (quick run)' if quick else ''}"]
    for row in rows:
        note = f"  ({row.note})" if row.note else ""
        lines.append(f"{row.group:<8} {row.name:<{width}}  {row.value:>14,.1f} {row.unit}{note}")
    if targets:
        lines += ["targets:", *(f"  {line}" for line in targets)]
    return lines
