"""A conformance check: one function per spec rule, named after the rule.

``@check(line, quote)`` registers a function in ``CHECKS`` with the spec line it
tests: ``line`` is a line of relay-spec.md and ``quote`` a fragment of that line's
text (a test keeps the two in step with the spec). A check passes by returning,
fails by raising ``Failed`` (``expect`` does), and skips by raising ``Skipped`` with
the reason, e.g. when it needs what only an in-process relay offers (``needs``).
"""

from collections.abc import Callable

import attrs


class Failed(Exception):
    """The relay broke the rule; the message says what was expected and what came."""


class Skipped(Exception):
    """The check could not run here; the message says why."""


# What a check may need from its target beyond sending requests (see Target).
NEEDS = {
    "clock": "needs control of the relay's clock (a relay at a URL lives in real time)",
    "quotas": "needs the relay's quota values (the spec does not show them)",
}


@attrs.frozen
class Check:
    name: str
    area: str  # the module, after the spec noun it checks
    line: int
    quote: str
    run: Callable[..., None]
    needs: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        return f"spec:{self.line}"


CHECKS: list[Check] = []


def check(line: int, quote: str, needs: tuple[str, ...] = ()) -> Callable:
    """Register the decorated function as a check of relay-spec.md line ``line``."""
    for need in needs:
        assert need in NEEDS, need

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        area = fn.__module__.rpartition(".")[2]
        CHECKS.append(Check(fn.__name__, area, line, quote, fn, tuple(needs)))
        return fn

    return register


def expect(condition: object, message: str) -> None:
    if not condition:
        raise Failed(message)
