"""Simulation throughput: record deliveries and simulated seconds per wall second
for 10, 100 and 1,000 devices in one group graph, and the peak memory.

A delivery is one record one device pulled and applied (opened, checked, signature
verified). Ten devices write; every device receives every write.
"""

import resource

from simkit.bench import BenchRow, wall_clock
from simkit.sim import spec as S
from simkit.sim.world import run_world


def _world(devices: int, writes: int) -> S.WorldSpec:
    members = {f"m{i:04d}": (f"d{i:04d}",) for i in range(devices)}
    writers = tuple(sorted(d for ids in members.values() for d in ids))[:10]
    duration = 120.0
    return S.WorldSpec(
        seed=1,
        devices=members,
        groups={"all": tuple(members)},
        graphs=("g:all",),
        workload=S.Workload(interval_s=duration * len(writers) / writes, writers=writers),
        duration_s=duration,
        drain_s=600.0,
    )


def deliveries(world) -> int:
    return sum(
        e.fields.get("pulled", 0)
        for e in world.trace
        if e.kind == "event" and e.fields.get("name") == "sync.done"
    )


def run(quick: bool = False) -> list[BenchRow]:
    rows = []
    sizes = (10, 100) if quick else (10, 100, 1000)
    for devices in sizes:
        writes = max(20, (4_000 if quick else 40_000) // devices)
        start = wall_clock()
        world = run_world(_world(devices, writes))
        wall = wall_clock() - start
        delivered = deliveries(world)
        simulated = world.settled_at or world.spec.duration_s + world.spec.drain_s
        note = f"{devices} devices, {delivered:,} deliveries in {wall:.1f} s"
        rows.append(
            BenchRow("sim", f"deliveries/s ({devices} devices)", delivered / wall, "/s", note)
        )
        rows.append(
            BenchRow("sim", f"simulated s per wall s ({devices} devices)", simulated / wall, "x")
        )
        rows.append(
            BenchRow(
                "sim", f"wall µs per delivery ({devices} devices)", wall / delivered * 1e6, "µs"
            )
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows.append(BenchRow("sim", "peak memory (process)", peak, "MiB"))
    return rows
