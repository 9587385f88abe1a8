"""``python -m tests.fuzz.mutants.check_table DEPTH OUT.jsonl [SET] [SECONDS]``: run
``simkit check --depth DEPTH --workers 2`` on each mutant of a set (default: ALL; or
names, comma-separated), one at a time, and append one JSON line per mutant: killed or
not, the check's seconds, the depth of the failing sequence and what broke
(docs/checking.md, "Mutants"); a check's kill keeps its reproducer beside OUT, as
OUT's stem, a dot and the mutant's name (``d3.clock-repair-on-any-rejection.json``).
DEPTH 0 runs ``simkit fuzz --time 60 --seed 1 --shrink-time 0 --workers 2`` instead,
the search it is set beside."""

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import tests.fuzz.mutants as sets
from simkit.fuzz.mutants import run_mutated
from tests.fuzz.mutants import check_mutant

FUZZ = ["fuzz", "--time", "60", "--seed", "1", "--shrink-time", "0", "--workers", "2"]


def main(depth: int, out: Path, chosen: str = "ALL", seconds: float | None = None) -> None:
    done = set()
    if out.exists():
        done = {json.loads(line)["mutant"] for line in out.read_text().splitlines() if line}
    chosen_set = getattr(sets, chosen, None)
    if chosen_set is None:
        chosen_set = [sets.BY_NAME[name] for name in chosen.split(",")]
    for mutant in chosen_set:
        if mutant.name in done:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            began = time.monotonic()
            if depth:
                run = check_mutant(mutant, Path(tmp), depth=depth, timeout=3600, workers=2,
                                   seconds=seconds)  # fmt: skip
            else:
                run = run_mutated(mutant, Path(tmp), [*FUZZ, "--json", f"{tmp}/check.json"], 600)
            wall = time.monotonic() - began
            figures, repro = Path(tmp, "check.json"), Path(tmp, "repro.json")
            data = json.loads(figures.read_text()) if figures.exists() else None
            kept = out.with_name(f"{out.stem}.{mutant.name}.json") if repro.exists() else None
            if kept:
                shutil.copyfile(repro, kept)
        if data and not depth:  # fuzz: the time to the first violation, the examples run
            found = data["finding"]
            data = {"seconds": found["found_after"] if found else data["seconds"],
                    "finding": found and {"depth": found["first_steps"], "violations": [
                        {"invariant": found["failure"].split("]")[0].strip("[")}]},
                    "completed": None, "sequences": data["examples"]}  # fmt: skip
        finding = data and data["finding"]
        broke = None
        if finding:
            broke = finding["violations"][0]["invariant"] if finding["violations"] else "crash"
        row = {
            "mutant": mutant.name, "exit": run.returncode, "killed": bool(finding),
            "seconds": data and data["seconds"], "wall": round(wall, 1),
            "depth": finding and finding["depth"], "broke": broke,
            "completed": data and data["completed"], "sequences": data and data["sequences"],
            "error": None if data else run.stderr[-400:], "reproducer": kept and str(kept),
        }  # fmt: skip
        with out.open("a") as lines:
            lines.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), Path(sys.argv[2]), *(sys.argv[3:4] or ["ALL"]),
         *(float(a) for a in sys.argv[4:5]))  # fmt: skip
