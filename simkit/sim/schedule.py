"""Scheduled actions: faults, ceremonies and adversary switches, performed at their time."""

import json

import attrs

from simkit.errors import SimkitError
from simkit.protocol.ids import graph_id_for, storage_key
from simkit.protocol.keyring import open_invite, open_recovery_bundle, parse_invite
from simkit.protocol.messages import BOX_MALFORMATIONS, INVITE_MALFORMATIONS
from simkit.sim import spec as S
from simkit.sim.adversary import ThiefDevice

PASSPHRASE = "simulated passphrase"


def perform(world, action) -> None:
    """Do ``action`` now (from the network's timer at ``action.at``); a ceremony it
    starts runs as its own task."""
    ceremony = _start(world, action)
    if ceremony is not None:
        world.spawn(ceremony)


async def perform_now(world, action) -> None:
    """Do ``action`` now and wait for its ceremony to finish (a fuzzer's step)."""
    ceremony = _start(world, action)
    if ceremony is not None:
        await ceremony()


def _start(world, action):
    name = type(action).__name__
    world.note("fault" if name in _FAULTS else "event", "schedule", name=name, **_fields(action))
    started = _HANDLERS[type(action)](world, action)
    if started is None:
        return None
    device_id, ceremony = started

    async def reported():
        """A ceremony runs on its device (a crash stops it there, and that is noted);
        one the relay refused or could not be reached for is reported, not fatal."""
        try:
            await world.on_device(device_id, ceremony)
        except SimkitError as exc:
            world.note("event", "schedule", name="ceremony.failed", action=name, detail=str(exc))
        else:
            if not world.slots[device_id].alive:
                world.note("event", "schedule", name="ceremony.interrupted", action=name)

    return reported


_FAULTS = {
    "Partition", "CrashDevice", "CrashRelay", "ErrorBurst", "ClockStep", "Adversary", "Steal",
}  # fmt: skip


def _fields(action) -> dict:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in attrs.asdict(action).items()}


def _partition(world, a: S.Partition) -> None:
    world.network.partition(a.devices, until=a.until)


def _crash_device(world, a: S.CrashDevice) -> None:
    world.parties.crash(a.device)
    if a.restart_after is not None:
        world.network.call_at(a.at + a.restart_after, world.parties.restart, a.device)


def _crash_relay(world, a: S.CrashRelay) -> None:
    world.parties.crash_relay(a.until)


def _error_burst(world, a: S.ErrorBurst) -> None:
    world.network.error_window(a.status, until=a.until, route=a.route)


def _clock_step(world, a: S.ClockStep) -> None:
    world.step_clock(a.device, a.at, a.step_ms)


def _link(world, a: S.LinkDevice) -> None:
    slot = world.new_slot(a.member, a.device)
    slot.self_sig = a.self_sig

    async def ceremony():
        await world.bring_online(slot)

    return a.device, ceremony


def _on_device(world, device_id: str):
    slot = world.slots.get(device_id)
    return slot.device if slot is not None and slot.alive else None


def _approve(world, a: S.Approve) -> None:
    device = _on_device(world, a.by)
    if device is not None and device.store.get("seen", a.device) is not None:
        device.approve(a.device)
        world.ledger.approve(a.by, a.device)
        device.wake()


def _reject(world, a: S.Reject) -> None:
    device = _on_device(world, a.by)
    if device is not None:
        device.reject(a.device)
        world.ledger.refuse(a.by, a.device)


def _revoke(world, a: S.Revoke) -> None:
    device = _on_device(world, a.by)
    if device is None:
        return None

    async def ceremony():
        await device.revoke(a.device)  # the world retires the device once the relay revokes

    return a.by, ceremony


def _steal(world, a: S.Steal) -> None:
    device = _on_device(world, a.by)
    if device is None or world.slots[a.device].device is None:
        return
    world.slots[a.device].stolen = True  # revoked once the relay says so
    world.adversary.switch_on(S.Adversary("accept-revoked", at=a.at, targets=(a.device,)))

    async def theft():
        await device.revoke(a.device)
        if world.slots[a.device].revoked:
            world.parties.crash(a.device)
            world.parties.restart(a.device, ThiefDevice)

    return a.by, theft


def _rotate(world, a: S.Rotate) -> None:
    device = _on_device(world, a.by)
    if device is not None:
        graph_id = graph_id_for(a.graph, device.member_id)

        async def ceremony():
            await device.rotate(graph_id)

        return a.by, ceremony


def _recover(world, a: S.Recover) -> None:
    source = _on_device(world, a.source)
    if source is None:
        return
    bundle = source.recovery_bundle(PASSPHRASE)
    world.channels.bundle_made(PASSPHRASE, bundle)
    made, sound = bundle, a.malformed is None or BOX_MALFORMATIONS[a.malformed].valid
    if a.malformed is not None:
        bundle = json.loads(BOX_MALFORMATIONS[a.malformed].text(bundle))
        world.coverage.add([f"malformed {a.malformed}"])
    slot = world.new_slot(a.member, a.device)

    async def ceremony():
        # a conforming device adopts nothing from a broken bundle
        rings = open_recovery_bundle(PASSPHRASE, made) if sound else {}
        try:
            with world.parties.importing(slot, rings, wipe=True):
                await slot.device.import_bundle(bundle, PASSPHRASE)
        except SimkitError as exc:
            if sound:
                raise
            # refused, as it must be: the new machine registers without keys and waits
            # for them as a linked device does
            world.note("event", a.device, name="app.import-refused", detail=str(exc))
        await world.bring_online(slot)

    return a.device, ceremony


def _invite(world, a: S.Invite) -> None:
    inviter = _on_device(world, a.by)
    if inviter is None:
        return
    invite, box = inviter.invite(graph_id_for(a.graph, inviter.member_id))
    door, secret = parse_invite(invite)
    world.channels.to_host(door, box, secret)  # the invitee is handed the invite alone
    world.host.join(a.graph.partition(":")[2], a.member)
    slot = world.new_slot(a.member, a.device)
    given, handed, sound = invite, box, True
    if a.malformed in BOX_MALFORMATIONS:  # the box the host hands back
        handed = json.loads(BOX_MALFORMATIONS[a.malformed].text(box))
        sound = BOX_MALFORMATIONS[a.malformed].valid
    elif a.malformed is not None:  # the string the invitee was given
        given, sound = INVITE_MALFORMATIONS[a.malformed](invite), False
    if a.malformed is not None:
        world.coverage.add([f"malformed invite {a.malformed}"])

    async def ceremony():
        graph_id, ring = open_invite(invite, box)
        rings = {storage_key(graph_id, a.member): ring} if sound else {}
        try:
            with world.parties.importing(slot, rings, wipe=False):
                slot.device.accept_invite(given, handed)  # only the door code went to the host
        except SimkitError as exc:
            if sound:
                raise
            # refused, as it must be: the new member's device waits for a grant instead
            world.note("event", a.device, name="app.invite-refused", detail=str(exc))
        await world.bring_online(slot)

    return a.device, ceremony


def _join(world, a: S.Join) -> None:
    world.host.join(a.group, a.member)
    for slot in world.alive():
        if slot.member == a.member:
            world.subscribe(slot)
            slot.device.wake()


def _leave(world, a: S.Leave) -> None:
    world.host.leave(a.group, a.member)


def _adversary(world, a: S.Adversary) -> None:
    world.adversary.switch_on(a)


def _upgrade(world, a: S.Upgrade) -> None:
    world.parties.upgrade(a.target)


_HANDLERS = {
    S.Partition: _partition,
    S.CrashDevice: _crash_device,
    S.CrashRelay: _crash_relay,
    S.ErrorBurst: _error_burst,
    S.ClockStep: _clock_step,
    S.LinkDevice: _link,
    S.Approve: _approve,
    S.Reject: _reject,
    S.Revoke: _revoke,
    S.Steal: _steal,
    S.Rotate: _rotate,
    S.Recover: _recover,
    S.Invite: _invite,
    S.Join: _join,
    S.Leave: _leave,
    S.Adversary: _adversary,
    S.Upgrade: _upgrade,
}
