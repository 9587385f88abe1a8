"""``python -m tests.fuzz.mutants.reach DEPTH OUT_DIR [SET]``: which mutants' sites the
honest ``simkit check --depth DEPTH --workers 2`` ever runs, and from which sequences.

Why it settles what a check of a mutant can find: a mutant changes only the lines of its
site, and one seed decides a world, so a run of the mutated code is the honest run, step
for step and byte for byte, until one of those lines runs. If no sequence of the honest
check (set-up, every judged sequence and its quiescence) runs a line of the site, the
mutated check explores the same sequences, reaches the same states and judges them the
same: zero violations, as the honest check found (docs/checking.md, "Mutants"). A site
that is reached must be checked for real (``check_table`` or ``subtrees``).

The check runs with state hashing off: a mutated check may extend a sequence the honest
one pruned (its twin state was first reached through the site, and differs under the
mutant), so ``subtrees`` needs where the site is reached in every sequence, not only the
honest check's. A site is the lines ``old`` spans that hold code, widened to its whole
function's body (not its ``def`` line, which runs at import) when the change alters what
the function is compiled to beyond those lines (a new local, a ``yield``); a site with no
code line counts as reached in set-up, and so do lines run in the command's own process
(import time).

Writes ``OUT_DIR/reach.json``: per mutant, ``reached``, the shortest sequence that
reaches it (``[]``: the set-up world) and how many sequences first reach it, by length;
``OUT_DIR/prefixes.json``: those sequences, none below another (``subtrees`` checks
below them). Refuses a run that did not complete its depth.
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


class ReachError(RuntimeError):
    """The probed check did not run to its depth, or the probe saw nothing: no verdict."""


def _codes(source: str, name: str):
    """Every code object of ``source``, each with the one that defines it (None: the
    module's)."""
    stack = [(compile(source, name, "exec"), None)]
    while stack:
        code, parent = stack.pop()
        yield code, parent
        stack.extend((c, code) for c in code.co_consts if hasattr(c, "co_lines"))


def _lines(code) -> set[int]:
    return {line for _, _, line in code.co_lines() if line is not None}


def _shape(code) -> tuple:
    """What a function is compiled to beyond its lines: its locals, cells and kind."""
    return (code.co_varnames, code.co_cellvars, code.co_freevars, code.co_flags)


def site(mutant: Mutant, package: Path) -> tuple[str, list[int]]:
    """The file (as the running code names it) and the code lines ``mutant`` changes."""
    if mutant.path == "check/explore.py":  # the probe does not trace the check's own walk
        raise ValueError(f"{mutant.name}: a site in check/explore.py cannot be probed")
    path = package / mutant.path
    source = path.read_text(encoding="utf-8")
    start = source.index(mutant.old) if mutant.offset is None else mutant.offset
    first = source.count("\n", 0, start) + 1
    last = first + mutant.old.rstrip("\n").count("\n")
    codes = list(_codes(source, str(path)))
    lines = set(range(first, last + 1)) & set().union(*(_lines(c) for c, _ in codes))
    mutated = {c.co_qualname: _shape(c) for c, _ in _codes(mutant.patched(source), str(path))}
    for code, parent in codes:  # an enclosing function the change compiles otherwise
        encloses = code.co_name != "<module>" and first in range(
            code.co_firstlineno, max(_lines(code)) + 1
        )
        if encloses and mutated.get(code.co_qualname) != _shape(code):
            lines |= _body(code, parent)
    return str(path), sorted(lines)


def _body(code, parent) -> set[int]:
    """The lines a call of ``code`` runs: not its ``def`` line and decorators, which its
    definer runs once, at import (every call runs a line of its body). A function all on
    its ``def`` line keeps that line."""
    return (_lines(code) - _lines(parent)) or _lines(code)


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
    explore = str(package / "check" / "explore.py")
    names = [m.name for m in mutants]
    setting = {"sites": sites, "explore": explore, "out": str(hits), "names": names,
               "depth": depth, "scope": scope or "default"}  # fmt: skip
    (out / "settings.json").write_text(json.dumps(setting))
    env = {**os.environ, "SIMKIT_REACH": str(out / "settings.json")}
    env["PYTHONPATH"] = os.pathsep.join([str(probe_dir), env.get("PYTHONPATH", "")])
    args = ["check", "--depth", str(depth), "--workers", "2", "--no-state-hashing"]
    args += ["--json", str(out / "check.json"), *([] if scope is None else ["--scope", scope])]
    run = subprocess.run([sys.executable, "-m", "simkit.cli", *args], env=env, text=True,
                         capture_output=True)  # fmt: skip
    (out / "check.txt").write_text(run.stdout + run.stderr)
    figures = out / "check.json"
    check = json.loads(figures.read_text()) if figures.exists() else {}
    if (
        run.returncode != 0
        or check.get("completed") != depth
        or check.get("reductions_off") != ["states"]  # world copies on: a lineage per process
    ):
        raise ReachError(f"the probed check did not hold to depth {depth}: {run.stdout[-600:]}"
                         f"{run.stderr[-600:]}")  # fmt: skip
    return read(out)


def read(out: Path) -> dict:
    """``out``'s hits (the probe's lines) as reach.json and prefixes.json."""
    setting = json.loads((out / "settings.json").read_text())
    names, sites = setting["names"], setting["sites"]
    where: dict[int, set[tuple[int, ...]]] = {}  # site -> the sequences first reaching it
    judged = False
    for line in (out / "hits.jsonl").read_text().splitlines():
        indices, sequence = json.loads(line)
        judged = judged or bool(sequence)
        for index in indices:  # None: the command's own process (import time): set-up
            where.setdefault(index, set()).add(tuple(sequence or ()))
    if not judged:
        raise ReachError("the probe saw no line run inside a sequence: is it installed?")
    table, prefixes = {}, {}
    for index, name in enumerate(names):
        lines = sites[index][1]
        found = where.get(index, set()) if lines else {()}
        found = {s for s in found if not any(s[:k] in found for k in range(len(s)))}
        by_length: dict[str, int] = {}
        for sequence in found:
            by_length[str(len(sequence))] = by_length.get(str(len(sequence)), 0) + 1
        table[name] = {
            "lines": lines,
            "reached": bool(found),
            "shortest": min(map(len, found)) if found else None,
            "first_reached_by_length": dict(sorted(by_length.items())),
        }
        if found:
            prefixes[name] = sorted(found)
    verdict = {"depth": setting["depth"], "scope": setting["scope"], "mutants": table}
    (out / "reach.json").write_text(json.dumps(verdict, indent=1))
    (out / "prefixes.json").write_text(json.dumps(prefixes))
    return verdict


if __name__ == "__main__":
    result = main(int(sys.argv[1]), Path(sys.argv[2]), *(sys.argv[3:4] or ["ALL"]))
    never = [name for name, row in result["mutants"].items() if not row["reached"]]
    print(f"{len(never)} of {len(result['mutants'])} sites never run: {', '.join(never)}")
