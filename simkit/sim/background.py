"""What runs beside a world's devices for as long as it runs: the lag sampler (and
the invariant monitor it steps) and the relay's built-in sweeper."""

import trio

from simkit.protocol.ids import graph_id_for

LAG_SAMPLE_S = 10.0


async def sample_lag(world) -> None:
    """Every ``LAG_SAMPLE_S``: how far each device's unfiltered cursor trails the
    relay's counter, per graph (what reports plot)."""
    while True:
        await trio.sleep(LAG_SAMPLE_S)
        for sk, graph in sorted(world.relay.state.graphs.items()):
            lags = {}
            for device_id in world.followers(sk):
                device = world.slots[device_id].device
                graph_id = graph_id_for(sk, device.member_id)
                if device.unfiltered(graph_id):
                    lags[device_id] = graph.seq - device.store.get("cursor", graph_id, 0)
            world.note("check", "world", what="lag", graph=sk, seq=graph.seq, lags=lags)
        if world.monitor is not None:
            record(world, world.monitor.step(world))
        elif world.trace.streaming:
            world.trace.release(len(world.trace))  # nobody reads it here: the file has it


def record(world, violations) -> None:
    """Keep each violation once, and note it in the trace where it was seen."""
    for violation in violations:
        if str(violation) not in {str(v) for v in world.violations}:
            world.violations.append(violation)
            world.note("check", "world", what="violation", **violation.to_json())


async def sweeper(world) -> None:
    """The relay's built-in sweeper, on the relay's clock (0 disables it)."""
    interval = world.relay.settings.sweep_interval_ms
    while interval:
        await trio.sleep(interval / 1000)
        if world.relay_up:
            now = world.relay.clock()
            swept = world.relay.sweep_if_due()
            if world.relay_oracle is not None:
                world.relay_oracle.swept_if_due(now, swept)
