"""``python -m tests.fuzz.mutants.subtrees REACH_DIR|after:RULE DEPTH OUT.jsonl NAMES [SCOPE]``:
whether ``simkit check --depth DEPTH`` kills each named mutant, judged only where the mutated
check can differ from the honest one.

``tests.fuzz.mutants.reach`` lists, per mutant, the sequences of the honest check that
first run a line of its site. The mutated check is the honest check until such a
sequence: everywhere else it judges the same states the same way (zero violations).
So it has a violation only in a sequence that has one of those as a prefix. This runs,
on a mutated copy, each first-reaching sequence and, from each that applies and holds,
every continuation up to DEPTH (``simkit check`` from that moment; its mirror images
and repeated states are skipped only among its own continuations, so it judges at least
what the full check would there). A mutant reached in the set-up world differs
everywhere: use ``check_table`` for it. One JSON line per mutant: killed or not, what
broke and where, the sequences judged and the seconds it took.

``after:RULE`` instead of REACH_DIR judges below the scope's letter of that rule, and
below it after every other letter: what a check whose digest missed that letter's
change never extended (F45, docs/findings.md: ``after:capability`` completes a depth-3
verdict reached before the fix)."""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import attrs

import tests.fuzz.mutants as sets
from simkit.fuzz.mutants import mutated_copy


def inside(prefixes_file: Path, depth: int, scope_file: str | None = None) -> dict:
    """In the mutated copy: judge below every first-reaching sequence."""
    from simkit.campaign.cluster import local_pool
    from simkit.check.explore import Share, explore
    from simkit.check.scope import load_scope
    from simkit.check.search import check

    scope = load_scope(scope_file)
    prefixes = sorted({tuple(p) for p in json.loads(prefixes_file.read_text())}, key=len)
    if () in prefixes:  # the set-up world differs: every sequence may
        return {"killed": None, "why": "reached in the set-up world: check it in full"}
    parents: dict[tuple[int, ...], list[int]] = {}
    for sequence in prefixes:
        parents.setdefault(sequence[:-1], []).append(sequence[-1])
    began, judged = time.monotonic(), 0

    def found(sequence, violations, error) -> dict:
        broke = violations[0]["invariant"] if violations else "crash"
        return {"killed": True, "sequence": list(sequence), "broke": broke, "error": error}

    with local_pool(2) as pool:
        moments = sorted(parents.items(), key=lambda item: (len(item[0]), item[0]))
        futures = [
            pool.submit(explore, Share(attrs.evolve(scope, prefix=scope.steps(parent)),
                                       (((), tuple(letters)),), stop_on_failure=False))
            for parent, letters in moments
        ]  # fmt: skip
        below = []
        for (parent, _), future in zip(moments, futures, strict=True):
            share = future.result()
            if share.setup_failure is not None:  # the moment itself: honest code, no verdict
                return {"killed": None, "why": f"the moment {parent} broke: {share.setup_failure}"}
            for one in share.judged:
                judged += 1
                sequence = (*parent, *one.sequence)
                if one.failed:
                    return found(sequence, one.violations, one.error) | {"judged": judged}
                if one.digest is not None and len(sequence) < depth:
                    below.append(sequence)
        for sequence in below:
            moment = attrs.evolve(scope, prefix=scope.steps(sequence))
            result = check(moment, depth - len(sequence), workers=2, pool=pool)
            judged += result.sequences
            if result.failure is not None:
                failure = result.failure
                return found((*sequence, *failure.sequence), failure.violations,
                             failure.error) | {"judged": judged}  # fmt: skip
            if result.completed < depth - len(sequence):
                return {"killed": None, "why": f"below {sequence}: {result.verdict()}"}
    return {"killed": False, "judged": judged, "first_reaching": len(prefixes),
            "seconds": round(time.monotonic() - began, 1)}  # fmt: skip


def _reached(reach_dir: Path, depth: int, names: list[str], scope: str | None) -> dict:
    """Each mutant's first-reaching sequences, as ``tests.fuzz.mutants.reach`` probed them."""
    reach = json.loads((reach_dir / "reach.json").read_text())
    if reach["depth"] < depth or reach["scope"] != (scope or "default"):
        raise ValueError(f"{reach_dir} probed depth {reach['depth']} of scope {reach['scope']}")
    unknown = [name for name in names if name not in reach["mutants"]]
    if unknown:
        raise ValueError(f"{reach_dir} did not probe {', '.join(unknown)}")
    return json.loads((reach_dir / "prefixes.json").read_text())


def _after(where: str, names: list[str], scope: str | None) -> dict | None:
    """``after:RULE``: below the scope's letter of that rule and below it after every
    other letter (F45: the sequences a digest blind to that letter never extended)."""
    if not where.startswith("after:"):
        return None
    from simkit.check.scope import load_scope

    letters = load_scope(scope).alphabet
    rule = where.removeprefix("after:")
    found = [i for i, step in enumerate(letters) if rule == step.RULE]
    if len(found) != 1:
        raise ValueError(f"{where}: the scope has {len(found)} letters of rule {rule!r}, not one")
    [letter] = found
    roots = [[letter], *([other, letter] for other in range(len(letters)) if other != letter)]
    return dict.fromkeys(names, roots)


def main(
    reach_dir: Path, depth: int, out: Path, names: list[str], scope: str | None = None
) -> list[dict]:
    rows = []
    prefixes = _after(str(reach_dir), names, scope) or _reached(reach_dir, depth, names, scope)
    for name in names:
        began = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            first = Path(tmp, "prefixes.json")
            first.write_text(json.dumps(prefixes.get(name, [])))
            root = mutated_copy(sets.BY_NAME[name], Path(tmp))
            # the mutated simkit first; ``tests`` from this checkout (not the cwd's simkit)
            path = os.pathsep.join([str(root), str(Path(sets.__file__).parents[3])])
            run = subprocess.run(
                [sys.executable, "-m", "tests.fuzz.mutants.subtrees", "--inside", str(first),
                 str(depth), *([str(Path(scope).resolve())] if scope else [])],
                env={**os.environ, "PYTHONPATH": path}, capture_output=True, text=True, cwd=tmp,
            )  # fmt: skip
        try:
            row = json.loads(run.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            row = {"killed": None, "error": run.stderr[-400:]}
        code = row.pop("code", "")
        if row.get("killed") is not None and not code.startswith(tmp):
            row = {"killed": None, "error": "judged another simkit than the mutated copy"}
        row = {"mutant": name, **row, "wall": round(time.monotonic() - began, 1)}
        with out.open("a") as lines:
            lines.write(json.dumps(row) + "\n")
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


if __name__ == "__main__":
    if sys.argv[1] == "--inside":
        import simkit

        verdict = inside(Path(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:5])
        print(json.dumps({**verdict, "code": simkit.__file__}))
    else:
        main(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4].split(","),
             *sys.argv[5:6])  # fmt: skip
