"""Differential fuzzing of any relay against the reference relay (``simkit diff``).

``diff(target, directory, seconds=..., seed=..., cohorts=...)`` sends the same
seeded raw-request streams (``simkit.model.requests``) to an in-process reference
relay and to the target, and shrinks the first divergence into a reproducer
(docs/relay.md, "Differential fuzzing").
"""

from simkit.wire.diff.cohorts import DEFAULT_COHORTS, Cohort, diff_directory, members_toml
from simkit.wire.diff.compare import differences, view
from simkit.wire.diff.reproducer import DiffReproducer, replay
from simkit.wire.diff.run import DiffResult, diff, send

__all__ = [
    "DEFAULT_COHORTS",
    "Cohort",
    "DiffReproducer",
    "DiffResult",
    "diff",
    "diff_directory",
    "differences",
    "members_toml",
    "replay",
    "send",
    "view",
]
