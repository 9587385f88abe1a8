"""Benchmarks: figures printed by ``simkit bench``, never asserted by tests.

Each benchmark module exposes ``run(quick: bool = False) -> list[BenchRow]``.
Runs that report peak memory go through ``isolated`` so that each figure is the
peak of one fresh process, not of whatever ran before it.
"""

import concurrent.futures
import multiprocessing
import resource
from collections.abc import Callable
from typing import Any

import attrs

from simkit.realtime import wall_clock


@attrs.frozen
class BenchRow:
    """One measured figure: ``group`` is the benchmark (crypto, relay, ...)."""

    group: str
    name: str
    value: float
    unit: str
    note: str = ""


def per_call_us(fn, *, min_seconds: float = 0.2, max_calls: int = 100_000) -> float:
    """Microseconds per call of ``fn``, repeating until ``min_seconds`` of wall time."""
    calls, start = 0, wall_clock()
    while True:
        fn()
        calls += 1
        elapsed = wall_clock() - start
        if elapsed >= min_seconds or calls >= max_calls:
            return elapsed / calls * 1e6


def peak_memory_mib() -> float:
    """This process's peak resident memory in MiB. On Linux, ``VmHWM`` of its own
    address space: ``ru_maxrss`` survives ``exec``, so a process spawned by a parent
    that once held 900 MiB reports at least that (every row after the largest world
    did, until this was found). Elsewhere ``ru_maxrss``."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _with_peak(fn: Callable[..., Any], crypto_cache: bool, args: tuple) -> tuple[Any, float]:
    from simkit.protocol.sigcache import SIGNATURES

    SIGNATURES.configure(crypto_cache)
    return fn(*args), peak_memory_mib()


def isolated(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """``fn(*args)`` in a fresh process (one core, one task), with this process's
    signature-cache setting: its result and the process's peak memory in MiB.
    ``fn`` must be a module-level function."""
    from simkit.protocol.sigcache import SIGNATURES

    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        return pool.submit(_with_peak, fn, SIGNATURES.enabled, args).result()
