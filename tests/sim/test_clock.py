import time

import pytest
import trio

from simkit.protocol.entropy import SeededEntropy
from simkit.sim import (
    DEFAULT_EPOCH_MS,
    ClockError,
    ClockJump,
    DeviceClock,
    relay_clock,
    run_virtual,
)

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

    started = time.perf_counter()
    virtual = run_virtual(world, seed=0)
    assert time.perf_counter() - started < 1.0
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
