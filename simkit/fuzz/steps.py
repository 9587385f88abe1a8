"""Fuzz steps: world actions as plain JSON data.

The state machines and ``simkit replay`` apply steps through ``apply_step`` only,
so a reproducer's step list reruns exactly what the fuzzer did.
"""

import functools
import json

import attrs
import trio

from simkit.errors import InputError
from simkit.protocol.ids import graph_id_for
from simkit.sim import spec as S
from simkit.sim.network import NetworkProfile
from simkit.sim.schedule import perform_now
from simkit.sim.workload import Write, plaintext

MEMBERS = {"alice": ("a1", "a2"), "bob": ("b1", "b2"), "carol": ("c1",)}
GRAPHS = ("g:team", "u:alice", "d:alice:bob")
RECORDS = ("r0", "r1", "r2", "r3")


class StepError(InputError):
    """A step names an unknown rule or misses a field."""


@attrs.frozen
class WorldParams:
    """What a fuzz world is, besides its steps (all JSON in a reproducer)."""

    seed: int
    approval_mode: str = "observe"
    max_offset_ms: int = 0
    request_loss: float = 0.0
    response_loss: float = 0.0

    def spec(self) -> S.WorldSpec:
        return S.WorldSpec(
            seed=self.seed,
            devices=MEMBERS,
            groups={"team": tuple(MEMBERS)},
            graphs=GRAPHS,
            clocks=S.ClockSpec(max_offset_ms=self.max_offset_ms),
            network=NetworkProfile(
                request_loss=self.request_loss, response_loss=self.response_loss
            ),
            duration_s=0,
            drain_s=600,
            approval_mode=self.approval_mode,
        )

    def to_json(self) -> dict:
        return attrs.asdict(self)


def apply_step(driver, step: dict, index: int) -> None:
    """Do one step in the driven world (and wait until it settles)."""
    world, rule = driver.world, step.get("rule")
    now = driver.now()
    try:
        if rule == "advance":
            driver.advance(step["seconds"])
        elif rule == "write":
            driver.do(world.apply, step["device"], _write(world, step, index))
        elif rule == "concurrent":
            for device_id in step["devices"]:
                driver.do(
                    world.apply, device_id, _write(world, {**step, "device": device_id}, index)
                )
        elif rule == "refresh":
            driver.run(_refresh, [world.slots[d].device for d in step["devices"]])
        elif rule == "heal":
            driver.do(world.network.heal)
        elif rule == "restart":
            driver.do(world.restart, step["device"])
        elif rule in _ACTIONS:
            driver.run(perform_now, world, _ACTIONS[rule](step, now))
            if step.get("announce"):  # the app tells every online device to sync now
                driver.run(_refresh, [s.device for _, s in sorted(world.slots.items())])
        else:
            raise StepError(f"step {index}: unknown rule {rule!r}")
    except Exception as exc:
        if exc is not driver.failure:  # the step, not the world, is wrong
            if isinstance(exc, KeyError):
                raise StepError(f"step {index} ({rule}): missing field {exc}") from None
            raise
        exc.add_note(f"during fuzz step {index}: {json.dumps(step)}")
        raise


async def _refresh(devices) -> None:
    """Users press "sync now" on several devices at the same instant."""
    async with trio.open_nursery() as nursery:
        for device in devices:
            if device is not None:
                nursery.start_soon(functools.partial(device.sync, full=True))


def _write(world, step: dict, index: int) -> Write:
    slot = world.slots[step["device"]]
    graph_id = graph_id_for(step["graph"], slot.member)
    held = slot.device.get(graph_id, step["record"])
    kind = held["kind"] if held else "note"
    op = "delete" if step.get("op") == "delete" and held else "edit" if held else "create"
    data = {} if op == "delete" else plaintext(step["device"], index, 16)
    return Write(graph_id, step["record"], op, kind, data)


_ACTIONS = {
    "link": lambda s, now: S.LinkDevice(s["member"], s["device"], now),
    "approve": lambda s, now: S.Approve(s["by"], s["device"], now),
    "reject": lambda s, now: S.Reject(s["by"], s["device"], now),
    "revoke": lambda s, now: S.Revoke(s["by"], s["device"], now),
    "steal": lambda s, now: S.Steal(s["by"], s["device"], now),
    "rotate": lambda s, now: S.Rotate(s["by"], s["graph"], now),
    "recover": lambda s, now: S.Recover(s["member"], s["device"], s["source"], now),
    "partition": lambda s, now: S.Partition(tuple(s["devices"]), now, now + s["seconds"]),
    "crash": lambda s, now: S.CrashDevice(s["device"], now, restart_after=None),
    "relay-crash": lambda s, now: S.CrashRelay(now, now + s["seconds"]),
    "errors": lambda s, now: S.ErrorBurst(s["status"], now, now + s["seconds"]),
    "jump": lambda s, now: S.ClockStep(s["device"], now, s["ms"]),
    "adversary": lambda s, now: S.Adversary(s["mode"], now, tuple(s["targets"]), s["params"]),
}
