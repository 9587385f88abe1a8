"""A check's scope: the world and the alphabet of steps ``simkit check`` enumerates.

A scope file is TOML::

    [world]                 # a fuzz world's parameters, as a reproducer's "world"
    seed = 1
    relay = { max_ops_per_push = 3 }

    symmetric = [["b1", "b2"]]   # devices (or members) the world makes interchangeable

    [[steps]]               # a step rule (or rules); a list gives the values to try
    rule = "write"
    device = ["a1", "b1", "b2"]
    graph = "g:team"
    record = "r0"

Each ``[[steps]]`` table is the cross product of its list-valued fields (a field whose
value is itself a list, such as a partition's ``devices``, is written as a list of
lists). Every letter is a fuzz step (``simkit.fuzz.actions``), checked as a reproducer's
steps are. A symmetric group must leave the alphabet unchanged when its names are
swapped, or the reduction it allows would skip histories nothing else covers.
"""

import itertools
import json
import tomllib
from importlib import resources
from pathlib import Path

import attrs

from simkit.errors import InputError
from simkit.fuzz.actions import Step, StepError, parse_step
from simkit.fuzz.params import ParamsError, WorldParams
from simkit.fuzz.reproducer import check_actors

DEFAULT = "default"  # the scope shipped with simkit (simkit/check/default.toml)
KEYS = ("world", "symmetric", "steps", "about")


class ScopeError(InputError):
    """A scope file is missing, unreadable, or breaks its schema (the message names
    the file and the key)."""


@attrs.frozen
class Scope:
    name: str
    params: WorldParams
    alphabet: tuple[Step, ...]
    symmetric: tuple[tuple[str, ...], ...] = ()
    about: str = ""
    # steps run once after the set-up, before every sequence: a moment worth exploring
    # (``simkit check --from REPRODUCER``: its world and steps)
    prefix: tuple[Step, ...] = ()

    def steps(self, sequence: tuple[int, ...]) -> tuple[Step, ...]:
        """A sequence as the steps a reproducer holds: the prefix, then its letters."""
        return (*self.prefix, *(self.alphabet[letter] for letter in sequence))

    def starting_from(self, params: WorldParams, steps: tuple[Step, ...], name: str) -> "Scope":
        """This alphabet from another moment: ``params``' world after ``steps``."""
        scope = attrs.evolve(self, name=f"{self.name} from {name}", params=params, prefix=steps)
        for step in scope.alphabet:
            try:
                check_actors(params, (*steps, step))
            except StepError as exc:
                raise ScopeError(f"{name}: the scope's {exc}") from None
        return scope


def load_scope(path: str | Path | None = None) -> Scope:
    """The scope in ``path`` (None or ``default``: simkit's own)."""
    if path is None or str(path) == DEFAULT:
        text = resources.files("simkit.check").joinpath("default.toml").read_text("utf-8")
        return parse_scope(text, DEFAULT)
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScopeError(f"{path}: cannot read the scope ({exc})") from None
    return parse_scope(text, str(path))


def parse_scope(text: str, where: str) -> Scope:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScopeError(f"{where}: not TOML ({exc})") from None
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ScopeError(f"{where}: unknown key {unknown[0]!r} (a scope has: {', '.join(KEYS)})")
    world = data.get("world")
    if not isinstance(world, dict):
        raise ScopeError(f"{where}: [world] must be a table of a fuzz world's parameters")
    try:
        params = WorldParams.from_json(world)
    except ParamsError as exc:
        raise ScopeError(f"{where}: [world]: {exc}") from None
    tables = data.get("steps")
    if not isinstance(tables, list) or not tables:
        raise ScopeError(f"{where}: [[steps]] must list at least one step table")
    alphabet: list[Step] = []
    for index, table in enumerate(tables):
        for letter in _letters(table, f"{where}: steps[{index}]"):
            if letter in alphabet:
                raise ScopeError(f"{where}: steps[{index}]: {letter.to_json()} is listed twice")
            alphabet.append(letter)
    for step in alphabet:
        try:
            check_actors(params, (step,))
        except StepError as exc:
            raise ScopeError(f"{where}: {exc}") from None
    symmetric = _symmetric(data.get("symmetric", []), where)
    scope = Scope(where if where == DEFAULT else Path(where).stem, params, tuple(alphabet),
                  symmetric, str(data.get("about", "")))  # fmt: skip
    _check_closed(scope, where)
    return scope


def _letters(table, where: str) -> list[Step]:
    rules = table.get("rule") if isinstance(table, dict) else None
    rules = rules if isinstance(rules, list) else [rules]
    if not rules or not all(isinstance(rule, str) for rule in rules):
        raise ScopeError(f'{where}: a step table needs a "rule" (or a list of rules)')
    names = sorted(k for k in table if k != "rule")
    choices = [rules, *(table[k] if isinstance(table[k], list) else [table[k]] for k in names)]
    letters = []
    for rule, *values in itertools.product(*choices):
        data = {"rule": rule, **dict(zip(names, values, strict=True))}
        try:
            letters.append(parse_step(data, where))
        except StepError as exc:
            raise ScopeError(str(exc)) from None
    return letters


def _symmetric(groups, where: str) -> tuple[tuple[str, ...], ...]:
    ok = isinstance(groups, list) and all(
        isinstance(g, list) and len(g) >= 2 and all(isinstance(n, str) for n in g) for g in groups
    )
    if not ok:
        raise ScopeError(f"{where}: symmetric must be a list of lists of two or more names")
    seen = [n for g in groups for n in g]
    if len(seen) != len(set(seen)):
        raise ScopeError(f"{where}: symmetric: a name belongs to two groups")
    return tuple(tuple(g) for g in groups)


def swapped(step: Step, swap: dict[str, str]) -> Step:
    """``step`` with the names in ``swap`` exchanged."""
    return parse_step(_rename(step.to_json(), swap))


def _rename(value, swap):
    if isinstance(value, str):
        return swap.get(value, value)
    if isinstance(value, list):
        return [_rename(v, swap) for v in value]
    if isinstance(value, dict):
        return {k: _rename(v, swap) for k, v in value.items()}
    return value


def mentions(step: Step, names) -> list[str]:
    """The names of ``names`` a step mentions, in the order its JSON reads them."""
    out: list[str] = []

    def walk(value) -> None:
        if isinstance(value, str) and value in names and value not in out:
            out.append(value)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    walk(step.to_json())
    return out


def _check_closed(scope: Scope, where: str) -> None:
    """Every symmetric group maps the alphabet onto itself (each swap of two names)."""
    letters = {json.dumps(step.to_json(), sort_keys=True) for step in scope.alphabet}
    for group in scope.symmetric:
        for a, b in itertools.combinations(group, 2):
            for step in scope.alphabet:
                image = swapped(step, {a: b, b: a})
                if json.dumps(image.to_json(), sort_keys=True) not in letters:
                    raise ScopeError(
                        f"{where}: symmetric {list(group)}: swapping {a} and {b} turns "
                        f"{step.to_json()} into {image.to_json()}, which the steps do not list"
                    )
