"""Known findings: the reproducers of past campaigns' findings, replayed before the
next ``simkit fuzz`` or ``simkit campaign`` searches, so a failure found once is
tried first every time after (docs/campaigns.md, "Findings come first next time").

Hypothesis keeps failing examples in its example database (``.hypothesis/``) and
replays them first; but a seeded run, which is what makes a fuzz session
repeatable, uses no database (``hypothesis.seed`` sets ``database=None``), and a
database entry is a choice sequence that a change to the state machines turns
into a different run. A reproducer is the failure itself (world and steps), replays
anywhere, and is what a campaign's workers send back. So the known findings are a
folder of reproducer files, kept inside ``.hypothesis/`` where a CI cache of the
example database carries them too; each replays with ``simkit replay FILE``.
"""

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import attrs

from simkit.errors import describe
from simkit.fuzz.reproducer import Reproducer, ReproducerError, replay
from simkit.sim.variants import ref_resolved_from

KNOWN = Path(".hypothesis") / "simkit-findings"
_VOLATILE = re.compile(r"[\w:+/=.-]*\d[\w:+/=.-]*")


def shape(text: str) -> str:
    """A failure's message with what changes from run to run blanked out (record IDs,
    revs, seqs, device names: every token holding a digit)."""
    return _VOLATILE.sub("#", text.splitlines()[0] if text else "")


def matching(folder: str | Path, variant_ref: str | None, violations) -> Path | None:
    """The known finding of ``variant_ref`` whose first violation has the same invariant
    and shape as ``violations``' first, if one was recorded (read, not replayed)."""
    if not violations or not Path(folder).is_dir():
        return None
    wanted = (violations[0]["invariant"], shape(violations[0]["detail"]))
    for path in sorted(Path(folder).glob("*.json")):
        with contextlib.suppress(ReproducerError):
            repro = Reproducer.load(path)
            first = repro.violations[0] if repro.violations else None
            if (
                repro.variant == variant_ref
                and first is not None
                and wanted == (first["invariant"], shape(first["detail"]))
            ):
                return path
    return None


@attrs.frozen
class Known:
    """A known finding, replayed: ``failure`` says what still breaks, None if nothing."""

    path: Path
    reproducer: Reproducer
    failure: str | None
    violations: tuple[dict, ...] = ()


def replayed(folder: str | Path, variant_ref: str | None) -> Iterator[Known]:
    """Replay, in file-name order, each known finding of the variant ``variant_ref``
    (None: the honest stack); files that are not reproducers are skipped."""
    wanted = variant_ref and ref_resolved_from(variant_ref, Path.cwd())
    for path in sorted(Path(folder).glob("*.json")):
        with contextlib.suppress(ReproducerError):
            repro = Reproducer.load(path)
            if repro.variant == wanted:
                yield _replay(path, repro)


def still_failing(folder: str | Path, variant_ref: str | None) -> tuple[Known | None, int]:
    """The first known finding of ``variant_ref`` that still fails, and how many were
    replayed to find it (all of them when none fails)."""
    count = 0
    for known in replayed(folder, variant_ref):
        count += 1
        if known.failure is not None:
            return known, count
    return None, count


def add(folder: str | Path, repro: Reproducer, stem: str) -> Path:
    """Keep ``repro`` as the known finding ``stem`` (replacing a longer one of that name)."""
    path = Path(folder) / f"{stem}.json"
    with contextlib.suppress(ReproducerError):
        if len(Reproducer.load(path).steps) <= len(repro.steps):
            return path
    path.parent.mkdir(parents=True, exist_ok=True)
    repro.write(path)
    return path


def _replay(path: Path, repro: Reproducer) -> Known:
    try:
        result = replay(repro)
    except Exception as exc:  # the run crashes the world again: it still fails
        return Known(path, repro, describe(exc))
    if not result.violations:
        return Known(path, repro, None)
    violations = tuple(v.to_json() for v in result.violations)
    return Known(path, repro, str(result.violations[0]), violations)
