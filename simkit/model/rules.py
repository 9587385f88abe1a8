"""Which of a model's findings a protocol change answers for.

A variant names the spec rules it changes on purpose (``Variant.changes``) by their
catalogue IDs (simkit/model/catalogue.toml, ``simkit rules``). A finding names the rules
it is about by the same IDs; one that names a declared rule is the change itself, not a
slip: the models leave it to the other invariants, which judge what the change does. The
match is exact: ``client rule 1`` is not ``client rule 10``, ``push rule`` is no rule.
"""


def declared(rules: tuple[str, ...], changes: tuple[str, ...]) -> tuple[str, ...]:
    """The rules of a finding (``rules``) that the change declares, in the finding's order."""
    return tuple(rule for rule in rules if rule in changes)
