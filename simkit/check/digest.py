"""The state a world has reached, as a digest: two prefixes with the same digest lead to
the same futures, so ``simkit check`` extends only the first.

The judges are history's (an invariant remembers what it saw), so the digest holds the
history too: the trace's running hash, with virtual time, the relay's store, every
device's durable state, crash and revocation flags, clock steps, armed tripwires, the
malicious relay's modes, and how far each random source has been drawn (Trio's seeded
shuffle, each link's and each device's stream). Two different sequences reach the same
digest when the steps that differ did nothing a judge, a party or a random draw could
tell (a restart of a running device, a heal with nothing broken; not a merge with no
fork, which leaves the world as it was but the judges fewer).
A step may change the world without tracing it (the host's directory: a member's
capabilities), and a checker samples the world between steps (how long a rotation has
been owed), so the digest holds the directory and what each live judge remembers too
(``Invariant.remembers``): which judges are live says whether the relay has turned.
What it leaves out is what a task holds in memory without tracing or storing it: such a
state could differ under one digest (docs/checking.md, "Reductions").
"""

import hashlib
import json
import math

import attrs

from simkit.sim.determinism import scheduler_state


def state_digest(world, monitor, steps_left: int | None = None) -> str:
    """The digest of what the next ``steps_left`` steps (None: any) and the quiescence
    after them can depend on."""
    slots = {
        device_id: [
            slot.alive, slot.revoked, slot.stolen, slot.boots, slot.registered,
            [[jump.at, jump.step_ms] for jump in slot.clock.jumps],
            slot.device.snapshot() if slot.alive else slot.snapshot,
        ]
        for device_id, slot in sorted(world.slots.items())
    }  # fmt: skip
    state = {
        "trace": world.trace.trace_hash(),
        "events": len(world.trace),
        "now_us": round(world.now() * 1_000_000),
        "relay": world.relay.snapshot(),
        "relay_up": world.relay_up,
        "devices": slots,
        "tripwires": sorted(world.tripwires),
        "adversary": [_mode(mode) for mode in world.adversary.modes],
        "draws": _draws(world),
        "directory": world.host.to_json(),
        "judges": [[inv.name, canonical(inv.remembers(steps_left))] for inv in monitor.invariants],
    }
    text = json.dumps(state, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _draws(world) -> dict:
    """How far each random source of the world has been drawn."""

    def drawn(source) -> list | None:
        counter = getattr(source, "_counter", None)
        return None if counter is None else [counter, len(getattr(source, "_buffer", b""))]

    links = {
        device_id: [drawn(t._requests), drawn(t._pokes), t._next_xid]
        for device_id, t in sorted(world.network._transports.items())
    }
    devices = {
        device_id: drawn(slot.device.entropy)
        for device_id, slot in sorted(world.slots.items())
        if slot.device is not None
    }
    return {"trio": scheduler_state(), "links": links, "devices": devices}


def _mode(mode) -> dict:
    """A malicious mode by what it is and holds (its shadow relay's store too), never by
    its object's address: the same state reached in a copy and in a replay is one."""
    shadow = getattr(mode, "shadow", None)
    return {
        "kind": type(mode).__name__, "action": repr(mode.action),
        "served": sorted(mode.served.items()), "start": getattr(mode, "start", None),
        "shadow": shadow.snapshot() if shadow is not None else None,
    }  # fmt: skip


def canonical(value):
    """A checker's memory as JSON that two processes write alike: sets sorted, keys that
    are not strings written as text, floats to the microsecond the digest's clock keeps,
    objects by class and fields (never by address)."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool:
        return value
    if isinstance(value, dict):  # a Counter, a defaultdict too
        return {
            key if type(key) is str else repr(canonical(key)): canonical(item)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [canonical(item) for item in value]
    if isinstance(value, set | frozenset):
        return sorted((canonical(item) for item in value), key=repr)
    if isinstance(value, str | int):  # an enum's member
        return repr(value)
    if kind is float:
        return round(value, 6) if math.isfinite(value) else repr(value)
    if kind is bytes:
        return value.hex()
    if attrs.has(kind):
        return [kind.__name__, canonical(attrs.asdict(value, recurse=False))]
    if hasattr(value, "__dict__"):
        return [kind.__name__, canonical(vars(value))]
    return repr(value)
