"""The fields a fuzz step may have and how each is checked (``simkit.fuzz.actions``
builds every step from them): IDs, numbers in range, choices, flags and lists, each
refused with a ``StepError`` that names the step, the rule and the field."""

from collections.abc import Callable
from typing import ClassVar

import attrs

from simkit.errors import InputError
from simkit.fuzz.params import GRAPHS
from simkit.protocol.ids import is_safe_id

MAX_SECONDS = 7 * 86_400  # a step waits or lasts at most a week of virtual time
MAX_BURST = 1_000
MAX_REQUESTS = 1_000  # how far into a ceremony a fault may be armed


class StepError(InputError):
    """A step names an unknown rule, misses a field or has a field out of its range."""


# -- field rules ---------------------------------------------------------------------------


def fail(attribute, value, rule: str):
    raise StepError(f"field {attribute.name!r} must be {rule}, not {value!r}")


def safe_id(instance, attribute, value) -> None:
    if not isinstance(value, str) or not is_safe_id(value):
        fail(attribute, value, "a safe ID ([A-Za-z0-9_-]{1,64})")


def safe_ids(instance, attribute, value) -> None:
    if not isinstance(value, tuple) or not value:
        fail(attribute, value, "a non-empty list of device IDs")
    for item in value:
        safe_id(instance, attribute, item)


def one_of(*choices) -> Callable:
    def check(instance, attribute, value) -> None:
        if value not in choices or isinstance(value, bool) != isinstance(choices[0], bool):
            fail(attribute, value, "one of " + ", ".join(map(repr, choices)))

    return check


def number(low: float, high: float, integer: bool = False, above: bool = False) -> Callable:
    """A number from ``low`` (or ``above`` it) to ``high``, whole if ``integer``."""
    kind = "a whole number" if integer else "a number"
    span = f"above {low:g}" if above else f"from {low:g}"

    def check(instance, attribute, value) -> None:
        types = int if integer else int | float
        if (
            isinstance(value, bool)
            or not isinstance(value, types)
            or not low <= value <= high
            or (above and value == low)
        ):
            fail(attribute, value, f"{kind} {span} up to {high:g}")

    return check


SECONDS = number(0, MAX_SECONDS, above=True)


def flag(instance, attribute, value) -> None:
    if not isinstance(value, bool):
        fail(attribute, value, "true or false")


def listed(value):
    """JSON lists become tuples (a step is frozen and hashable); anything else is kept
    as it is for its validator to refuse."""
    return tuple(value) if isinstance(value, list) else value


GRAPH = attrs.field(validator=one_of(*GRAPHS))
RECORD = attrs.field(validator=safe_id)
DEVICE = attrs.field(validator=safe_id)


# -- the steps -----------------------------------------------------------------------------


@attrs.frozen
class Step:
    """A step of a fuzz run. ``RULE`` is its name in the JSON form (``"rule"``)."""

    RULE: ClassVar[str] = ""

    def to_json(self) -> dict:
        data = {"rule": self.RULE}
        for field in attrs.fields(type(self)):
            value = getattr(self, field.name)
            if field.metadata.get("omit_default") and value == field.default:
                continue
            data[field.name] = _json(value)
        return data

    def actors(self) -> tuple[str, ...]:
        """Every device this step names (who it involves)."""
        names = []
        for field in attrs.fields(type(self)):
            if field.name in ("device", "by", "source"):
                names.append(getattr(self, field.name))
            elif field.name in ("devices", "targets"):
                names.extend(getattr(self, field.name))
        return tuple(names)

    def creates(self) -> str | None:
        """The device this step brings into the world, if any."""
        return None

    def named_member(self) -> str | None:
        """The member this step names, if any (an invite's is a new one)."""
        return getattr(self, "member", None)


def _json(value):
    if isinstance(value, Step):
        return value.to_json()
    if isinstance(value, tuple):
        return [_json(v) for v in value]
    return value


def omitted(default, **kwargs):
    """A field left out of the JSON form while it has its default."""
    return attrs.field(default=default, metadata={"omit_default": True}, **kwargs)
