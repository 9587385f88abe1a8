"""simkit.model: an executable model of the spec's relay, to check any relay against it.

``RelayModel`` predicts each answer and state change; ``compare`` and
``store_findings`` name the spec rule behind every difference; ``ModelCheck``
follows a relay exchange by exchange (docs/model.md).
"""

from simkit.model.answer import Expected, compare
from simkit.model.check import ModelCheck
from simkit.model.relay import RelayModel
from simkit.model.store import relay_counters, store_data, store_findings

__all__ = [
    "Expected",
    "ModelCheck",
    "RelayModel",
    "compare",
    "relay_counters",
    "store_data",
    "store_findings",
]
