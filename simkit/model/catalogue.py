"""The spec's rules as one closed catalogue (``catalogue.toml`` beside this file).

Every rule has an ID (``push rule 1``, ``client rule 14``, ``pull: filter``), its text in
the spec's words, what in simkit judges it and where simkit's code makes it. The IDs are
what a variant declares (``Variant.changes``), what a model finding names and what a
departure counts: a name is an ID or an error, never a pattern matched against a
sentence (docs/variants.md, "Changing a rule on purpose"). ``simkit rules`` lists it.
"""

import difflib
import functools
import tomllib
from importlib import resources

import attrs

from simkit.errors import InputError

JUDGES = ("relay-model", "device-model", "conform", "interop", "tests")
"""Judges that are not invariants (an invariant's name is a judge too)."""


class UnknownRule(InputError):
    """A name that is no rule of the catalogue, or that could be several."""


@attrs.frozen
class Rule:
    id: str
    section: str
    text: str
    judged_by: tuple[str, ...] = attrs.field(converter=tuple)
    made_by: tuple[str, ...] = attrs.field(converter=tuple)

    @property
    def override_points(self) -> tuple[str, ...]:
        """The methods a variant overrides to change this rule (docs/variants.md)."""
        return tuple(m for m in self.made_by if m.startswith(("Relay.", "Device.")))

    def to_json(self) -> dict:
        return attrs.asdict(self, recurse=False) | {
            "judged_by": list(self.judged_by), "made_by": list(self.made_by)
        }  # fmt: skip


@functools.cache
def catalogue() -> dict[str, Rule]:
    """Every rule, by ID, in the spec's order."""
    text = resources.files("simkit.model").joinpath("catalogue.toml").read_text("utf-8")
    rules = [Rule(**entry) for entry in tomllib.loads(text)["rule"]]
    found = {rule.id: rule for rule in rules}
    if len(found) != len(rules):
        raise ValueError("catalogue.toml: an ID is listed twice")
    return found


def rule_id(name: str) -> str:
    """``name`` as a model names a rule: an ID of the catalogue, checked (a model that
    names anything else is simkit's own bug, found by its tests)."""
    if name not in catalogue():
        raise ValueError(f"{name!r} is not a rule of the catalogue (simkit/model/catalogue.toml)")
    return name


def _normal(name: str) -> str:
    return " ".join(name.split()).lower()


@functools.cache
def _by_normal() -> dict[str, str]:
    return {_normal(rule): rule for rule in catalogue()}


def resolve(name: object) -> str:
    """The catalogue ID ``name`` declares: the ID itself, in any case and spacing.
    Anything else is an ``UnknownRule`` naming the nearest IDs: those ``name`` begins
    (it could be any of them), else the closest spellings."""
    if not isinstance(name, str) or not name.strip():
        raise UnknownRule(f"a rule is named by its ID (simkit rules lists them), not {name!r}")
    wanted = _normal(name)
    found = _by_normal().get(wanted)
    if found is not None:
        return found
    return _unknown(name, wanted)


def _unknown(name: str, wanted: str):
    ids = list(catalogue())
    starting = [rule for rule in ids if _normal(rule).startswith(wanted)]
    if starting:
        raise UnknownRule(
            f"{name!r} is not one rule but the start of {len(starting)}: "
            f"{_listed(starting)}; name the one the change makes (simkit rules)"
        )
    near = difflib.get_close_matches(wanted, [_normal(r) for r in ids], n=5, cutoff=0.5)
    near = [_by_normal()[n] for n in near] or [r for r in ids if wanted in _normal(r)][:5]
    hint = f"the nearest: {_listed(near)}" if near else "simkit rules lists every ID"
    raise UnknownRule(f"{name!r} is no rule of the spec's catalogue; {hint}")


def _listed(ids: list[str], most: int = 8) -> str:
    shown = ", ".join(repr(rule) for rule in ids[:most])
    return shown if len(ids) <= most else f"{shown} and {len(ids) - most} more"


def declaration(rules: tuple[str, ...] | list[str]) -> str:
    """How a variant declares ``rules``: the line a finding's reader copies."""
    return f"changes=({', '.join(repr(r) for r in rules)},)"


def how_to_declare(rules: tuple[str, ...]) -> str:
    """What a model finding under a change adds: how to say the change is on purpose."""
    if len(rules) == 1:
        return f"if the change makes this on purpose, declare it: {declaration(rules)}"
    named = ", ".join(repr(r) for r in rules)
    return (
        f"if the change makes this on purpose, declare the rule it changes, one of {named}: "
        f"{declaration(rules[:1])} (docs/variants.md)"
    )
