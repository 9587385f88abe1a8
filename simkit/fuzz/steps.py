"""Doing fuzz steps: each step class of ``simkit.fuzz.actions`` and the function that
does it in a driven world.

The state machines and ``simkit replay`` apply steps through ``apply_step`` only,
so a reproducer's step list reruns exactly what the fuzzer did. Steps that are world
actions done now (a revoke, a partition) build their ``simkit.sim.spec`` action and
perform it, as a scenario's schedule would.
"""

import functools
import json

import trio

from simkit.client.blobs import ack_blob, delete_blob, download_blob, upload_blob
from simkit.errors import SimkitError
from simkit.fuzz import actions as A
from simkit.fuzz import rogue
from simkit.fuzz.actions import StepError, parse_step
from simkit.fuzz.params import CAPABILITIES, GROUP, KINDS, MEMBERS, WorldParams
from simkit.protocol.ids import graph_id_for
from simkit.sim import spec as S
from simkit.sim.forge import (
    BROKEN,
    false_checkpoint,
    forged_grant,
    forged_op,
    malformed_op,
    newer_op,
)
from simkit.sim.parties import Tripwire
from simkit.sim.schedule import perform_now
from simkit.sim.workload import AppWrite, plaintext

__all__ = ["MEMBERS", "StepError", "WorldParams", "apply_step"]


def apply_step(driver, step: "A.Step | dict", index: int) -> None:
    """Do one step in the driven world (and wait until it settles). A JSON object is
    read as a step first (``parse_step``: refused with a ``StepError`` if it reads wrongly)."""
    step = parse_step(step, f"step {index}")
    try:
        DO[type(step)](driver, step, index)
    except Exception as exc:
        if exc is driver.failure:  # the world failed during the step
            exc.add_note(f"during fuzz step {index}: {json.dumps(step.to_json())}")
        elif isinstance(exc, KeyError):  # the step names what the world does not have
            raise StepError(f"step {index} ({step.RULE}): {exc} is not in this world") from None
        raise


# -- the application's users -------------------------------------------------------------


def _write(driver, step, index) -> None:
    world = driver.world
    driver.do(world.apply, step.device, _app_write(world, step.device, step, index))
    if step.again:
        driver.do(_edit_again, world, step, index)


def _edit_again(world, step, index: int) -> None:
    """The user edits the record again ``step.again`` seconds later (client rule 1: a
    write while the push of the one before may be in flight), if the device still runs."""

    def edit() -> None:
        if world.slots[step.device].device is not None:
            world.apply(step.device, _app_write(world, step.device, step, index + 1_000_000))

    world.network.call_at(trio.current_time() + step.again, edit)


def _concurrent(driver, step, index) -> None:
    """Two devices write one record at the same instant (equal revs are likely)."""
    world = driver.world
    for device_id in step.devices:
        driver.do(world.apply, device_id, _app_write(world, device_id, step, index))


def _burst(driver, step, index) -> None:
    """Many new records at once, enough to cross a checkpoint boundary (64 seqs)."""
    world = driver.world
    slot = world.slots[step.device]
    graph_id = graph_id_for(step.graph, slot.member)

    def burst():
        for i in range(step.count):
            data = plaintext(step.device, index * 1000 + i, 16)
            world.apply(step.device, AppWrite(graph_id, f"x{index}-{i}", "create", "note", data))

    driver.do(burst)


def _app_write(world, device_id: str, step, index: int) -> AppWrite:
    slot = world.slots[device_id]
    graph_id = graph_id_for(step.graph, slot.member)
    held = slot.device.get(graph_id, step.record)
    kind = held["kind"] if held else KINDS.get(step.record, "note")
    deletes = getattr(step, "op", None) == "delete"
    op = "delete" if deletes and held else "edit" if held else "create"
    data = {} if op == "delete" else plaintext(device_id, index, 16)
    return AppWrite(graph_id, step.record, op, kind, data)


def _refresh(driver, step, index) -> None:
    _press_sync_now(driver, step.devices)


def _press_sync_now(driver, device_ids) -> None:
    """Users press "sync now" on ``device_ids``; each device's model is told (an input)."""
    world = driver.world
    if world.device_oracle is not None:
        for device_id in device_ids:
            world.device_oracle.sync_now(device_id)
    driver.run(_sync_now, [world.slots[d].device for d in device_ids])


async def _sync_now(devices) -> None:
    """Users press "sync now" on several devices at the same instant."""
    async with trio.open_nursery() as nursery:
        for device in devices:
            if device is not None:
                nursery.start_soon(functools.partial(device.sync, full=True))


def _pair(driver, step, index) -> None:
    """A human compares the pairing codes the two devices show: approve when they
    match, reject when they differ (keys substituted on the way)."""
    world = driver.world
    holder, new = world.slots[step.by].device, world.slots[step.device].device
    if holder is None or holder.store.get("seen", step.device) is None:
        return
    shown = holder.pairing_code_of(step.device)
    code = new.pairing_code() if new is not None else None
    for device_id, seen in ((step.by, shown), (step.device, code)):
        if seen is not None:
            world.channels.code_shown(device_id, seen)  # read out by the user
    same = code is not None and shown == code
    _perform(driver, (S.Approve if same else S.Reject)(step.by, step.device, driver.now()))


def _forge(driver, step, index) -> None:
    """A member's buggy or malicious client pushes one sealed record that breaks a
    receive rule (client rule 2): every receiver must refuse it, never apply it. Or
    (``how: wrap``) it fills another device's key gap with a wrap that device cannot
    open (client rule 12: discarded and granted again): of the latest epoch, or
    (``gap: oldest``) of the oldest epoch a device lacks, so that a device meets an
    unopenable wrap below the latest."""
    world = driver.world
    slot = world.slots[step.device]
    if slot.device is None:
        return
    graph_id = graph_id_for(step.graph, slot.member)
    sk = slot.device.storage_key(graph_id)

    async def send():
        with world.foreign.client(step.device) as stamped:
            await forge(stamped)

    async def forge(stamped):
        op = None
        if step.how == "wrap":
            gap = _gap(world, sk, step.device, step.gap or "latest")
            request = gap and forged_grant(slot.device, graph_id, *gap)
            if gap is not None:
                world.ledger.forge_grant(sk, gap[1], gap[0])
        else:
            op = forged_op(slot.device, graph_id, step.record, step.how, step.op == "delete")
            stamped()
            request = op and ("POST", f"/graphs/{graph_id}/push", {"ops": [op]})
            if op is not None:
                world.ledger.forge(sk, op, BROKEN[step.how])
                _forged(world, step, graph_id, op)
        if request is None:
            return
        try:
            await slot.device.request(*request)
        except SimkitError as exc:
            world.note("event", step.device, name="app.forge-failed", detail=str(exc))

    driver.run(world.on_device, step.device, send)


def _forged(world, step, graph_id: str, op: dict) -> None:
    """Trace what a non-conforming client is about to push: a report's evidence starts
    from this cause, not from the receiver that fell for it."""
    world.note("event", step.device, name="forged.write", graph=graph_id, client=step.RULE,
               recordId=op["recordId"], rev=op["rev"])  # fmt: skip


def _malformed(driver, step, index) -> None:
    """A member's non-conforming client pushes a record with one malformation of the
    spec's tables: an invalid one is a forgery every receiver must refuse (ledgered as
    one), a valid one a record every receiver applies."""
    world = driver.world
    slot = world.slots[step.device]
    if slot.device is None:
        return
    graph_id = graph_id_for(step.graph, slot.member)
    sk = slot.device.storage_key(graph_id)

    async def send():
        if _behind(world, slot.device, graph_id):
            return
        with world.foreign.client(step.device) as stamped:
            made = malformed_op(slot.device, graph_id, step.record, step.what)
            stamped()
            if made is None:
                return
            op, valid = made
            world.coverage.add([f"malformed {step.what}"])
            if not valid:
                world.ledger.forge(sk, op, f"it is malformed: {step.what}")
                _forged(world, step, graph_id, op)
            else:  # a record every receiver applies: another client's write, as ``newer``
                world.note("event", step.device, name="other.write", graph=graph_id,
                           client=step.RULE, recordId=op["recordId"], rev=op["rev"])  # fmt: skip
            try:
                await slot.device.request("POST", f"/graphs/{graph_id}/push", {"ops": [op]})
            except SimkitError as exc:
                world.note("event", step.device, name="app.forge-failed", detail=str(exc))

    driver.run(world.on_device, step.device, send)


def _behind(world, device, graph_id: str) -> bool:
    """Whether the device lacks the graph's latest key: a client (even one that breaks a
    message) holds its writes until it has it, so a record it seals is never a leak to
    a device revoked before the rotation (found by the fuzzer: a valid malformed record
    sealed under the epoch a revoked device held)."""
    graphs = world.relay.state.graphs if world.relay is not None else {}
    graph = graphs.get(device.storage_key(graph_id))
    held = device.keyring(graph_id).keys
    return graph is not None and graph.latest_epoch > max(held, default=0)


def _other_client(driver, step, make) -> None:
    """Another client of the device's member pushes the op ``make(device, graph_id)``
    builds (None: nothing to push), with the device's key and credential."""
    world = driver.world
    slot = world.slots[step.device]
    if slot.device is None:
        return
    graph_id = graph_id_for(step.graph, slot.member)

    async def push():
        if _behind(world, slot.device, graph_id):
            return
        with world.foreign.client(step.device) as stamped:
            op = make(slot.device, graph_id)
            stamped()
            if op is None:
                return
            world.note("event", step.device, name="other.write", graph=graph_id, client=step.RULE,
                       recordId=op["recordId"], rev=op["rev"])  # fmt: skip
            try:
                await slot.device.request("POST", f"/graphs/{graph_id}/push", {"ops": [op]})
            except SimkitError as exc:
                world.note("event", step.device, name="app.other-client-failed", detail=str(exc))

    driver.run(world.on_device, step.device, push)


def _false_checkpoint(driver, step, index) -> None:
    """A checkpoint no receiver may believe (docs/adversary.md): for another member's
    device in its derived slot, or for a device of the writer's member in another
    device's slot."""
    world = driver.world
    member = world.slots[step.device].member
    others = [d for d in world.followers(step.graph) if d != step.device]
    if step.of == "other-member":
        strangers = [d for d in others if world.slots[d].member != member]
        if not strangers:
            return
        claimed = slot_of = strangers[0]
    else:
        own = [d for d in others if world.slots[d].member == member] or [step.device]
        claimed, slot_of = own[0], next((d for d in others if d != own[0]), None)
        if slot_of is None:
            return
    _other_client(driver, step, lambda d, g: false_checkpoint(d, g, claimed, slot_of))


def _newer(driver, step, index) -> None:
    _other_client(driver, step, lambda d, g: newer_op(d, g, step.record))


def _reimport(driver, step, index) -> None:
    """A recovery bundle imported on a device with a history (it wipes its store)."""
    world, device, source = driver.world, step.device, step.source
    driver.run(world.on_device, device, lambda: world.parties.reimport(device, source))


def _gap(world, sk: str, forger: str, which: str) -> tuple[str, int] | None:
    """A key gap a grant may fill, as (device, epoch): the first active device of the
    graph's current members, other than the forger, lacking the latest epoch
    (``latest``) or any epoch, then its oldest missing one (``oldest``)."""
    graph = world.relay.state.graphs.get(sk)
    if graph is None or not graph.latest_epoch:
        return None
    wanted = [graph.latest_epoch] if which == "latest" else range(1, graph.latest_epoch + 1)
    for device in world.relay.eligible(sk):
        for epoch in wanted:
            if device.device_id != forger and device.device_id not in graph.wraps.get(epoch, {}):
                return device.device_id, epoch
    return None


# -- blobs ---------------------------------------------------------------------------------


def _blob_call(driver, step, call) -> None:
    """Run a blob call on a device; a refusal is the application's to handle (traced)."""
    world = driver.world
    slot = world.slots[step.device]
    if slot.device is None:
        return
    graph_id = graph_id_for(step.graph, slot.member)

    async def attempt():
        try:
            await call(slot.device, graph_id)
        except SimkitError as exc:
            world.note(
                "event", step.device, name="app.blob-failed", blob=step.blob, detail=str(exc)
            )

    driver.run(world.on_device, step.device, attempt)


def _blob_upload(driver, step, index) -> None:
    blob = step.blob
    data = b"blob:" + blob.encode()

    async def call(device, graph_id):
        await upload_blob(device, graph_id, blob, data, step.policy, step.ttl)

    _blob_call(driver, step, call)


def _blob_fetch(driver, step, index) -> None:
    async def call(device, graph_id):
        await download_blob(device, graph_id, step.blob)
        if step.ack:
            await ack_blob(device, graph_id, step.blob)

    _blob_call(driver, step, call)


def _blob_delete(driver, step, index) -> None:
    async def call(device, graph_id):
        await delete_blob(device, graph_id, step.blob)

    _blob_call(driver, step, call)


def _rogue(driver, step, index) -> None:
    driver.run(driver.world.foreign.send_raw, rogue.decode(step.request))


def _sweep(driver, step, index) -> None:
    """The one external job that sweeps when the built-in sweeper is off (interval 0)."""
    world = driver.world
    if world.relay_up:
        driver.do(world.sweep)


# -- the directory -------------------------------------------------------------------------


def _capability(driver, step, index) -> None:
    """The host changes what a member may do in the group (read-only, no rotate, all)."""
    driver.do(driver.world.host.set_capabilities, step.member, GROUP, CAPABILITIES[step.may])


# -- faults, ceremonies, the adversary ---------------------------------------------------


def _heal(driver, step, index) -> None:
    driver.do(driver.world.network.heal)


def _restart(driver, step, index) -> None:
    driver.do(driver.world.parties.restart, step.device)


def _merge(driver, step, index) -> None:
    """The relay stops its oldest malicious mode (a fork meets the honest history)."""
    adversary = driver.world.adversary
    if adversary.modes:
        driver.do(adversary.switch_off, adversary.modes[0])


def _interrupt(driver, step, index) -> None:
    """Arm a crash or a partition on the ceremony's device right before (or after) its
    k-th request, then run the ceremony: it stops between two of its steps."""
    world, ceremony = driver.world, step.ceremony
    device_id = ceremony.creates() or ceremony.by

    def fire():
        action = type(ceremony.action(0)).__name__
        world.note(
            "fault",
            "schedule",
            name="Interrupt",
            action=action,
            fault=step.fault,
            requests=step.requests,
            before=step.before,
        )
        if step.fault == "crash":
            world.parties.crash(device_id)
        else:
            world.network.partition([device_id], until=trio.current_time() + 60)

    world.tripwires[device_id] = Tripwire(step.requests, step.before, fire)
    try:
        apply_step(driver, ceremony, index)
    finally:
        world.tripwires.pop(device_id, None)


def _rotate_race(driver, step, index) -> None:
    """Two devices rotate one graph at the same instant: one mints the epoch, the
    other's post is taken as a grant (docs/findings.md, F1), and each must adopt what
    the relay holds (client rule 13), not the key it sent."""
    now = driver.now()

    async def both():
        async with trio.open_nursery() as nursery:
            for device_id in step.devices:
                rotate = S.Rotate(device_id, step.graph, now)
                nursery.start_soon(perform_now, driver.world, rotate)

    driver.run(both)


def _perform(driver, action) -> None:
    driver.run(perform_now, driver.world, action)


def _act(driver, step, index) -> None:
    """A world action done now (``simkit.sim.spec``), as a scenario's schedule does it."""
    _perform(driver, step.action(driver.now()))
    if getattr(step, "announce", False):  # the app tells every online device to sync now
        _press_sync_now(driver, sorted(driver.world.slots))


DO = {
    A.Advance: lambda driver, step, index: driver.advance(step.seconds),
    A.Write: _write,
    A.Concurrent: _concurrent,
    A.Burst: _burst,
    A.Refresh: _refresh,
    A.Pair: _pair,
    A.BlobUpload: _blob_upload,
    A.BlobFetch: _blob_fetch,
    A.BlobDelete: _blob_delete,
    A.Sweep: _sweep,
    A.Capability: _capability,
    A.Heal: _heal,
    A.Restart: _restart,
    A.Merge: _merge,
    A.Interrupt: _interrupt,
    A.Forge: _forge,
    A.Malformed: _malformed,
    A.FalseCheckpoint: _false_checkpoint,
    A.Newer: _newer,
    A.Reimport: _reimport,
    A.Rogue: _rogue,
    A.RotateRace: _rotate_race,
    **{
        cls: _act
        for cls in (
            A.Link, A.Approve, A.Reject, A.Revoke, A.Steal, A.Rotate, A.Recover, A.Invite,
            A.Join, A.Leave, A.Partition, A.Crash, A.RelayCrash, A.Errors, A.Jump, A.Adversary,
            A.Upgrade,
        )
    },
}  # fmt: skip
"""What each step class does (every class of ``simkit.fuzz.actions.STEPS``)."""
