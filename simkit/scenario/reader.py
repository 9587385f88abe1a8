"""Reading one scenario file's tables: typed values, numbers within their bounds,
and errors that name the file, the line and the key.

TOML parsers report a line only for syntax errors, so the line of a key is found
by a scan of the text (table headers and ``key =`` lines): enough to point at a
mistake, and left out when the scan cannot place the key.
"""

import math
import re
from pathlib import Path

from simkit.errors import InputError


class ScenarioError(InputError):
    """A scenario file breaks the format (the message names file, key and expectation)."""


_ARRAY_HEADER = re.compile(r"\[\[\s*([\w.-]+)\s*\]\]")
_TABLE_HEADER = re.compile(r"\[\s*([\w.-]+)\s*\]")
_KEY = re.compile(r"([\w.-]+)\s*=")


def key_lines(text: str) -> dict[str, int]:
    """The line of each key and table, by its place (``workload.interval``,
    ``schedule[2].until``); a key inside an inline table gets its parent's line."""
    lines: dict[str, int] = {}
    table, arrays = "", {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if match := _ARRAY_HEADER.match(stripped):
            name = match.group(1)
            arrays[name] = arrays.get(name, -1) + 1
            table = f"{name}[{arrays[name]}]"
        elif match := _TABLE_HEADER.match(stripped):
            table = match.group(1)
        elif match := _KEY.match(stripped):
            key = match.group(1)
            lines.setdefault(f"{table}.{key}" if table else key, number)
            continue
        else:
            continue
        lines.setdefault(table, number)
    return lines


class Source:
    """A scenario file: its path and where each key is, for error messages."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = key_lines(text)

    def line(self, place: str) -> int | None:
        """The line of ``place``, else of the nearest table or key that holds it."""
        while place:
            if place in self.lines:
                return self.lines[place]
            shorter = _LAST_PART.sub("", place)
            if shorter == place:
                return None
            place = shorter
        return None

    def where(self, place: str) -> str:
        """``file:line`` of ``place``, or just the file when its line is not known."""
        line = self.line(place)
        return f"{self.path}:{line}" if line else str(self.path)

    def error(self, place: str, message: str) -> ScenarioError:
        """``file:line: place: message``."""
        where = self.where(place)
        return ScenarioError(f"{where}: {place}: {message}" if place else f"{where}: {message}")


_LAST_PART = re.compile(r"(\.[^.\[\]]+|\[\d+\])$")

_KIND_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
               dict: "a table", list: "a list"}  # fmt: skip


def _shown(value: object) -> str:
    return repr(value) if not isinstance(value, dict) else "a table"


class Reader:
    """One table of a scenario: typed, bounded access naming the key in every error."""

    def __init__(self, source: Source, table: dict, where: str = "") -> None:
        self.source, self.table, self.where = source, table, where

    def place(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def error(self, key: str, message: str) -> ScenarioError:
        return self.source.error(self.place(key) if key else self.where, message)

    def fail(self, key: str, expected: str) -> ScenarioError:
        """``expected ..., got ...`` for a present key, ``missing`` for an absent one."""
        if key not in self.table:
            return self.error(key, f"missing; expected {expected}")
        return self.error(key, f"expected {expected}, got {_shown(self.table[key])}")

    def only(self, *allowed: str) -> None:
        for key in self.table:
            if key not in allowed:
                place = self.place(key)
                raise ScenarioError(
                    f"{self.source.where(place)}: unknown key {place!r}; "
                    f"expected one of {', '.join(allowed)}"
                )

    def get(self, key: str, kind: type, default=None, *, required: bool = False):
        if key not in self.table:
            if required:
                raise self.fail(key, _KIND_NAMES.get(kind, kind.__name__))
            return default
        value = self.table[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(key, _KIND_NAMES.get(kind, kind.__name__))
        return value

    def number(
        self,
        key: str,
        default: float | None = None,
        *,
        low: float | None = None,
        high: float | None = None,
        above: float | None = None,
        whole: bool = False,
        required: bool = False,
        unit: str = "",
    ):
        """A number (``whole``: an integer) in ``[low, high]`` and ``> above``; the
        error says the range. Absent: ``default`` (not checked)."""
        value = self.get(key, int if whole else float, default, required=required)
        if key not in self.table:
            return value
        if not math.isfinite(value) or not _within(value, low, high, above):
            raise self.fail(key, _range(whole, low, high, above, unit))
        return value

    def choice(self, key: str, options: tuple[str, ...], default: str | None = None) -> str:
        value = self.get(key, str, default, required=default is None)
        if value not in options:
            raise self.fail(key, "one of " + ", ".join(repr(o) for o in options))
        return value

    def strings(self, key: str, default=()) -> tuple[str, ...]:
        value = self.table.get(key, list(default))
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(key, "a list of strings")
        return tuple(value)

    def sub(self, key: str) -> "Reader":
        return Reader(self.source, self.get(key, dict, {}), self.place(key))

    def rows(self, key: str) -> list["Reader"]:
        value = self.table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise self.fail(key, "an array of tables ([[...]])")
        return [Reader(self.source, row, f"{self.place(key)}[{i}]") for i, row in enumerate(value)]


def _within(value: float, low, high, above) -> bool:
    return (
        (low is None or value >= low)
        and (high is None or value <= high)
        and (above is None or value > above)
    )


def _range(whole: bool, low, high, above, unit: str) -> str:
    kind = "an integer" if whole else "a number"
    bounds = []
    if above is not None:
        bounds.append(f"> {above:g}")
    if low is not None:
        bounds.append(f">= {low:g}")
    if high is not None:
        bounds.append(f"<= {high:g}")
    return f"{kind} {' and '.join(bounds)}{f' ({unit})' if unit else ''}".rstrip()
