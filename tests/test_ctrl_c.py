"""Ctrl-C at a safe point (simkit.ctrl_c): the first only sets a flag, the second
interrupts at once, and the handler before the block comes back after it."""

import os
import signal

import pytest

from simkit.ctrl_c import CtrlC, deferred_ctrl_c


def _press() -> None:
    os.kill(os.getpid(), signal.SIGINT)  # delivered to the main thread at once


def test_the_first_ctrl_c_only_sets_the_flag_the_second_interrupts():
    before = signal.getsignal(signal.SIGINT)
    with deferred_ctrl_c(CtrlC()) as ctrl_c:
        try:
            _press()
        except KeyboardInterrupt:
            pytest.fail("the first Ctrl-C interrupted: it must only set the flag")
        assert ctrl_c.pressed
        with pytest.raises(KeyboardInterrupt):
            _press()
            pytest.fail("the second Ctrl-C did not interrupt")
    assert signal.getsignal(signal.SIGINT) is before


def test_without_ctrl_c_nothing_is_pressed_and_the_handler_comes_back():
    before = signal.getsignal(signal.SIGINT)
    with deferred_ctrl_c(CtrlC()) as ctrl_c:
        assert signal.getsignal(signal.SIGINT) is not before
    assert not ctrl_c.pressed
    assert signal.getsignal(signal.SIGINT) is before
