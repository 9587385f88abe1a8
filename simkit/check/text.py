"""A check as text (``simkit check``): lines only, the command prints them."""

import json

from simkit.check.search import CheckResult
from simkit.invariants import Violation


def heading(scope, depth: int, variant_name: str, on: str, reductions) -> str:
    groups = "; ".join("~".join(g) for g in scope.symmetric) or "none"
    off = reductions.off()
    return (
        f"checking {variant_name} over scope {scope.name} ({len(scope.alphabet)} letters, "
        f"world seed {scope.params.seed}, symmetric: {groups}"
        + (f", after {len(scope.prefix)} steps" if scope.prefix else "")
        + f") to depth {depth}, on {on}"
        + (f"; reductions off: {', '.join(off)}" if off else "")
    )


def verdict_lines(result: CheckResult, path: str | None) -> list[str]:
    lines = [f"{result.verdict()} ({result.seconds:.1f} s)"]
    for found in result.base_failures:
        lines.append(f"met a failure {found.attribution.line()}: kept aside, not the change's")
    if result.failure is not None:
        lines += violation_lines(result, path)
    else:
        lines.append(
            "each sequence judged after every step and at quiescence by every invariant "
            "(those that hold whatever the relay does, once it turns malicious) and both models"
        )
        lines.append(
            f"complete means: every sequence of these {len(result.scope.alphabet)} letters, in "
            "this one world and seed, up to the depth"
            + (
                ", one of each mirror image (symmetry assumed)"
                if result.scope.symmetric and result.reductions.symmetry
                else ""
            )
            + "; not other values, worlds or timings (docs/checking.md)"
        )
    lines += result.exercise.lines()
    if result.exercise.verdict and result.failure is None:
        lines.append(f"no verdict: {result.exercise.verdict}")
    return lines


def violation_lines(result: CheckResult, path: str | None) -> list[str]:
    failure, repro = result.failure, result.reproducer
    where = "at quiescence" if failure.at_quiescence else "after its last step"
    depth = len(failure.sequence)
    lines = [
        f"VIOLATION at depth {depth} (no shorter sequence fails), {where}:"
        if depth
        else "VIOLATION before any step (the scope's world as set up, or its moment):"
    ]
    if failure.error is not None:
        lines.append(f"  the world crashed: {failure.error.splitlines()[0]}")
    for data in failure.violations[:3]:
        lines.append(f"  {Violation(**data)}")
    if result.attribution is not None:
        lines.append(f"whose: {result.attribution.line()}")
    moment = len(result.scope.prefix)
    lines.append(
        "steps (from the scope's set-up world"
        + (f"; 0 to {moment - 1} are the moment it started from):" if moment else "):")
    )
    lines += [f"  {i}: {json.dumps(step.to_json())}" for i, step in enumerate(repro.steps)]
    if path:
        lines.append(f"reproducer: {path}  (replay with: simkit replay {path})")
    return lines
