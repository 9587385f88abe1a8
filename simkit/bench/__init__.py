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
