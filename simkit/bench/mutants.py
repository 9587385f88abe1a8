"""Time to the first violation over a list of source mutants, with 1 worker and with
N (docs/lab/performance.md, round 9): ``simkit fuzz --time S --seed 1 --shrink-time 0
--workers W`` on a mutated copy of simkit for each mutant, one run at a time (so a run
has the machine to itself), W = 1 then N; the median and 90th percentile of the time to
the first violation (a mutant not killed counts as the whole budget), the mutants
killed and killed per minute of fuzzing; and the ratio of N workers to one as measured,
over the mutants either killed, and against perfect scaling (``ratios``, round 11).

Not part of ``simkit bench all`` (it takes most of an hour):
``python -m simkit.bench.mutants tests.fuzz.mutants:ALL [SECONDS] [WORKERS] [OUT.json]``.
"""

import json
import statistics
import sys
import tempfile
from pathlib import Path

from simkit.campaign.cluster import cores
from simkit.campaign.mutation import load_mutants
from simkit.fuzz.mutants import Mutant, run_mutated


def time_to_violation(mutant: Mutant, seconds: float, workers: int, seed: int = 1) -> dict:
    """One fuzz run of ``mutant``: the seconds until its first violation (None: none)."""
    with tempfile.TemporaryDirectory(prefix="simkit-mutant-") as tmp:
        out = Path(tmp) / "run.json"
        args = ["fuzz", "--time", str(seconds), "--seed", str(seed), "--shrink-time", "0"]
        args += ["--workers", str(workers), "--json", str(out), "--out", str(Path(tmp) / "r.json")]
        done = run_mutated(mutant, Path(tmp), args, 4 * seconds + 120)
        data = json.loads(out.read_text()) if out.exists() else None
    finding = data and data["finding"]
    return {
        "mutant": mutant.name,
        "exit": done.returncode,
        "found_after": finding["found_after"] if finding else None,
        "examples": data and data["examples"],
    }


def summary(runs: list[dict], seconds: float) -> dict:
    """Median and 90th percentile of the time to a violation (unkilled: the budget)."""
    times = sorted(r["found_after"] if r["found_after"] is not None else seconds for r in runs)
    killed = sum(r["found_after"] is not None for r in runs)
    return {
        "mutants": len(runs),
        "killed": killed,
        "median_s": statistics.median(times),
        "p90_s": times[min(len(times) - 1, int(0.9 * len(times)))],
        "fuzzing_minutes": sum(times) / 60,
        "killed_per_minute": killed / (sum(times) / 60),
    }


def ratios(one: list[dict], many: list[dict], seconds: float, workers: int) -> dict:
    """Killed per minute with ``workers`` over killed per minute with one, three ways:
    as measured; over the mutants either run killed (a mutant neither kills costs both
    the whole budget and says nothing of the workers); and what ``workers`` would give
    if each mutant one worker kills were killed in 1/workers of its time, the others
    as measured (perfect scaling), with the measured ratio's share of it."""
    both = [(a, b) for a, b in zip(one, many, strict=True)
            if a["found_after"] is not None or b["found_after"] is not None]  # fmt: skip

    def per_minute(runs: list[dict]) -> float:
        return summary(runs, seconds)["killed_per_minute"]

    ideal = [
        {**b, "found_after": a["found_after"] / workers}
        if a["found_after"] is not None else b
        for a, b in zip(one, many, strict=True)
    ]  # fmt: skip
    measured = per_minute(many) / per_minute(one)
    perfect = per_minute(ideal) / per_minute(one)
    return {
        "ratio_killed_per_minute": measured,
        "ratio_over_mutants_found": per_minute([b for _, b in both])
        / per_minute([a for a, _ in both]),
        "ratio_with_perfect_scaling": perfect,
        "share_of_perfect_scaling": measured / perfect,
    }


def main(ref: str, seconds: float = 60.0, workers: int = 0, out: str | None = None) -> dict:
    mutants = [m for m in load_mutants(ref) if isinstance(m, Mutant)]
    many = workers or cores()
    report = {"seconds": seconds}
    for count in (1, many):
        runs = []
        for mutant in mutants:
            runs.append(time_to_violation(mutant, seconds, count))
            print(count, json.dumps(runs[-1]), file=sys.stderr, flush=True)
        report[f"workers_{count}"] = {"summary": summary(runs, seconds), "runs": runs}
    report.update(ratios(report["workers_1"]["runs"], report[f"workers_{many}"]["runs"],
                         seconds, many))  # fmt: skip
    if out:
        Path(out).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report


if __name__ == "__main__":
    args = sys.argv[1:]
    result = main(args[0], *(float(a) for a in args[1:2]), *(int(a) for a in args[2:3]),
                  *args[3:4])  # fmt: skip
    print(json.dumps({k: v["summary"] if isinstance(v, dict) else v for k, v in result.items()},
                     indent=2))  # fmt: skip
