"""Ctrl-C at a safe point.

A long run (a fuzz run, a campaign) must not be interrupted wherever the signal
lands: a world mid-step cannot be torn down, and a Dask client interrupted inside one
of its calls can leave its event loop waiting for ever (distributed's ``sync`` raises
``NameError`` from its loop thread when the interrupt beats its own future). So the
first Ctrl-C only sets a flag that the run reads between pieces of work; a second one
interrupts at once, for a user who will not wait.
"""

import contextlib
import signal
import threading
from collections.abc import Iterator

import attrs


@attrs.define
class CtrlC:
    pressed: bool = False


@contextlib.contextmanager
def deferred_ctrl_c(state: CtrlC) -> Iterator[CtrlC]:
    """Within the block, the first Ctrl-C sets ``state.pressed`` instead of raising.
    Python delivers signals to the main thread only: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def first(signum, frame) -> None:
        state.pressed = True
        signal.signal(signal.SIGINT, signal.default_int_handler)

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, previous)
