"""Whose finding it is: a failure met under a protocol change is replayed on the base
(the same world and steps with every party on the version the change starts from: the
protocol as specified, or a release's ``base``) before anyone is told of it.

- **caused by the change**: the base holds on those steps; the change is what broke.
- **present without the change**: the base fails too; the failure is the stack's, not
  the change's (named after the known finding it matches, when one does). A search keeps
  it in its own reproducer and goes on looking for the change's own.
- **the stack's**: no change was fuzzed; whatever breaks is the stack's.

ARCHITECTURE.md, "Verdicts": a finding under a change names its cause.
"""

import contextlib
from pathlib import Path

import attrs

from simkit.errors import describe
from simkit.fuzz.corpus import KNOWN, matching
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.invariants import Violation
from simkit.sim.variant import HONEST

CAUSED = "caused by the change"
PRESENT = "present without the change"
STACK = "the stack's"


@attrs.frozen
class Attribution:
    """Who a finding belongs to (``verdict``: ``CAUSED``, ``PRESENT`` or ``STACK``), the
    version it was replayed on, what broke there and the known finding it matches."""

    verdict: str
    base: str = HONEST.name
    base_failure: str | None = None  # the base's first violation (PRESENT)
    known: str | None = None  # the known finding's reproducer it matches, if one does

    def line(self) -> str:
        """How the first line of a finding says whose it is."""
        if self.verdict == CAUSED:
            return f"{CAUSED} (the same world and steps on {self.base} hold)"
        if self.verdict == STACK:
            return f"{STACK} (no change was fuzzed: the protocol as specified)"
        known = f"; it is the known finding {self.known}" if self.known else ""
        return f"{PRESENT} (on {self.base} the same steps fail too: {self.broke}{known})"

    @property
    def broke(self) -> str:
        """What failed on the base, in a word: its invariant (or the crash)."""
        text = self.base_failure or ""
        return text[1 : text.index("]")] if text.startswith("[") and "]" in text else "a crash"

    def to_json(self) -> dict:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: dict | None) -> "Attribution | None":
        return None if data is None else cls(**data)


def base_of(repro: Reproducer, against: str | None = None) -> str | None:
    """The version a run is judged against: ``against`` when given (``simkit compare
    --base``), else a release's old version, else the protocol as specified (None)."""
    return _version(against if against is not None else repro.base)


def _version(ref: str | None) -> str | None:
    return None if ref in (None, HONEST.name) else ref


def is_change(repro: Reproducer, against: str | None = None) -> bool:
    """Whether the run judges a change against a base: its (new) version is a variant of
    the protocol other than its release's old one; or, ``against`` given, any party ran
    another version than that. A run of the protocol as specified (a release into it
    included: the built-in neighbouring versions ``simkit fuzz`` mixes in) is the
    stack's own."""
    if against is not None:
        ran = {_version(repro.variant)}
        if repro.base is not None:
            ran.add(_version(repro.base))
        return ran != {_version(against)}
    new = _version(repro.variant)
    return new is not None and new != _version(repro.base)


def on_base(repro: Reproducer, against: str | None = None) -> Reproducer:
    """The same world and steps with every party on the base version (a release's
    upgrades then upgrade the base to itself)."""
    base = base_of(repro, against)
    release = repro.base is not None
    return attrs.evolve(
        repro, variant=base, base=(base or HONEST.name) if release else None, violations=(),
        trace_hash=None,
    )  # fmt: skip


def attribute(repro: Reproducer, corpus: str | Path = KNOWN, against: str | None = None):
    """Replay a failing run of a change on its base and say whose finding it is."""
    return attributed(repro, corpus, against)[0]


def attributed(
    repro: Reproducer, corpus: str | Path = KNOWN, against: str | None = None
) -> tuple[Attribution, Reproducer | None]:
    """``attribute``, and for a finding present without the change the base's own
    reproducer (the same world and steps on the base, with the base's violations)."""
    base = base_of(repro, against)
    name = base or HONEST.name
    if not is_change(repro, against):
        return Attribution(STACK, name), None
    failure = base_failure(repro, against)
    if failure is None:
        return Attribution(CAUSED, name), None
    text, violations = failure
    known = None
    with contextlib.suppress(OSError):
        known = matching(corpus, base, violations)
    own = attrs.evolve(on_base(repro, against), violations=violations)
    return Attribution(PRESENT, name, text, known and str(known)), own


def base_failure(repro: Reproducer, against: str | None = None):
    """What breaks when the run's steps are replayed on the base (its first violation,
    or the exception that crashed it, and every violation), or None when the base holds."""
    try:
        result = replay(on_base(repro, against))
    except Exception as exc:  # the base crashes on these steps: that is its failure
        return describe(exc), ()
    if not result.violations:
        return None
    violations = tuple(v.to_json() for v in result.violations)
    return str(Violation(**violations[0])), violations
