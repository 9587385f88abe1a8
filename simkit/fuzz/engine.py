"""Hypothesis as the fuzz runner drives it: the one module of simkit that reaches past
Hypothesis's public API.

The runner needs four things the public API does not give: to run a state machine's
test again and again in chunks, each under its own seed, with the test built once (it
reads the machine's module source, tens of ms); to see each example start (to check
the budget) and end (to keep a failing run with the machine that ran it); to stop at
once without Hypothesis saving the interrupted example as a failure; and to tell the
final replay of a shrunk example from the examples before it.
``tests/fuzz/test_engine.py`` checks each of them on the installed Hypothesis; CI runs
it on the newest release and on the floor pinned in ``.ci/floors.txt``.
"""

import functools
from collections.abc import Callable

from hypothesis import seed as hypothesis_seed
from hypothesis import settings as Settings
from hypothesis.control import current_build_context
from hypothesis.stateful import RuleBasedStateMachine, get_state_machine_test


class Stop(KeyboardInterrupt):
    """Raised as an example starts, it stops the run at once: Hypothesis lets a
    KeyboardInterrupt through without saving the example as a failure."""


class ChunkRunner:
    """Runs a state machine's examples, a chunk at a time under a given seed.

    ``around(run, machine)`` is called for each example: ``run()`` runs it, and
    ``machine()`` is the machine instance that ran it (None before it was built).
    """

    def __init__(
        self,
        machine: type[RuleBasedStateMachine],
        settings: Settings,
        around: Callable[[Callable[[], None], Callable[[], RuleBasedStateMachine | None]], None],
    ) -> None:
        self.current: RuleBasedStateMachine | None = None

        def build() -> RuleBasedStateMachine:
            self.current = machine()
            return self.current

        test = get_state_machine_test(build, settings=settings)
        inner = test.hypothesis.inner_test

        @functools.wraps(inner)  # Hypothesis reads the test's name and signature
        def example(*args, **kwargs):
            self.current = None
            around(lambda: inner(*args, **kwargs), lambda: self.current)

        test.hypothesis.inner_test = example
        self._test = test
        self._settings = test._hypothesis_internal_use_settings

    def run(self, seed: int) -> None:
        """One chunk of examples under ``seed``."""
        # @seed wraps the test's settings in one more layer each time it is applied:
        # give the reused test its own back first, or a long run grows a chain of them
        self._test._hypothesis_internal_use_settings = self._settings
        hypothesis_seed(seed)(self._test)()


def replaying_final() -> bool:
    """Whether Hypothesis is replaying its shrunk example to report it (the budget lets
    that one run)."""
    return current_build_context().is_final
