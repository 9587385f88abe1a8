"""Findings: the failures of a campaign's chunks, deduplicated.

Two chunks that hit the same bug rarely shrink to the same steps, so a finding is
keyed by what broke rather than by how: (target, machine, invariant, signature),
where the signature is the first violation's message with every token that holds a
digit (record IDs, revs, seqs, device names) blanked out. "r0 is stored at rev
1767225602844 seq 4" and "x2-1 is stored at rev 1767225654682 seq 5" are one
finding; a crash is keyed by its exception's first line the same way. Of the
reproducers of one finding the shortest is kept (the lowest chunk on a tie), so
the result does not depend on the order chunks finished in.
"""

import hashlib
import re

import attrs

from simkit.fuzz.corpus import shape


@attrs.frozen(order=True)
class Key:
    target: str
    machine: str
    invariant: str
    signature: str

    @property
    def stem(self) -> str:
        """A file name for the finding's reproducer."""
        name = "-".join([self.target.rpartition(":")[2], self.machine, self.invariant])
        return f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}-{self.signature}"


def key_of(target: str, failure: str, reproducer: dict | None) -> Key:
    violations = reproducer["violations"] if reproducer else ()
    if violations:
        invariant, text = violations[0]["invariant"], violations[0]["detail"]
    else:
        invariant, text = "crash", failure
    signature = hashlib.sha256(f"{invariant}\n{shape(text)}".encode()).hexdigest()[:10]
    machine = reproducer["machine"] if reproducer else "none"
    return Key(target, machine, invariant, signature)


@attrs.define
class Finding:
    key: Key
    failure: str  # what broke, in the best run
    reproducer: dict | None  # the best run's reproducer JSON (None: broke before its world)
    chunk: int | None  # the chunk that found the best run; None: a known finding replayed
    found_at: float  # campaign seconds when a chunk first sent it back
    found_after: float | None = None  # seconds into its chunk until the first violation
    first_steps: int | None = None  # that chunk's first failing run, before shrinking
    shrinking: str | None = None  # how shrinking of the best run ended
    hits: int = 1  # how many chunks (and known findings) found it
    path: str | None = None  # where its reproducer was written
    attribution: dict | None = None  # whose it is (simkit.fuzz.attribution), as JSON

    @property
    def steps(self) -> int | None:
        return None if self.reproducer is None else len(self.reproducer["steps"])

    def rank(self) -> tuple:
        return (self.steps if self.steps is not None else 1 << 30, _chunk_order(self.chunk))

    def to_json(self) -> dict:
        return {**attrs.asdict(self, recurse=True, filter=lambda a, v: a.name != "key"),
                **attrs.asdict(self.key), "steps": self.steps}  # fmt: skip


def _chunk_order(chunk: int | None) -> int:
    return -1 if chunk is None else chunk


class Findings:
    """Distinct findings by key, each holding its best reproducer."""

    def __init__(self) -> None:
        self.by_key: dict[Key, Finding] = {}

    def add(self, finding: Finding) -> Finding | None:
        """Record a failure; the finding it makes or improves (a new one, or a shorter
        reproducer of a known one), None when it only adds a hit."""
        known = self.by_key.get(finding.key)
        if known is None:
            self.by_key[finding.key] = finding
            return finding
        best = finding if finding.rank() < known.rank() else known
        merged = attrs.evolve(
            best, hits=known.hits + finding.hits, found_at=min(known.found_at, finding.found_at)
        )
        self.by_key[finding.key] = merged
        return merged if best is finding else None

    def __iter__(self):
        return iter(sorted(self.by_key.values(), key=lambda f: f.key))

    def __len__(self) -> int:
        return len(self.by_key)
