"""``python -m tests.fuzz.mutants.reach DEPTH OUT_DIR [SET]``: which mutants' sites the
honest ``simkit check --depth DEPTH --workers 2`` ever runs, and from which sequences.

Why it settles what a check of a mutant can find: a mutant changes only the lines of its
site, and one seed decides a world, so a run of the mutated code is the honest run, step
for step and byte for byte, until one of those lines runs. If no sequence of the honest
check (set-up, every judged sequence and its quiescence) runs a line of the site, the
mutated check explores the same sequences, reaches the same states and judges them the
same: zero violations, as the honest check found (docs/checking.md, "Mutants"). A site
that is reached must be checked for real (``check_table``).

A site is the lines ``old`` spans that hold code; a site with none (a comment, the part
of a statement no instruction is attributed to) counts as reached: judged by running.
Lines run outside any share (the command's own process) count as reached in set-up.

Writes ``OUT_DIR/reach.json``: per mutant, ``reached``, the shortest sequence that
reaches it (``[]``: the set-up world) and how many sequences first reach it, by length;
``OUT_DIR/prefixes.json``: those sequences (``tests.fuzz.mutants.subtrees`` checks below
them).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import simkit
import tests.fuzz.mutants as sets
from simkit.fuzz.mutants import Mutant

PROBE = Path(__file__).with_name("probe.py")


def code_lines(path: Path) -> set[int]:
    """The lines of ``path`` that some instruction is attributed to."""
    found: set[int] = set()
    stack = [compile(path.read_text(encoding="utf-8"), str(path), "exec")]
    while stack:
        code = stack.pop()
        found.update(line for _, _, line in code.co_lines() if line is not None)
        stack.extend(c for c in code.co_consts if hasattr(c, "co_lines"))
    return found


def site(mutant: Mutant, package: Path) -> tuple[str, list[int]]:
    """The file (as the running code names it) and the code lines ``mutant`` changes."""
    path = package / mutant.path
    source = path.read_text(encoding="utf-8")
    start = source.index(mutant.old) if mutant.offset is None else mutant.offset
    first = source.count("\n", 0, start) + 1
    last = first + mutant.old.rstrip("\n").count("\n")
    return str(path), sorted(set(range(first, last + 1)) & code_lines(path))


def main(depth: int, out: Path, chosen: str = "ALL", scope: str | None = None) -> dict:
    mutants = [m for m in getattr(sets, chosen) if not m.root]
    package = Path(simkit.__file__).parent
    sites = [site(m, package) for m in mutants]
    out.mkdir(parents=True, exist_ok=True)
    hits = out / "hits.jsonl"
    hits.unlink(missing_ok=True)
    probe_dir = out / "probe"
    probe_dir.mkdir(exist_ok=True)
    shutil.copyfile(PROBE, probe_dir / "sitecustomize.py")
    settings = out / "settings.json"
    explore = str(package / "check" / "explore.py")
    settings.write_text(json.dumps({"sites": sites, "explore": explore, "out": str(hits)}))
    env = {**os.environ, "SIMKIT_REACH": str(settings)}
    env["PYTHONPATH"] = os.pathsep.join([str(probe_dir), env.get("PYTHONPATH", "")])
    args = ["check", "--depth", str(depth), "--workers", "2", "--json", str(out / "check.json")]
    args += [] if scope is None else ["--scope", scope]
    run = subprocess.run([sys.executable, "-m", "simkit.cli", *args], env=env, text=True,
                         capture_output=True)  # fmt: skip
    (out / "check.txt").write_text(run.stdout + run.stderr)
    return read(out, [m.name for m in mutants], {"exit": run.returncode, "depth": depth})


def read(out: Path, names: list[str], verdict: dict) -> dict:
    """``out``'s hits (the probe's lines; site indices follow ``names``) as reach.json
    and prefixes.json."""
    sites = json.loads((out / "settings.json").read_text())["sites"]
    where: dict[int, set[tuple[int, ...]]] = {}  # site -> the sequences first reaching it
    for line in (out / "hits.jsonl").read_text().splitlines():
        indices, sequence = json.loads(line)
        for index in indices:
            where.setdefault(index, set()).add(tuple(sequence or ()))
    table = {}
    for index, name in enumerate(names):
        lines, found = sites[index][1], where.get(index, set())
        by_length: dict[str, int] = {}
        for sequence in sorted(found, key=len):
            by_length[str(len(sequence))] = by_length.get(str(len(sequence)), 0) + 1
        table[name] = {
            "lines": lines,
            "reached": bool(found) or not lines,
            "shortest": min(map(len, found)) if found else (0 if not lines else None),
            "first_reached_by_length": by_length,
        }
    verdict = {**verdict, "mutants": table}
    (out / "reach.json").write_text(json.dumps(verdict, indent=1))
    prefixes = {names[index]: sorted(found) for index, found in where.items()}
    (out / "prefixes.json").write_text(json.dumps(prefixes))
    return verdict


if __name__ == "__main__":
    result = main(int(sys.argv[1]), Path(sys.argv[2]), *(sys.argv[3:4] or ["ALL"]))
    never = [name for name, row in result["mutants"].items() if not row["reached"]]
    print(f"check exit {result['exit']}; {len(never)} of {len(result['mutants'])} sites never "
          f"run: {', '.join(never)}")  # fmt: skip
