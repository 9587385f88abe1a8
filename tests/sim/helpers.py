"""Stand-ins for the relay's Request/Response, a counting relay, and the racing world
that the determinism tests run in this process and in fresh ones."""

import contextlib

import attrs
import trio

from simkit.errors import TransportError
from simkit.protocol.entropy import SeededEntropy
from simkit.sim import (
    RELAY,
    DeviceClock,
    Latency,
    Network,
    NetworkProfile,
    Trace,
    relay_time_ms,
    run_virtual,
)


@attrs.frozen
class Req:
    method: str
    path: str
    body: bytes = b""


@attrs.frozen
class Resp:
    status: int
    headers: dict[str, str]
    body: bytes


class CountingRelay:
    """Applies a request by recording its path; answers how many it has applied."""

    def __init__(self) -> None:
        self.applied: list[str] = []

    def __call__(self, request: Req) -> Resp:
        self.applied.append(request.path)
        return Resp(200, {}, str(len(self.applied)).encode())


def network_for(
    profile: NetworkProfile, seed: int = 0, **options: object
) -> tuple[Network, CountingRelay, Trace]:
    relay, trace = CountingRelay(), Trace()
    network = Network(relay, profile, SeededEntropy(seed), trace, response_type=Resp, **options)
    return network, relay, trace


DEVICES = ("d0", "d1", "d2", "d3", "d4")

# Fixed latencies make arrivals collide, so the scheduler's choices reach the trace.
RACING = NetworkProfile(
    up=Latency(5),
    down=Latency(5),
    request_loss=0.1,
    response_loss=0.1,
    poke_loss=0.1,
    duplicate_rate=0.1,
    reorder_rate=0.1,
    reorder_delay=Latency(0, 50),
    error_5xx_rate=0.05,
    error_429_rate=0.05,
    timeout_ms=200,
)


def racing_world(seed: int, *, scheduler_seed: int | None = None, sloppy: bool = False) -> str:
    """Five skewed devices racing 20 requests each through a faulty network, the relay
    poking every device after each write. ``sloppy`` iterates a set of device IDs
    (breaking determinism rule 3) to show the cross-process test catches it."""

    async def world() -> str:
        entropy = SeededEntropy(seed)
        network, relay, trace = network_for(RACING, seed)
        trace.register_clock(RELAY, relay_time_ms)

        def handle(request: Req) -> Resp:
            response = relay(request)
            for device in set(DEVICES) if sloppy else sorted(DEVICES):
                network.poke(device, request.path, graph="g")
            return response

        network.handle = handle

        async def device(name: str) -> None:
            clock = DeviceClock.drawn(entropy.fork(f"clock/{name}"), max_offset_ms=180_000)
            trace.register_clock(name, clock.reading_at)
            transport = network.transport(name)
            for i in range(20):
                with contextlib.suppress(TransportError):
                    await transport.send(Req("POST", f"/{name}/{i}", b"x" * i))
                await clock.sleep(0.01)

        async def listen(pokes: trio.MemoryReceiveChannel) -> None:
            async for _ in pokes:
                pass

        async with network.running(), trio.open_nursery() as listeners:
            for name in DEVICES:
                listeners.start_soon(listen, network.subscribe(name))
            network.partition({"d3", "d1"}, until=0.1)
            async with trio.open_nursery() as devices:
                for name in DEVICES:
                    devices.start_soon(device, name)
            listeners.cancel_scope.cancel()
        return trace.trace_hash()

    return run_virtual(world, seed=seed if scheduler_seed is None else scheduler_seed)
