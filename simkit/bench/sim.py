"""Simulation throughput: record deliveries and simulated seconds per wall second
in one group graph of 10, 100 and 1,000 devices, a simulated day of a 20-device
group, and the peak memory of each run.

A delivery is one record one device pulled and applied (opened, checked, signature
verified: the cache, when on, answers a check another device already made). The
throughput worlds have ten writers creating records at 200 per simulated second
in all, so every device's sync runs carry batches, as they would in a busy group;
each world delivers about a million records (a tenth with ``--quick``). Each run
is a fresh process, so its peak memory is its own.
"""

import tempfile
from pathlib import Path

import trio

from simkit.bench import BenchRow, isolated
from simkit.bench.crypto import delivery_floor_us, receive_floor_us
from simkit.invariants import Monitor
from simkit.protocol.entropy import SeededEntropy
from simkit.realtime import wall_clock
from simkit.relay import Request, Response
from simkit.sim import spec as S
from simkit.sim.determinism import run_virtual
from simkit.sim.network import Network, NetworkProfile
from simkit.sim.trace import Trace
from simkit.sim.world import run_world

WRITERS = 10
RATE = 200.0  # records created per simulated second, across the writers
RECORDS = {10: 100_000, 100: 10_000, 1000: 1_000}  # ~1M deliveries each
DAY_S = 86_400.0


def group_world(devices: int, records: int) -> S.WorldSpec:
    """``devices`` members with one device each in one group graph; ``WRITERS`` of
    them create ``records`` distinct records at ``RATE`` per second in all."""
    members = {f"m{i:04d}": (f"d{i:04d}",) for i in range(devices)}
    writers = tuple(sorted(d for ids in members.values() for d in ids))[:WRITERS]
    return S.WorldSpec(
        seed=1,
        devices=members,
        groups={"all": tuple(members)},
        graphs=("g:all",),
        workload=S.Workload(
            interval_s=len(writers) / RATE,
            writers=writers,
            edit=0.0,
            delete=0.0,
            keys_per_graph=10**12,  # every create is a new record
        ),
        duration_s=records / RATE,
        drain_s=600.0,
    )


def day_world(duration_s: float = DAY_S) -> S.WorldSpec:
    """Twenty members with a device each in one group; each writes once a minute
    (creates, edits and deletes) for ``duration_s``."""
    members = {f"m{i:02d}": (f"d{i:02d}",) for i in range(20)}
    return S.WorldSpec(
        seed=1,
        devices=members,
        groups={"all": tuple(members)},
        graphs=("g:all",),
        workload=S.Workload(interval_s=60.0),
        duration_s=duration_s,
        drain_s=600.0,
    )


def exchange_floor_us(devices: int = 20, each: int = 1_000) -> float:
    """Wall µs per exchange through the simulated network to a relay that does no
    work: the simulator's own share of every request (draws, trace events, timers,
    Trio), which no relay or client optimisation can remove."""
    answer = Response(200, {"content-type": "application/json"}, b'{"ops":[],"more":false}')

    async def world() -> None:
        network = Network(lambda request: answer, NetworkProfile(), SeededEntropy(1), Trace())
        async with network.running(), trio.open_nursery() as nursery:
            for i in range(devices):
                nursery.start_soon(_exchanges, network.transport(f"d{i}"), each)

    start = wall_clock()
    run_virtual(world, seed=1)
    return (wall_clock() - start) / (devices * each) * 1e6


async def _exchanges(transport, count: int) -> None:
    request = Request("GET", "/graphs/g:all/pull")
    for _ in range(count):
        await transport.send(request)


class Counts:
    """Deliveries (``pulled`` over the ``sync.done`` events) and requests, counted as
    the trace is read (a simulated week's trace is never held: it streams to a file)."""

    def __init__(self) -> None:
        self.delivered = self.requests = 0

    def observe(self, event) -> None:
        if event.kind == "request":
            self.requests += 1
        elif event.kind == "event" and event.fields.get("name") == "sync.done":
            self.delivered += event.fields.get("pulled", 0)


def measure(spec: S.WorldSpec) -> dict:
    """Run one world, its trace streamed to a scratch file and counted as it is read:
    wall seconds, deliveries, requests and simulated seconds."""
    counts = Counts()
    monitor = Monitor(honest=True, only=(), observers=(counts,))
    with tempfile.TemporaryDirectory(prefix="simkit-bench-") as scratch:
        start = wall_clock()
        world = run_world(spec, monitor=monitor, trace_path=Path(scratch) / "trace.jsonl",
                          model_check=False)  # fmt: skip
        wall = wall_clock() - start
    simulated = world.settled_at or spec.duration_s + spec.drain_s
    return {
        "wall": wall, "deliveries": counts.delivered, "requests": counts.requests,
        "simulated": simulated,
    }  # fmt: skip


def _group_rows(devices: int, records: int, floor: float) -> tuple[list, float]:
    run, peak = isolated(measure, group_world(devices, records))
    per_delivery = run["wall"] / run["deliveries"] * 1e6
    label = f"{devices:,} devices"
    note = f"{run['deliveries']:,} deliveries in {run['wall']:.1f} s"
    rows = [
        BenchRow("sim", f"deliveries/s ({label})", run["deliveries"] / run["wall"], "/s", note),
        BenchRow("sim", f"simulated s per wall s ({label})", run["simulated"] / run["wall"], "x"),
        BenchRow("sim", f"wall µs per delivery ({label})", per_delivery, "µs",
                 f"{per_delivery / floor:.2f}x the crypto floor"),
        BenchRow("sim", f"peak memory ({label} x {records:,} records)", peak, "MiB"),
    ]  # fmt: skip
    return rows, per_delivery


def run(quick: bool = False) -> list[BenchRow]:
    floor, receive, exchange = delivery_floor_us(), receive_floor_us(), exchange_floor_us()
    rows = [
        BenchRow("sim", "crypto floor per delivery (open + verify)", floor, "µs"),
        BenchRow("sim", "receive path per delivery, signature cached", receive, "µs"),
        BenchRow("sim", "one simulated exchange, relay doing nothing", exchange, "µs"),
    ]
    per_delivery = {}
    for devices, records in RECORDS.items():
        group, per_delivery[devices] = _group_rows(
            devices, records // 10 if quick else records, floor
        )
        rows += group
    ratio = per_delivery[1000] / per_delivery[10]
    rows.append(BenchRow("sim", "wall per delivery, 1,000 vs 10 devices", ratio, "x"))
    span = DAY_S / 8 if quick else DAY_S
    day, peak = isolated(measure, day_world(span))
    note = f"{day['deliveries']:,} deliveries, peak {peak:,.0f} MiB"
    if quick:
        note += f"; quick: {span / 3600:g} h simulated, x8 shown"
    scale = DAY_S / span
    requests, delivered = day["requests"] * scale, day["deliveries"] * scale
    day_floor = (requests * exchange + delivered * receive) / 1e6
    rows += [
        BenchRow("sim", "wall s per simulated day (20 devices)", day["wall"] * scale, "s", note),
        BenchRow("sim", "floor of that day: exchanges + receive paths", day_floor, "s",
                 f"{requests:,.0f} requests x exchange + {delivered:,.0f} x receive path"),
    ]  # fmt: skip
    return rows + _memory_rows(quick)


def _memory_rows(quick: bool) -> list[BenchRow]:
    """Peak memory and wall time of the day world over a short and a four times longer
    span (each in a fresh process): memory must stay flat in simulated time (the trace
    streams to disk), wall time grow linearly; and, in a full run, a simulated week."""
    short_h, long_h = (0.5, 2.0) if quick else (2.0, 8.0)
    spans = {hours: isolated(measure, day_world(hours * 3600)) for hours in (short_h, long_h)}
    (short, short_peak), (long, long_peak) = spans[short_h], spans[long_h]
    rows = [
        BenchRow("sim", f"peak memory, day world over {h:g} h", peak, "MiB",
                 f"{run['wall']:.0f} s wall, {run['deliveries']:,} deliveries")
        for h, (run, peak) in spans.items()
    ]  # fmt: skip
    rows += [
        BenchRow("sim", "peak memory, 4x the simulated time", long_peak / short_peak, "x",
                 f"{long_h:g} h over {short_h:g} h; goal <= 1.3x"),
        BenchRow("sim", "wall time, 4x the simulated time", long["wall"] / short["wall"], "x",
                 "linear is 4x"),
    ]  # fmt: skip
    if not quick:
        week, peak = isolated(measure, day_world(7 * DAY_S))
        rows += [
            BenchRow("sim", "wall s per simulated week (20 devices)", week["wall"], "s",
                     f"{week['deliveries']:,} deliveries, {week['requests']:,} requests"),
            BenchRow("sim", "peak memory, simulated week (20 devices)", peak, "MiB"),
        ]  # fmt: skip
    return rows
