"""The simulated world's plumbing: seeded scheduling, virtual clocks, the network
between devices and the relay, and the trace (see docs/sim-network.md)."""

from simkit.sim.clock import DEFAULT_EPOCH_MS, ClockError, ClockJump, DeviceClock, relay_clock
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
    Transport,
)
from simkit.sim.trace import KINDS, Trace, TraceError, TraceEvent

__all__ = [
    "DEFAULT_EPOCH_MS",
    "KINDS",
    "NETWORK",
    "RELAY",
    "ClockError",
    "ClockJump",
    "DeterminismUnavailable",
    "DeviceClock",
    "Latency",
    "Network",
    "NetworkError",
    "NetworkProfile",
    "Trace",
    "TraceError",
    "TraceEvent",
    "Transport",
    "deterministic_trio",
    "relay_clock",
    "run_virtual",
    "scheduler_seed",
]
