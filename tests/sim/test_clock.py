import math

import pytest
import trio
import trio.testing

from simkit.protocol.entropy import SeededEntropy
from simkit.sim import (
    DEFAULT_EPOCH_MS,
    ClockError,
    ClockJump,
    DeviceClock,
    relay_clock,
    run_virtual,
)
from simkit.sim.clock import VirtualClock, sleep_until
from simkit.sim.determinism import deterministic_trio

EPOCH = 1_000_000


def test_offset_drift_and_jumps_give_the_expected_readings():
    clock = DeviceClock(EPOCH, offset_ms=500, drift_ppm=100, jumps=[(10, 60_000), (5, -1_000)])
    assert clock.jumps == (ClockJump(5, -1_000), ClockJump(10, 60_000))
    assert clock.reading_at(0) == EPOCH + 500
    assert clock.reading_at(4.999) == EPOCH + 500 + 4_999  # 4999.4999 ms, floored
    assert clock.reading_at(5) == EPOCH + 500 + 5_000 - 1_000  # 5000.5 ms, then the step back
    assert clock.reading_at(10) == EPOCH + 500 + 10_001 - 1_000 + 60_000
    assert clock.reading_at(86_400) == EPOCH + 500 + 86_408_640 + 59_000  # 100 ppm of a day


def test_readings_follow_virtual_time():
    device = DeviceClock(EPOCH, offset_ms=-3 * 60_000, jumps=[ClockJump(2, 3 * 3_600_000)])
    relay = relay_clock(EPOCH)

    async def world() -> list[tuple[int, int]]:
        readings = []
        for _ in range(3):
            readings.append((relay(), device.now_ms()))
            await trio.sleep(1.5)
        return readings

    assert run_virtual(world, seed=0) == [
        (EPOCH, EPOCH - 180_000),
        (EPOCH + 1_500, EPOCH + 1_500 - 180_000),
        (EPOCH + 3_000, EPOCH + 3_000 - 180_000 + 10_800_000),  # hours ahead after the jump
    ]


def test_sleep_waits_the_devices_own_seconds():
    fast = DeviceClock(EPOCH, drift_ppm=1_000)  # gains 1 ms per second

    async def world() -> tuple[float, int]:
        before = fast.now_ms()
        await fast.sleep(10)
        return trio.current_time(), fast.now_ms() - before

    elapsed, measured = run_virtual(world, seed=0)
    assert elapsed == pytest.approx(10 / 1.001)
    assert measured in (9_999, 10_000)


def test_a_simulated_day_of_sleeps_takes_no_real_time():
    clocks = [DeviceClock(drift_ppm=d) for d in (-200, 0, 350)]

    async def world() -> float:
        async def tick(clock: DeviceClock) -> None:
            for _ in range(1_440):
                await clock.sleep(60)

        async with trio.open_nursery() as nursery:
            for clock in clocks:
                nursery.start_soon(tick, clock)
        return trio.current_time()

    waits = []

    class Recording(VirtualClock):
        def deadline_to_sleep_time(self, deadline: float) -> float:
            waits.append(super().deadline_to_sleep_time(deadline))
            return waits[-1]

    with deterministic_trio(0):
        virtual = trio.run(world, clock=Recording())
    # Trio never waited for real time, and the last answer (nothing left to wake) is "never"
    assert len(waits) > 4_000 and set(waits[:-1]) == {0.0} and waits[-1] == math.inf
    assert virtual == pytest.approx(86_400 / (1 - 200e-6))  # the slowest clock's day


def test_drawn_clocks_stay_within_bounds_and_repeat():
    clocks = [
        DeviceClock.drawn(SeededEntropy(9).fork(f"c{i}"), max_offset_ms=180_000, max_drift_ppm=50)
        for i in range(50)
    ]
    assert all(abs(c.offset_ms) <= 180_000 and abs(c.drift_ppm) <= 50 for c in clocks)
    assert len({c.offset_ms for c in clocks}) > 40
    assert (
        DeviceClock.drawn(SeededEntropy(9).fork("c0"), max_offset_ms=180_000, max_drift_ppm=50)
        == clocks[0]
    )
    assert clocks[0].epoch_ms == DEFAULT_EPOCH_MS


@pytest.mark.parametrize(
    "kwargs, rule",
    [
        ({"drift_ppm": 1_000_000}, "drift_ppm"),
        ({"offset_ms": 1.5}, "offset_ms must be an integer"),
        ({"jumps": [(-1, 5)]}, "at must be a finite virtual time"),
        ({"jumps": [(1, 0.5)]}, "step_ms must be an integer"),
    ],
)
def test_bad_clock_parameters_name_the_rule(kwargs, rule):
    with pytest.raises(ClockError, match=rule):
        DeviceClock(**kwargs)


# -- VirtualClock: Trio's clock under simulation ---------------------------------------


def test_virtual_clock_wakes_parked_sleepers_and_trio_deadlines_in_time_order():
    woke = []

    async def world() -> list[tuple[str, float]]:
        async def parked(name: str, t: float) -> None:
            await sleep_until(t)
            woke.append((name, trio.current_time()))

        async def scoped(name: str, t: float) -> None:
            with trio.move_on_at(t):  # a Trio deadline, not a parked sleeper
                await trio.sleep_forever()
            woke.append((name, trio.current_time()))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(parked, "parked 3", 3.0)
            nursery.start_soon(scoped, "scoped 2", 2.0)
            nursery.start_soon(parked, "parked 1", 1.0)
            nursery.start_soon(scoped, "scoped 4", 4.0)
        return woke

    assert run_virtual(world, seed=0) == [
        ("parked 1", 1.0), ("scoped 2", 2.0), ("parked 3", 3.0), ("scoped 4", 4.0)
    ]  # fmt: skip


def test_a_cancelled_sleeper_is_never_woken_again():
    async def world() -> tuple[bool, float]:
        finished = False

        async def doomed() -> None:
            nonlocal finished
            await sleep_until(5.0)
            finished = True

        async with trio.open_nursery() as nursery:
            nursery.start_soon(doomed)
            await sleep_until(1.0)
            nursery.cancel_scope.cancel()
        await sleep_until(10.0)  # time passes 5.0: the cancelled entry must stay dead
        return finished, trio.current_time()

    assert run_virtual(world, seed=0) == (False, 10.0)


def test_timers_run_at_their_time_in_order_before_the_tasks_woken_then():
    async def world() -> list[tuple[str, float]]:
        clock, seen = trio.lowlevel.current_clock(), []

        def timer(name: str) -> None:
            seen.append((name, trio.current_time()))
            if name == "first at 2":  # a timer may schedule another
                clock.call_at(2.5, timer, ("chained at 2.5",))

        async def sleeper() -> None:
            await sleep_until(2.0)
            seen.append(("sleeper at 2", trio.current_time()))

        clock.call_at(3.0, timer, ("at 3",))
        clock.call_at(2.0, timer, ("first at 2",))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sleeper)
            await sleep_until(1.0)  # the sleeper parked at 2 between the two timers at 2
            clock.call_at(2.0, timer, ("second at 2",))
        await sleep_until(4.0)
        return seen

    assert run_virtual(world, seed=0) == [
        ("first at 2", 2.0), ("second at 2", 2.0), ("sleeper at 2", 2.0),
        ("chained at 2.5", 2.5), ("at 3", 3.0),
    ]  # fmt: skip


def test_timers_that_wake_nobody_cost_no_pass_of_the_run_loop():
    passes = 0

    class Counting(VirtualClock):
        def deadline_to_sleep_time(self, deadline: float) -> float:
            nonlocal passes
            passes += 1
            return super().deadline_to_sleep_time(deadline)

    async def world() -> int:
        clock, ran = trio.lowlevel.current_clock(), []
        for i in range(1_000):
            clock.call_at(i / 10, ran.append, (i,))
        await sleep_until(200.0)
        return len(ran)

    assert trio.run(world, clock=Counting()) == 1_000
    assert passes <= 3  # not one per timer


def test_a_timer_that_wakes_a_task_lets_it_run_before_time_moves_on():
    async def world() -> list[tuple[str, float]]:
        clock, seen, event = trio.lowlevel.current_clock(), [], trio.Event()

        async def waiter() -> None:
            await event.wait()
            seen.append(("woken", trio.current_time()))

        clock.call_at(1.0, event.set, ())
        clock.call_at(2.0, lambda: seen.append(("later timer", trio.current_time())), ())
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
        await sleep_until(3.0)
        return seen

    assert run_virtual(world, seed=0) == [("woken", 1.0), ("later timer", 2.0)]


def test_a_frozen_virtual_clock_stands_still_but_releases_what_is_already_due():
    clock = VirtualClock()
    clock.frozen = True
    assert clock.deadline_to_sleep_time(5.0) == math.inf  # waits for I/O, time stays at 0
    assert clock.current_time() == 0.0
    clock.frozen = False
    assert clock.deadline_to_sleep_time(5.0) == 0.0  # jumps at once
    assert clock.current_time() == 5.0
    assert clock.deadline_to_sleep_time(math.inf) == math.inf  # nothing will ever wake


def test_simulated_sleeps_refuse_a_clock_that_is_not_virtual():
    async def world() -> None:
        await sleep_until(1.0)

    with pytest.raises(ClockError, match="needs a VirtualClock"):
        trio.run(world, clock=trio.testing.MockClock(autojump_threshold=0))
