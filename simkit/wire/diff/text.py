"""A differential fuzzing run as text (``simkit diff``): functions that return lines
and print nothing, so the wording lives beside ``DiffResult``."""

from simkit.wire.diff.run import DiffResult


def progress_line(result: DiffResult) -> str | None:
    """The status line while searching, then while shrinking; ``None`` between the
    first divergence and its first reproducer."""
    if result.found_after is None:
        return f"{result.seconds:6.1f} s  {result.examples} examples  {result.requests} requests"
    if result.reproducer is None:
        return None
    return (
        f"shrinking: {len(result.reproducer.requests)} requests left, "
        f"{result.shrink_attempts} attempts"
    )


def result_lines(result: DiffResult, target: str, cohorts: int, path: str) -> list[str]:
    """What the run spent and how it ended; for a divergence, the shortest run's
    requests, the spec rule and the differences, and how to replay it against
    ``target`` (a URL)."""
    budget = (
        f"{result.examples} examples, {result.requests} requests in {result.seconds:.1f} s, "
        f"{result.cohorts_used} of {cohorts} cohorts"
    )
    best = result.reproducer
    if best is None:
        ended = "the cohorts ran out" if result.stopped == "cohorts" else "the budget ran out"
        return [f"no divergence ({ended}): {budget}"]
    how = {
        "done": f"shrunk in {result.shrink_attempts} replays",
        "budget": f"shrinking cut off by --time after {result.shrink_attempts} replays",
        "cohorts": f"shrinking cut off: the cohorts ran out after {result.shrink_attempts} replays",
        "interrupted": "shrinking interrupted (Ctrl-C)",
        "unreachable": f"the relay stopped answering: {result.unreachable}",
    }[result.stopped]
    lines = [
        f"DIVERGENCE after {result.found_after:.1f} s in an example of {result.first_requests} "
        f"requests ({budget}); {how}",
        f"requests ({len(best.requests)}), answered alike until the last:",
    ]
    for index, (caller, request) in enumerate(zip(best.callers, best.requests, strict=True)):
        query = (
            "?" + "&".join(f"{k}={v}" for k, v in request.query.items()) if request.query else ""
        )
        lines.append(f"  {index:3d}  {request.method} {request.path}{query}  as {caller or '-'}")
    return [
        *lines,
        f"{best.rule}:",
        *_indented(best.found),
        f"reproducer: {path}  (replay on a relay with an empty store: "
        f"simkit diff {target} --replay {path})",
    ]


def replay_lines(target: str, index: int, found: list[str]) -> list[str]:
    """A replayed reproducer: the first request answered differently, and how."""
    if not found:
        return [f"no divergence: every answer of {target} matches the reference relay"]
    return [f"divergence at request {index}:", *_indented(found)]


def _indented(found) -> list[str]:
    return [f"  {line}" for line in found]
