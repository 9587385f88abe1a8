"""What a user sees when code inside a simulated world raises: the original exception,
never an exception group, with notes that say where in the world it happened.

Trio (0.25 and later) wraps whatever escapes a nursery in an ``ExceptionGroup``, and
a world nests nurseries (network, world, device), so a ``KeyError`` in a device's
sync would surface three groups deep. simkit unwraps at the two places it calls
``trio.run`` (``run_virtual`` and the fuzz ``WorldDriver``): a single exception is
re-raised as itself, several become one ``WorldErrors`` listing each. On the way
out each exception gets notes (``add_note``, shown under its traceback and by the
command line): the task it escaped from (a device, a timer, the schedule), the
virtual time, and the world's seed; the fuzz steps add the step.
"""

import contextlib
import reprlib
from collections.abc import Iterator

import trio

from simkit.errors import WorldErrors


@contextlib.contextmanager
def in_task(what: str) -> Iterator[None]:
    """Note which task of the world an exception escaped from, and when. The note goes
    on each exception inside a group, where it survives however Trio regroups them."""
    try:
        yield
    except BaseException as exc:
        note = f"in {what} at virtual time {trio.current_time():.3f} s"
        for leaf in _leaves(exc):
            if not isinstance(leaf, trio.Cancelled):
                leaf.add_note(note)
        raise


def timer_name(fn: object, args: tuple) -> str:
    """A timer as a person reads it: the function and its arguments, shortened."""
    name = getattr(fn, "__qualname__", None) or repr(fn)
    return f"the timer {name}{reprlib.repr(args) if args else '()'}"


def _leaves(exc: BaseException) -> Iterator[BaseException]:
    """The exceptions inside (nested) groups, or ``exc`` itself."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
    else:
        yield exc


def surfaced(exc: BaseException, where: str) -> BaseException:
    """The exception to raise to the user for ``exc``, which escaped a world: itself
    (or its only leaf) with a note naming ``where``, or ``WorldErrors`` for several.
    A ``KeyboardInterrupt`` anywhere inside wins: the user asked to stop."""
    leaves = [leaf for leaf in _leaves(exc) if not isinstance(leaf, trio.Cancelled)]
    for leaf in leaves:
        if not isinstance(leaf, Exception):
            return leaf
    if not leaves:
        return exc
    for leaf in leaves:
        leaf.add_note(f"raised inside the simulated world ({where})")
        leaf.simkit_world = where  # the stack under test broke: a finding, not simkit's end
    if len(leaves) == 1:
        return leaves[0]
    several = WorldErrors(leaves)
    several.__cause__ = exc  # every traceback, for ``--debug`` and the library's caller
    return several


async def task(what: str, async_fn, *args) -> None:
    """Run ``async_fn(*args)`` as a task of the world that ``in_task`` names ``what``."""
    with in_task(what):
        await async_fn(*args)
