"""Fuzzing throughput: state-machine steps per wall second of the honest stack,
and the peak memory of the fuzzing process (a fresh one)."""

from simkit.bench import BenchRow, isolated


def fuzz_for(seconds: float) -> dict:
    from simkit.fuzz.runner import fuzz
    from simkit.sim.variant import HONEST

    result = fuzz(HONEST, seconds=seconds, seed=1, max_steps=25, shrink=False)
    return {"examples": result.examples, "steps": result.steps, "seconds": result.seconds}


def run(quick: bool = False) -> list[BenchRow]:
    result, peak = isolated(fuzz_for, 20.0 if quick else 120.0)
    note = (
        f"{result['examples']:,} examples, {result['steps']:,} steps in {result['seconds']:.0f} s"
    )
    return [
        BenchRow(
            "fuzz", "steps/s (honest machine)", result["steps"] / result["seconds"], "/s", note
        ),
        BenchRow("fuzz", "peak memory (fuzzing process)", peak, "MiB"),
    ]
