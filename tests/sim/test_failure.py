"""An exception raised inside a simulated world reaches the caller as itself, never as
an exception group, with notes saying which task raised it, when, and in which world
(simkit.sim.failure). .ci/run runs these on the newest Trio, whose nurseries wrap
everything in groups, and on the oldest one pyproject.toml declares."""

import pytest
import trio
import trio.testing

from simkit.errors import WorldErrors
from simkit.fuzz.driver import WorldDriver
from simkit.sim import spec as S
from simkit.sim.determinism import run_virtual
from simkit.sim.world import run_world
from tests.fuzz.crash_variants import a1_loop_raises, two_loops_raise

SPEC = S.WorldSpec(
    seed=3,
    devices={"alice": ("a1", "a2"), "bob": ("b1",)},
    groups={"team": ("alice", "bob")},
    graphs=("g:team",),
    duration_s=10,
    drain_s=10,
)
STRICT_GROUPS = tuple(int(part) for part in trio.__version__.split(".")[:2]) >= (0, 25)


async def _nested_failure() -> None:
    async with trio.open_nursery() as outer, trio.open_nursery() as inner:
        outer.start_soon(trio.sleep_forever)
        inner.start_soon(_raise_later)


async def _raise_later() -> None:
    await trio.sleep(1)
    raise KeyError("a bug")


def test_trio_alone_wraps_a_nested_failure_in_groups_when_its_groups_are_strict():
    """Why simkit unwraps: this Trio would hand the caller a group (0.25 and later)."""
    with pytest.raises(BaseException) as raised:
        trio.run(_nested_failure, clock=trio.testing.MockClock(autojump_threshold=0))
    assert isinstance(raised.value, BaseExceptionGroup) == STRICT_GROUPS


def test_run_virtual_raises_the_original_exception_with_the_virtual_time():
    with pytest.raises(KeyError, match="a bug") as raised:
        run_virtual(_nested_failure, seed=5)
    assert type(raised.value) is KeyError
    assert raised.value.__notes__ == [
        "raised inside the simulated world (seed 5, virtual time 1.000 s)"
    ]


def test_a_device_task_that_raises_reaches_run_world_as_itself_naming_the_device():
    with pytest.raises(KeyError, match="a bug in a1's loop") as raised:
        run_world(SPEC, a1_loop_raises)
    assert type(raised.value) is KeyError
    device_note, world_note = raised.value.__notes__
    assert device_note.startswith("in device a1 at virtual time ")
    assert world_note.startswith("raised inside the simulated world (seed 3, virtual time ")


def test_several_exceptions_at_once_are_reported_one_by_one():
    with pytest.raises(WorldErrors) as raised:
        run_world(SPEC, two_loops_raise)
    errors = raised.value.exceptions
    assert sorted(type(e).__name__ for e in errors) == ["KeyError", "KeyError"]
    message = str(raised.value)
    assert message.startswith("2 exceptions escaped the simulated world:")
    assert "1. KeyError" in message and "2. KeyError" in message
    assert "in device a1 at" in message and "in device b1 at" in message


def test_the_fuzz_driver_raises_a_task_failure_as_itself_from_every_later_call():
    driver = WorldDriver(SPEC, a1_loop_raises)
    try:
        with pytest.raises(KeyError, match="a bug in a1's loop") as first:
            driver.advance(5)  # a1's loop raises during this step
        with pytest.raises(KeyError) as again:
            driver.advance(5)
        assert again.value is first.value is driver.failure
        assert any(note.startswith("in device a1 at") for note in first.value.__notes__)
    finally:
        driver.close()


def test_the_fuzz_driver_raises_a_steps_own_exception_as_itself():
    driver = WorldDriver(SPEC)

    def broken() -> None:
        raise KeyError("a bug in a step")

    try:
        with pytest.raises(KeyError, match="a bug in a step") as raised:
            driver.do(broken)
        assert raised.value.__notes__[-1].startswith("raised inside the simulated world (seed 3")
        driver.advance(1)  # the world itself is still running
    finally:
        driver.close()
