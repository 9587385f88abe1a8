"""Violations as a person reads them: grouped per invariant, the explaining one first.

A broken client can break one invariant a thousand times (every write it lost, on
every device): the line that explains them ("a1 still holds 141 queued writes") must
not be the last of 1,339. Groups come in the order their first violation was seen
(the earliest trace position: a cause comes before its consequences; at the same
position, the smaller group first: one cause, many consequences); each shows its
first few, and says how many more there are and where to read them.
"""

from collections.abc import Iterable

from simkit.invariants.base import Violation

SHOWN = 3  # violations shown per invariant unless verbose


def grouped_lines(
    violations: Iterable[Violation | dict], verbose: bool = False, indent: str = "  "
) -> list[str]:
    """Lines for ``violations`` (``Violation`` or its JSON form), grouped per invariant."""
    groups: dict[str, list[Violation]] = {}
    for item in violations:
        violation = item if isinstance(item, Violation) else Violation(**item)
        groups.setdefault(violation.invariant, []).append(violation)
    order = sorted(groups.items(), key=lambda kv: (_first_seen(kv[1]), len(kv[1]), kv[0]))
    lines = []
    for name, group in order:
        if len(order) > 1 or len(group) > 1:
            lines.append(f"{name}: {len(group)} violation{'s' * (len(group) != 1)}")
        shown = group if verbose else group[:SHOWN]
        lines.extend(f"{indent}{violation}" for violation in shown)
        if len(group) > len(shown):
            lines.append(
                f"{indent}... and {len(group) - len(shown)} more {name} violations "
                '(all of them: --verbose, or the reproducer\'s "violations")'
            )
    return lines


def _first_seen(group: list[Violation]) -> float:
    seqs = [v.trace_seq for v in group if v.trace_seq is not None]
    return min(seqs) if seqs else float("inf")
