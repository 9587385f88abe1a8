"""Source mutants: realistic one- or two-line slips, each breaking one rule of the spec.

Each is the kind of change a protocol edit introduces (an off-by-one, ``>`` for
``>=``, a forgotten check, the wrong field, a unit read wrongly, a missed durable
commit), applied to a copy of ``simkit`` by ``simkit.fuzz.mutants``. ``rule`` quotes
the spec (relay-spec.md) or, where the spec leaves the decision open, docs/.
The harness should catch each one: ``simkit campaign --mutants
tests.fuzz.mutants:ALL --time 60`` measures whether and how fast ``simkit fuzz`` does
(docs/fuzzing.md, "Mutants": it misses four of the conduct set),
``tests/fuzz/test_mutants_caught.py`` keeps a seeded check of those it catches, and
``check_table`` measures ``simkit check`` on them (docs/checking.md, "Mutants").

The variants in ``tests/fuzz/variants.py`` cover six more rules through override
points; these reach the lines no override point isolates. One module per set, in the
order they were written: ``relay``, ``client``, ``clauses`` (issue 29), ``compat``
(Versioning rule 3) and ``conduct`` (issue 48: what a device says, when it acts, what it
excuses after a partial read).
"""

import subprocess
from pathlib import Path

from simkit.fuzz.mutants import Mutant, run_mutated
from tests.fuzz.mutants.clauses import CLIENT_CLAUSES
from tests.fuzz.mutants.client import CLIENT
from tests.fuzz.mutants.compat import COMPAT, EQUIVALENT
from tests.fuzz.mutants.conduct import ACTS, CONDUCT, EXCUSES, SAYS
from tests.fuzz.mutants.relay import RELAY

__all__ = [
    "ACTS",
    "ALL",
    "BY_NAME",
    "CLIENT",
    "CLIENT_ALL",
    "CLIENT_CLAUSES",
    "COMPAT",
    "CONDUCT",
    "EQUIVALENT",
    "EXCUSES",
    "RELAY",
    "SAYS",
    "check_mutant",
    "collect",
    "fuzz_mutant",
]


def fuzz_mutant(
    mutant: Mutant, into: Path, *, seed: int, seconds: float, timeout: float, workers: int = 1
) -> subprocess.CompletedProcess:
    """``simkit fuzz --time SECONDS --seed SEED --shrink-time 0 --workers N`` on a copy of
    simkit with ``mutant`` applied (reproducer in ``into/repro.json``): the search alone."""
    args = ["fuzz", "--time", str(seconds), "--seed", str(seed), "--shrink-time", "0"]
    args += ["--workers", str(workers)]
    return run_mutated(mutant, into, [*args, "--out", str(into / "repro.json")], timeout)


def check_mutant(
    mutant: Mutant, into: Path, *, depth: int, timeout: float, workers: int = 1,
    seconds: float | None = None, scope: str | None = None,
) -> subprocess.CompletedProcess:  # fmt: skip
    """``simkit check --depth K --workers N`` (default scope) on a copy of simkit with
    ``mutant`` applied; reproducer in ``into/repro.json``, figures in ``into/check.json``."""
    args = ["check", "--depth", str(depth), "--workers", str(workers)]
    args += [] if scope is None else ["--scope", scope]
    args += ["--out", str(into / "repro.json"), "--json", str(into / "check.json")]
    args += [] if seconds is None else ["--time", str(seconds)]
    return run_mutated(mutant, into, args, timeout)


CLIENT_ALL = CLIENT + CLIENT_CLAUSES
ALL = RELAY + CLIENT_ALL + COMPAT + CONDUCT
BY_NAME = {mutant.name: mutant for mutant in ALL}


FINDINGS = Path(__file__).parent.parent / "mutant_findings"


def collect(report: Path, into: Path = FINDINGS) -> dict[str, str]:
    """Keep, per mutant the campaign scored killed (its ``--report`` folder's
    campaign.json: a run that failed the honest code too scores ``honest-fails``), the
    shortest reproducer it found as ``into/NAME.json``, the seeded check of
    tests/fuzz/test_mutants_caught.py. What was done, per mutant."""
    import json

    from simkit.fuzz.reproducer import Reproducer

    scores = json.loads((report / "campaign.json").read_text())["mutation"]["scores"]
    done = {}
    for score in scores:
        name = score["name"]
        if score["verdict"] != "killed":
            done[name] = f"left out: {score['verdict']}"
            continue
        paths = (report / "findings").glob(f"{name}-*.json")  # no name prefixes another
        best = min(paths, key=lambda p: len(Reproducer.load(p).steps))
        (into / f"{name}.json").write_text(best.read_text(encoding="utf-8"), encoding="utf-8")
        done[name] = f"kept {best.name}"
    return done
