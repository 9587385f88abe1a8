"""The simulated world: one relay and many devices under Trio's virtual time, every
source of nondeterminism drawn from one seed (docs/sim.md, docs/sim-network.md).

    from simkit.sim import WorldSpec, Workload, Partition, run_world
    world = run_world(WorldSpec(seed=1, devices={"alice": ("a1", "a2")},
                                graphs=("u:alice",), schedule=(Partition(("a2",), 30, 90),)))
    world.trace.trace_hash(), world.relay.state, world.slots["a1"].device.records("u")
"""

from simkit.sim.clock import (
    DEFAULT_EPOCH_MS,
    ClockError,
    ClockJump,
    DeviceClock,
    relay_clock,
    relay_time_ms,
)
from simkit.sim.determinism import (
    DeterminismUnavailable,
    deterministic_trio,
    run_virtual,
    scheduler_seed,
)
from simkit.sim.network import (
    NETWORK,
    RELAY,
    Latency,
    Network,
    NetworkError,
    NetworkProfile,
    NetworkTransport,
)
from simkit.sim.spec import (
    Adversary,
    Approve,
    ClockSpec,
    ClockStep,
    CrashDevice,
    CrashRelay,
    ErrorBurst,
    Invite,
    Join,
    Leave,
    LinkDevice,
    Partition,
    Recover,
    Reject,
    Revoke,
    Rotate,
    SpecError,
    Steal,
    Subscription,
    Workload,
    WorldSpec,
)
from simkit.sim.trace import KINDS, Trace, TraceError, TraceEvent
from simkit.sim.world import World, run_world

__all__ = [
    "DEFAULT_EPOCH_MS",
    "KINDS",
    "NETWORK",
    "RELAY",
    "Adversary",
    "Approve",
    "ClockError",
    "ClockJump",
    "ClockSpec",
    "ClockStep",
    "CrashDevice",
    "CrashRelay",
    "DeterminismUnavailable",
    "DeviceClock",
    "ErrorBurst",
    "Invite",
    "Join",
    "Latency",
    "Leave",
    "LinkDevice",
    "Network",
    "NetworkError",
    "NetworkProfile",
    "NetworkTransport",
    "Partition",
    "Recover",
    "Reject",
    "Revoke",
    "Rotate",
    "SpecError",
    "Steal",
    "Subscription",
    "Trace",
    "TraceError",
    "TraceEvent",
    "Workload",
    "World",
    "WorldSpec",
    "deterministic_trio",
    "relay_clock",
    "relay_time_ms",
    "run_virtual",
    "run_world",
    "scheduler_seed",
]
