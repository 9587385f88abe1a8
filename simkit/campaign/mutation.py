"""Mutation analysis: how strong the harness is, measured by the broken protocols it
catches. Each mutant (a protocol variant, or a source mutant: one line of simkit
changed, ``simkit.fuzz.mutants``) is fuzzed for the same budget as one chunk of a
campaign; one the fuzzer breaks an invariant of is killed, one it does not
survives. The score is the share killed; a survivor is either a gap in the
invariants or the state machines, or a mutant that changes nothing observable.
"""

import contextlib
import importlib
import sys
from pathlib import Path

import attrs

from simkit.errors import InputError
from simkit.fuzz.mutants import Mutant
from simkit.sim.variant import Variant


class MutantsError(InputError):
    """``--mutants MODULE:NAME`` does not name a list of Variants or of Mutants."""


def load_mutants(ref: str) -> tuple[str | Mutant, ...]:
    """The mutants ``ref`` names: a list of Variants, each as the ``module:name`` it is
    bound to in that module (reproducers name their variant so), or of Mutants."""
    where = f"--mutants {ref}"
    module_name, sep, name = ref.rpartition(":")
    if not sep or not module_name or not name.isidentifier():
        raise MutantsError(f"{where}: expected MODULE:NAME (NAME: a list of Variants or Mutants)")
    module = _import(module_name, where)
    found = getattr(module, name, None)
    if not isinstance(found, list | tuple) or not found:
        kind = "nothing" if found is None else f"a {type(found).__name__}"
        raise MutantsError(f"{where}: {name} in {module_name} is {kind}, not a list of mutants")
    if all(isinstance(m, Mutant) for m in found):
        return tuple(found)
    if not all(isinstance(v, Variant) for v in found):
        raise MutantsError(f"{where}: {name} mixes kinds; list Variants or Mutants, not both")
    names = {id(v): k for k, v in reversed(vars(module).items()) if isinstance(v, Variant)}
    unbound = [v.name for v in found if id(v) not in names]
    if unbound:
        raise MutantsError(
            f"{where}: bind each Variant to a name in {module_name} (its reproducers name "
            f"it so); unbound: {', '.join(unbound)}"
        )
    return tuple(f"{module_name}:{names[id(v)]}" for v in found)


def _import(module_name: str, where: str):
    """Import from the current directory first, as ``--variant`` does."""
    sys.path.insert(0, str(Path.cwd()))
    try:
        importlib.invalidate_caches()
        return importlib.import_module(module_name)
    except ImportError as exc:
        raise MutantsError(f"{where}: cannot import {module_name}: {exc}") from None
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(Path.cwd()))


@attrs.frozen
class Score:
    """One mutant's verdict: killed (by which invariant, how fast, shrunk to how many
    steps), survived (after how much fuzzing), lost (its workers kept dying), ``timed
    out`` (its process ran far past its budget: a step that never returns) or
    ``crashed`` (its process died without an outcome), or ``honest-fails``: the run
    that failed fails on the honest code too (a fault of the stack, which kills no
    mutant; its reproducer is in the findings)."""

    name: str
    kind: str  # "variant" | "source"
    what: str  # the variant ref, or the spec rule the source mutant breaks
    verdict: str  # "killed" | "survived" | "lost" | "timed out" | "crashed" | "honest-fails"
    invariant: str | None = None
    found_after: float | None = None
    examples: int = 0
    steps: int = 0
    first_steps: int | None = None
    shrunk_steps: int | None = None
    shrinking: str | None = None
    why: str | None = None  # what stopped a mutant that timed out or crashed

    def to_json(self) -> dict:
        return attrs.asdict(self)


def scores(mutants: tuple[str | Mutant, ...], outcomes: list[dict]) -> list[Score]:
    """Each mutant's score, in the order the mutants were listed."""
    by_index = {o["index"]: o for o in outcomes}
    out = []
    for index, mutant in enumerate(mutants):
        source = isinstance(mutant, Mutant)
        name, what = (mutant.name, mutant.rule) if source else (mutant.rpartition(":")[2], mutant)
        kind = "source" if source else "variant"
        outcome = by_index.get(index)
        if outcome is None:
            out.append(Score(name, kind, what, "lost"))
            continue
        counts = {"examples": outcome["examples"], "steps": outcome["steps"]}
        if outcome.get("ended") in ("timed out", "crashed"):
            out.append(Score(name, kind, what, outcome["ended"], why=outcome.get("why"), **counts))
            continue
        if outcome["failure"] is None:
            out.append(Score(name, kind, what, "survived", **counts))
            continue
        repro = outcome["reproducer"]
        violations = repro["violations"] if repro else ()
        out.append(
            Score(
                name, kind, what, "honest-fails" if outcome.get("honest_fails") else "killed",
                invariant=violations[0]["invariant"] if violations else "crash",
                found_after=outcome["found_after"], first_steps=outcome["first_steps"],
                shrunk_steps=len(repro["steps"]) if repro else None,
                shrinking=outcome["shrinking"], **counts,
            )
        )  # fmt: skip
    return out
