"""The parties of a world as the world runs them: each device's slot and its link to
the network (with the tripwire that cuts a ceremony), and what happens to a party
as a whole: a crash, a restart, the relay going down and coming back, an upgrade to
a release's new version (``World.parties``)."""

import contextlib
from collections.abc import Callable
from urllib.parse import unquote

import attrs
import trio

from simkit.client import Device
from simkit.errors import SimkitError, TransportError
from simkit.protocol.entropy import SeededEntropy
from simkit.protocol.keyring import open_recovery_bundle
from simkit.relay import Relay
from simkit.sim.clock import DEFAULT_EPOCH_MS, DeviceClock, relay_clock
from simkit.sim.exercise import counted
from simkit.sim.ledger import Upgrade, persisted
from simkit.sim.network import RELAY
from simkit.sim.schedule import PASSPHRASE
from simkit.sim.variant import Variant


@attrs.define
class DeviceSlot:
    """A device as the world sees it: alive or crashed, and how many times it booted."""

    device_id: str
    member: str
    clock: DeviceClock
    entropy: SeededEntropy
    device: Device | None = None
    snapshot: dict | None = None
    boots: int = 0
    scopes: list[trio.CancelScope] = attrs.Factory(list)  # everything this device is running
    revoked: bool = False
    stolen: bool = False  # revoked, but a thief keeps it running
    registered: bool = False  # the relay has its keys (a crash may come first)
    self_sig: bool = True  # False: an older client, which registers without selfSig
    born: float = 0.0  # when it joined the fleet (virtual time)
    left: float | None = None  # when it was revoked
    # while a recovery bundle is imported on it: the writes made meanwhile (the import
    # waits for a sync run in progress, then wipes the store, and them with it)
    importing: list | None = None

    @property
    def alive(self) -> bool:
        return self.device is not None


@attrs.define
class Tripwire:
    """A fault armed on a device's link: right ``before`` (or after) its ``requests``-th
    request from now, ``fire`` runs (a crash, a partition). It cuts a ceremony
    between two of its steps, at every commit point the request count can name."""

    requests: int
    before: bool
    fire: Callable[[], None]


class Link:
    """A device's transport as the world hands it out: the network's, plus the
    tripwire. A fired crash cancels the device's scopes; the checkpoint right after
    delivers that cancellation here, as a dying process stops where it is."""

    def __init__(self, world, device_id: str) -> None:
        self._world = world
        self._tripwires = world.tripwires
        self._device_id = device_id
        self._transport = world.network.transport(device_id)
        self._oracle = world.device_oracle

    async def _trip(self, before: bool) -> None:
        wire = self._tripwires.get(self._device_id)
        if wire is None or wire.before != before:
            return
        wire.requests -= 1
        if wire.requests <= 0:
            del self._tripwires[self._device_id]
            wire.fire()
            await trio.lowlevel.checkpoint()

    async def send(self, request, /, **fields):
        await self._trip(before=True)
        oracle, world = self._oracle, self._world
        # what leaves the device for the relay, for ``secrecy`` (a rogue's raw requests
        # take another transport: they left no device and hold nothing a device has)
        world.channels.to_relay(self._device_id, request)
        if oracle is not None:
            oracle.sent(self._device_id, request)
        foreign = world.foreign.running()
        if foreign:  # the relay side may ask (``World.foreign.sent``)
            world.foreign.requests[id(request)] = request
        pushed = request.method == "POST" and request.path.endswith("/push")
        records = world.situations.push_sent(self._device_id, request.body) if pushed else ()
        try:
            response = await self._transport.send(request, **fields)
        except TransportError:
            if oracle is not None:
                oracle.lost(self._device_id, request)
            raise
        finally:
            if foreign:
                del world.foreign.requests[id(request)]
            if records:
                world.situations.push_done(self._device_id, records)
        await self._trip(before=False)
        if oracle is not None:
            oracle.received(self._device_id, request, response)
        if request.method == "GET" and request.path.endswith("/pull") and response.status == 200:
            self._served(request, response)
        return response

    def _served(self, request, response) -> None:
        """What a pull answer handed the device, for the judges that must not take its
        events on trust (``Ledger.serve``)."""
        slot = self._world.slots.get(self._device_id)
        if slot is None or slot.device is None:
            return
        try:
            sk = slot.device.storage_key(unquote(request.path.split("/")[2]))
            answer = response.json()
        except (SimkitError, IndexError):
            return
        self._world.ledger.serve(self._device_id, sk, answer, len(self._world.trace))


class Parties:
    """Crashes, restarts and upgrades of a world's devices and relay."""

    def __init__(self, world) -> None:
        self.world = world
        self._relay_outage = 0
        self._relay_back_at = 0.0

    def crash(self, device_id: str) -> None:
        slot = self.world.slots[device_id]
        if not slot.alive:
            return
        slot.snapshot = slot.device.snapshot()
        slot.device = None
        self.world.tripwires.pop(device_id, None)
        for scope in slot.scopes:
            scope.cancel()
        if self.world.device_oracle is not None:
            self.world.device_oracle.crashed(device_id)
        self.world.note("crash", device_id, what="device-crash")

    def restart(self, device_id: str, device_class: type[Device] | None = None) -> None:
        """Boot a crashed device from its snapshot (as ``device_class``, e.g. a thief's)."""
        slot = self.world.slots[device_id]
        if slot.alive:
            return
        slot.boots += 1
        device_class = device_class or self.party_class(self.version_of(device_id), "device")
        slot.device = device_class.restore(
            slot.snapshot, Link(self.world, device_id), slot.clock,
            slot.entropy.fork(f"boot{slot.boots}"), self.world.config, self.world._device_event,
        )  # fmt: skip
        if self.world.device_oracle is not None:
            self.world.device_oracle.attach(slot)
        self.world.note("crash", device_id, what="device-restart", boot=slot.boots)
        if not slot.registered:  # it crashed before the relay had its keys: the app retries
            w = self.world
            w._nursery.start_soon(w.on_device, device_id, lambda: w.bring_online(slot))
            return
        self.world.subscribe(slot)
        self.world._start(slot)

    def crash_relay(self, until: float) -> None:
        """The relay is down until ``until``; a crash during an outage extends it."""
        self._relay_outage += 1
        self._relay_back_at = max(until, self._relay_back_at if not self.world.relay_up else until)
        if self.world.relay_up:
            self.world.network.crash_relay(until=None)
            self.world.relay_up = False
            self.world.note("crash", RELAY, what="relay-crash")
        self.world.network.call_at(self._relay_back_at, self._restart_relay, self._relay_outage)

    def _restart_relay(self, outage: int) -> None:
        """Restart from what the relay had committed when it went down (it served
        nothing since), unless a later crash extended the outage."""
        if outage != self._relay_outage or self.world.relay_up:
            return
        self._restore_relay()
        self.world.network.restart_relay(self.world._serve)
        self.world.relay_up = True
        self.world.note("crash", RELAY, what="relay-restart")

    def _restore_relay(self) -> None:
        """The relay starts again from its store, as the version it now runs."""
        self.world.relay = self.party_class(self.relay_version, "relay").restore(
            self.world.host, relay_clock(DEFAULT_EPOCH_MS), self.world.relay.snapshot(),
            on_event=self.world._relay_event, **self.world.spec.relay_settings,
        )  # fmt: skip
        if self.world.relay_oracle is not None:
            self.world.relay_oracle.restarted(self.world.relay, self.relay_version)

    def note_version(self, party: str) -> None:
        """The version a party starts on, and whether it is the release's base or new one."""
        version, role = self.version_of(party).name, self.world.versions.role(party)
        self.world.note("event", party, name="version", version=version, role=role)

    def party_class(self, version: Variant, role: str) -> type:
        """The class a party of ``version`` runs (``role``: relay or device); the
        change's own (the world's variant) counts the methods it overrides."""
        cls, base = (version.relay, Relay) if role == "relay" else (version.device, Device)
        return counted(cls, base) if version is self.world.variant else cls

    def version_of(self, party: str) -> Variant:
        """The version a device (or ``relay``) runs now."""
        return self.world.versions.of(party)

    @property
    def relay_version(self) -> Variant:
        return self.version_of(RELAY)

    def upgrade(self, target: str) -> None:
        """``target`` (a device ID, or ``relay``) moves to the new version: a running
        device restarts into it from its own persisted state (a crashed one boots into
        it when it restarts); the relay restarts from its store under the new class (a
        relay that is down comes back as it). Already on it: nothing happens."""
        if not self.world.versions.move(target):
            return
        self.world.note("event", target, name="version.upgrade", version=self.world.variant.name)
        if target == RELAY:
            self.world.ledger.dropped_exclusions.clear()  # the new relay may know ``excluding``
            if self.world.relay_up:  # the network reaches ``self.world.relay`` through ``_serve``
                before = self.world.relay.snapshot()
                self._restore_relay()
                self._upgraded(RELAY, before, self.world.relay.snapshot())
            return
        slot = self.world.slots[target]
        if slot.alive and not slot.stolen:
            before = persisted(slot.device)
            self.crash(target)
            self.restart(target)
            self._upgraded(target, before, persisted(slot.device))

    def _upgraded(self, party: str, before: dict, after: dict) -> None:
        self.world.ledger.upgrades.append(Upgrade(party, before, after, len(self.world.trace)))

    @contextlib.contextmanager
    def importing(self, slot: DeviceSlot, keyrings: dict, wipe: bool):
        """A device imports keyrings (a recovery bundle: ``wipe``; an invite): the device
        model may see those keys adopted."""
        if self.world.device_oracle is not None:
            self.world.device_oracle.importing(slot, keyrings, wipe)
        yield
        if self.world.device_oracle is not None:
            self.world.device_oracle.imported(slot)

    async def reimport(self, device_id: str, source_id: str) -> None:
        """The user imports ``source``'s recovery bundle on a device with a history:
        importing first wipes its local record store (spec: Ceremonies, Recover); the
        writes it still held queued are gone with it (traced, so no invariant owes them)."""
        slot, source = self.world.slots[device_id], self.world.slots[source_id].device
        if slot.device is None or source is None:
            return
        bundle = source.recovery_bundle(PASSPHRASE)
        self.world.channels.bundle_made(PASSPHRASE, bundle)
        wiped = [
            [graph_id, record_id]
            for graph_id in slot.device.graphs()
            for record_id in sorted(
                slot.device.store.rows(f"queue:{slot.device.storage_key(graph_id)}")
            )
        ]
        slot.importing = []
        try:
            with self.importing(slot, open_recovery_bundle(PASSPHRASE, bundle), wipe=True):
                await slot.device.import_bundle(bundle, PASSPHRASE)
                self.world.subscribe(slot)  # the member's graphs the bundle had no keys for
        finally:
            wiped += [w for w in slot.importing if w not in wiped]
            slot.importing = None
            # after the wipe: the writes queued before it and those made while it waited
            self.world.note("event", device_id, name="app.reimport", source=source_id, wiped=wiped)
        self.world.ledger.forget_reads(device_id)  # it reads every log again from the start
        slot.device.wake()
