"""The background loop (docs/client.md): debounced pokes, and polls only when idle."""

import trio

from tests.client.world import PAIR, World, team, virtual


def _runs(device) -> int:
    return sum(1 for e in device.events if e.kind == "sync.done")


async def _running(device, work) -> int:
    """Sync runs ``device.run()`` makes while ``work()`` runs."""
    before = _runs(device)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(device.run)
        await work()
        nursery.cancel_scope.cancel()
    return _runs(device) - before


@virtual
async def test_an_idle_device_polls_once_per_poll_interval():
    world = World()
    a1, _b1 = await team(world, *PAIR)
    interval = a1.config.poll_interval_s
    runs = await _running(a1, lambda: trio.sleep(10 * interval + interval / 2))
    assert runs == 10


@virtual
async def test_a_device_kept_busy_by_pokes_never_polls():
    world = World()
    a1, _b1 = await team(world, *PAIR)
    interval = a1.config.poll_interval_s

    async def poked() -> None:
        for _ in range(20):
            a1.wake()
            await trio.sleep(interval / 2)  # a poke every half interval

    assert await _running(a1, poked) == 20  # one run per poke, no poll among them


@virtual
async def test_pokes_within_the_poke_debounce_join_one_sync_run():
    world = World()
    a1, _b1 = await team(world, *PAIR)
    debounce = a1.config.poke_debounce_s

    async def burst() -> None:
        for _ in range(5):
            a1.wake()
            await trio.sleep(debounce / 10)
        await trio.sleep(2 * debounce)

    assert await _running(a1, burst) == 1
