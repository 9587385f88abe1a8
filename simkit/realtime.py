"""Real time and real entropy: the one module of simkit that reads them.

Everything else is handed a clock and an entropy source (ARCHITECTURE.md,
determinism rule 1), so that a simulated run is a pure function of its seed. What
runs outside simulation takes its defaults from here: a served relay and a device on
a real network read the wall clock and the system's randomness; a fuzz budget, a
campaign and a benchmark measure wall time. ``tests/test_layers.py`` checks that no
other module of simkit reads a real clock or real randomness.
"""

import os
import time


def wall_clock() -> float:
    """Seconds on the real monotonic clock (budgets and benchmarks measure wall time)."""
    return time.perf_counter()  # real-default


def epoch_ms() -> int:
    """The real wall clock in epoch milliseconds (a served relay, a real device)."""
    return time.time_ns() // 1_000_000  # real-default


def system_bytes(n: int) -> bytes:
    """``n`` bytes from the operating system's CSPRNG (keys and nonces outside simulation)."""
    return os.urandom(n)  # real-default


def fresh_seed() -> int:
    """A new 32-bit seed for a run given none (it prints it: ``--seed`` runs it again)."""
    return int.from_bytes(system_bytes(4), "big")
