"""``simkit mutate``: operator mutants of the files a user names, drawn at random with a
seed, fuzzed like ``campaign --mutants`` and scored (docs/fuzzing.md, "Mutation score").

The files are simkit's own (``simkit/client``: under the installed package) or the
user's protocol code (any other path, under the folder its modules are imported from,
the current one); the mutated copy of a user file is put first on the import path of
the mutant's process, so a ``--variant`` defined there runs mutated.
"""

import difflib
from pathlib import Path

import attrs

import simkit
from simkit.campaign.mutation import Score
from simkit.campaign.operators import mutants_of, sample
from simkit.errors import InputError
from simkit.fuzz.mutants import Mutant

DEFAULT_PATHS = ("simkit/client", "simkit/relay", "simkit/protocol")
PACKAGE = Path(simkit.__file__).parent


class MutatePathError(InputError):
    """A path to mutate is missing, holds no Python file, or is outside the current folder."""


@attrs.frozen
class Source:
    """A file to mutate: its path as mutants name it, under ``root`` ("": simkit's)."""

    name: str
    root: str
    path: Path

    @property
    def shown(self) -> str:
        return f"simkit/{self.name}" if not self.root else self.name


def sources(paths: tuple[str, ...], cwd: Path) -> list[Source]:
    """The Python files under ``paths`` (default: simkit's client, relay and protocol),
    sorted, so that one seed draws the same mutants on every machine."""
    out = []
    for given in paths or DEFAULT_PATHS:
        out += _files(given, cwd)
    return sorted(set(out), key=lambda s: (s.root, s.name))


def _files(given: str, cwd: Path) -> list[Source]:
    inside = Path(given).parts[1:] if Path(given).parts[:1] == ("simkit",) else None
    if inside is not None and (PACKAGE.joinpath(*inside)).exists():
        base, root, where = PACKAGE, "", PACKAGE.joinpath(*inside)
    else:
        where = (cwd / given).resolve()
        base, root = cwd.resolve(), str(cwd.resolve())
        if not where.exists():
            raise MutatePathError(f"{given}: no such file or folder")
        if not where.is_relative_to(base):
            raise MutatePathError(
                f"{given}: not under the current folder; run simkit mutate from the folder "
                "your protocol modules are imported from"
            )
    files = sorted(where.rglob("*.py")) if where.is_dir() else [where]
    files = [f for f in files if "__pycache__" not in f.parts and f.suffix == ".py"]
    if not files:
        raise MutatePathError(f"{given}: no Python file to mutate")
    return [Source(f.relative_to(base).as_posix(), root, f) for f in files]


def draw(files: list[Source], count: int, seed: int) -> list[Mutant]:
    """``count`` operator mutants over ``files``, drawn with ``seed``."""
    every, texts = [], {}
    for source in files:
        texts[source.name] = source.path.read_text(encoding="utf-8")
        every += mutants_of(source.path, source.name, source.root)
    return sample(every, count, seed, texts)


def diff(mutant: Mutant) -> str:
    """The mutant's change as a unified diff of the lines it touches."""
    path = Path(mutant.root) / mutant.path if mutant.root else PACKAGE / mutant.path
    before = path.read_text(encoding="utf-8")
    shown = mutant.path if mutant.root else f"simkit/{mutant.path}"
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), mutant.patched(before).splitlines(keepends=True),
        f"a/{shown}", f"b/{shown}", n=0,
    )  # fmt: skip
    return "".join(lines)


def by_operator(mutants: list[Mutant], table: list[Score]) -> dict[str, list[int]]:
    """Per operator: [killed, drawn]."""
    out: dict[str, list[int]] = {}
    for mutant, score in zip(mutants, table, strict=True):
        row = out.setdefault(mutant.rule.split(":")[0], [0, 0])
        row[0] += score.verdict == "killed"
        row[1] += 1
    return dict(sorted(out.items()))


VERDICTS = ("killed", "timed out", "crashed", "survived", "honest-fails", "lost")


def verdict_counts(table: list[Score]) -> dict[str, int]:
    """How many mutants got each verdict, in ``VERDICTS``' order (those with none left out)."""
    counts = {verdict: sum(s.verdict == verdict for s in table) for verdict in VERDICTS}
    return {verdict: n for verdict, n in counts.items() if n}


def survivors(mutants: list[Mutant], table: list[Score]) -> list[dict]:
    """Each mutant not killed: its verdict, file, line, operator and diff (and, for one
    that timed out or crashed, why)."""
    out = []
    for mutant, score in zip(mutants, table, strict=True):
        if score.verdict == "killed":
            continue
        where, _, operator = mutant.name.partition(" ")
        out.append(
            {
                "mutant": mutant.name, "verdict": score.verdict,
                "file": mutant.path if mutant.root else f"simkit/{mutant.path}",
                "line": int(where.rpartition(":")[2]), "operator": operator,
                "examples": score.examples, "diff": diff(mutant), "why": score.why,
            }
        )  # fmt: skip
    return out


def lines(mutants: list[Mutant], table: list[Score], seed: int) -> list[str]:
    """The score, per operator, and each survivor with its diff."""
    killed = sum(s.verdict == "killed" for s in table)
    counts = ", ".join(f"{n} {verdict}" for verdict, n in verdict_counts(table).items())
    out = [f"mutation score: {killed}/{len(table)} operator mutants killed (seed {seed}): {counts}"]
    for operator, (k, n) in by_operator(mutants, table).items():
        out.append(f"  {operator}: {k}/{n}")
    for survivor in survivors(mutants, table):
        out.append(
            f"{survivor['verdict']}: {survivor['file']}:{survivor['line']} "
            f"({survivor['operator']}, {survivor['examples']:,} examples)"
        )
        if survivor["why"]:
            out.append(f"    {survivor['why'].splitlines()[0]}")
        out += ["    " + line for line in survivor["diff"].splitlines()[2:]]
    return out


def to_json(
    mutants: list[Mutant], table: list[Score], seed: int, seconds: float, complete: bool = True
) -> dict:
    """The score as ``--json`` writes it (``complete`` False: written as verdicts came in,
    the mutants still running or never run listed as ``lost`` for now)."""
    killed = sum(s.verdict == "killed" for s in table)
    return {
        "seed": seed,
        "seconds_per_mutant": seconds,
        "complete": complete,
        "killed": killed,
        "verdicts": verdict_counts(table),
        "mutants": len(table),
        "score": killed / len(table) if table else None,
        "by_operator": {
            k: {"killed": v[0], "drawn": v[1]} for k, v in by_operator(mutants, table).items()
        },
        "survivors": survivors(mutants, table),
        "scores": [s.to_json() for s in table],
    }
