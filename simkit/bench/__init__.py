"""Benchmarks: figures printed by ``simkit bench``, never asserted by tests.

Each benchmark module exposes ``run(quick: bool = False) -> list[BenchRow]``.
"""

import attrs


@attrs.frozen
class BenchRow:
    """One measured figure: ``group`` is the benchmark (crypto, relay, ...)."""

    group: str
    name: str
    value: float
    unit: str
    note: str = ""


def wall_clock() -> float:
    """Seconds on the real monotonic clock: benchmarks measure wall time on purpose."""
    import time

    return time.perf_counter()  # real-default


def per_call_us(fn, *, min_seconds: float = 0.2, max_calls: int = 100_000) -> float:
    """Microseconds per call of ``fn``, repeating until ``min_seconds`` of wall time."""
    calls, start = 0, wall_clock()
    while True:
        fn()
        calls += 1
        elapsed = wall_clock() - start
        if elapsed >= min_seconds or calls >= max_calls:
            return elapsed / calls * 1e6
