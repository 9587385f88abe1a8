"""Which of a model's findings a protocol change answers for.

A variant names the spec rules it changes on purpose (``Variant.changes``), in the
words the models use for them (docs/model.md lists them: ``client rule 4``,
``push rule 2``, ``keys: rotation rule 3``, ``store: keys: rotationRequired``, ...).
A finding that names one of them is the change itself, not a slip: the models leave
it to the other invariants, which judge what the change does.
"""

import re
from functools import lru_cache


@lru_cache(maxsize=256)
def _pattern(rule: str) -> re.Pattern:
    # "client rule 1" names client rule 1, not client rule 10
    return re.compile(re.escape(rule) + r"(?![0-9])")


def changed(finding: str, rules: tuple[str, ...]) -> str | None:
    """The first of ``rules`` that ``finding`` names, or None."""
    for rule in rules:
        if _pattern(rule).search(finding):
            return rule
    return None
