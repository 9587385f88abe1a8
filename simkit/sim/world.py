"""A world: one relay and many devices as Trio tasks under virtual time.

Everything that varies comes from the spec's seed: device keys and nonces, clock
offsets and drifts, network draws, the workload, Trio's scheduling. ``run_world``
builds the world inside a deterministic Trio run with an autojumping MockClock,
runs the workload and the schedule for ``duration_s``, then heals every fault and
drains until the devices settle, and returns the world with its trace.
"""

import contextlib
import json
from collections import Counter
from collections.abc import Callable
from urllib.parse import unquote

import attrs
import trio

from simkit.client import AppConfig, Device, RelayUnavailable
from simkit.client.approval import APPROVED
from simkit.client.schemas import Registry
from simkit.errors import SimkitError, TransportError, UnsafeIdError
from simkit.protocol.entropy import SeededEntropy
from simkit.protocol.ids import graph_id_for, storage_key
from simkit.protocol.keyring import open_recovery_bundle
from simkit.relay import Poke, Relay, StaticHost
from simkit.relay.events import DeviceRevoke, GraphRotate
from simkit.sim import spec as S
from simkit.sim.adversary import MaliciousRelay
from simkit.sim.behaviours import DETECTABLE, Coverage, relay_labels
from simkit.sim.channels import Channels
from simkit.sim.clock import DEFAULT_EPOCH_MS, ClockJump, DeviceClock, VirtualClock, relay_clock
from simkit.sim.costs import Costs
from simkit.sim.determinism import run_virtual
from simkit.sim.exercise import Exercise, counted, counting, exercise_of
from simkit.sim.failure import task
from simkit.sim.ledger import Ledger, Upgrade, persisted
from simkit.sim.network import RELAY, Network
from simkit.sim.oracles import DeviceOracle, RelayOracle
from simkit.sim.release import Versions
from simkit.sim.schedule import PASSPHRASE, perform
from simkit.sim.settle import STABLE_S, patience, progress, settled
from simkit.sim.situations import Situations
from simkit.sim.trace import Trace
from simkit.sim.variant import HONEST, Variant
from simkit.sim.workload import write_for, writers

SETTLE_POLL_S = 5.0
DRAIN_CAP_S = 3 * 3600.0  # a world still changing after this is livelocked, not slow
LAG_SAMPLE_S = 10.0
REGISTER_ATTEMPTS = 30  # longer than a device's 30 s recheck of keys and key gaps
APP_SCHEMAS = Registry({"task": lambda data: isinstance(data.get("text"), str)})
"""The simulated application's schemas (client rule 2): a ``task`` carries its text;
any other kind is free-form."""


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


class _Link:
    """A device's transport as the world hands it out: the network's, plus the
    tripwire. A fired crash cancels the device's scopes; the checkpoint right after
    delivers that cancellation here, as a dying process stops where it is."""

    def __init__(self, world: "World", device_id: str) -> None:
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
        if oracle is not None:
            oracle.sent(self._device_id, request)
        foreign = world.foreign()
        if foreign:  # the relay side may ask (``World.sent_by_foreign``)
            world.foreign_requests[id(request)] = request
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
                del world.foreign_requests[id(request)]
            if records:
                world.situations.push_done(self._device_id, records)
        await self._trip(before=False)
        if oracle is not None:
            oracle.received(self._device_id, request, response)
        return response


async def _until_reached(call, *args, **kwargs):
    """Setup's step ``call(*args, **kwargs)``, tried again every 10 s while the relay
    cannot be reached: a lossy network delays a fleet's setup, never aborts it (setup
    is the run's premise, not under test; a retried bootstrap finds the epoch it may
    have minted, client rule 13)."""
    for _ in range(REGISTER_ATTEMPTS):
        try:
            return await call(*args, **kwargs)
        except RelayUnavailable:
            await trio.sleep(10)
    return await call(*args, **kwargs)


class World:
    def __init__(
        self,
        spec: S.WorldSpec,
        variant: Variant = HONEST,
        monitor=None,
        trace_path=None,
        model_check: bool = False,
        device_model: bool | None = None,
        base: Variant = HONEST,
    ) -> None:
        """``monitor``: an invariant monitor stepped every ``LAG_SAMPLE_S`` and at the end;
        ``trace_path``: stream the trace there as it is written, keeping in memory only
        what the monitor has not read yet (a long run's memory stays flat);
        ``model_check``: check every answer of the relay against the spec's executable
        model (``simkit.model``), for the ``relay-model`` invariant; ``device_model``
        (default: as ``model_check``): follow every honest device with the device model
        (``simkit.model.device``), for the ``device-model`` invariant; ``base``: with a
        ``spec.rollout``, the version every party starts on (``variant`` is the new one)."""
        self.spec = spec
        self.variant = variant
        self.versions = Versions(variant, base, spec.rollout)  # who runs which (a release)
        self.monitor = monitor
        self.violations: list = []
        self.entropy = SeededEntropy(spec.seed)
        self.clock = VirtualClock()  # read by checkers between steps, outside Trio
        self.trace = Trace(self.clock.current_time)
        if trace_path is not None:
            self.trace.stream_to(trace_path)
        self.host = StaticHost(
            [*spec.devices, *spec.outsiders],
            groups={g: list(m) for g, m in spec.groups.items()},
            capabilities={k: list(v) for k, v in spec.capabilities.items()},
        )
        self.config = AppConfig(
            approval_mode=spec.approval_mode,
            send_metadata=spec.send_metadata,
            registry=APP_SCHEMAS,
            **spec.client_settings,
        )
        self.slots: dict[str, DeviceSlot] = {}
        self.tripwires: dict[str, Tripwire] = {}  # device -> a fault armed on its link
        self.ledger = Ledger()  # what really happened (simkit.sim.ledger)
        self.costs = Costs()  # what the run cost (simkit.sim.costs)
        self.channels = Channels()  # what left the devices, until judged (secrecy)
        self.situations = Situations(self)  # rare moments reached (simkit.sim.situations)
        self.relay: Relay | None = None
        self.adversary: MaliciousRelay | None = None
        self.network: Network | None = None
        self._nursery: trio.Nursery | None = None
        self.settled_at: float | None = None
        self.drained = False  # the quiescence check ran (settled or not)
        self.coverage = Coverage(worlds=1)  # behaviours reached (simkit.sim.behaviours)
        if self.versions.release:
            self.coverage.add(["release"])
        self.relay_oracle: RelayOracle | None = None  # built with the relay when asked for
        self.calls: Counter = Counter()  # overridden methods' calls (simkit.sim.exercise)
        self.coverage_at_departure: Counter | None = None  # coverage at the first departure
        self.departures = 0  # the models' departures in declared rules, so far
        self._model_wanted = model_check
        wanted = model_check if device_model is None else device_model
        self.device_oracle: DeviceOracle | None = DeviceOracle(self) if wanted else None
        self._rogue = None  # the transport of raw requests (``send_raw``)
        self.foreign_tasks: set = set()  # tasks of non-conforming clients (``foreign_client``)
        self.foreign_requests: dict = {}  # id -> a request such a client has on its way
        self.relay_up = True
        self._relay_outage = 0
        self._relay_back_at = 0.0

    # -- building -----------------------------------------------------------------------

    def _build_relay(self) -> None:
        self.relay = self.party_class(self.relay_version, "relay")(
            self.host, relay_clock(DEFAULT_EPOCH_MS), on_event=self._relay_event,
            **self.spec.relay_settings,
        )  # fmt: skip
        if self._model_wanted:
            self.relay_oracle = RelayOracle(
                self.relay, self.host, self.spec.relay_settings, self.trace, self.relay_version
            )
            self.relay_oracle.on_departure = self.departed
        if self.versions.release:
            self._note_version(RELAY)
        self.adversary = MaliciousRelay(self)
        self.network = Network(
            self._serve, self.spec.network, self.entropy.fork("network"), self.trace
        )

    def _clock_for(self, device_id: str) -> DeviceClock:
        c = self.spec.clocks
        return DeviceClock.drawn(
            self.entropy.fork(f"clock/{device_id}"),
            max_offset_ms=c.max_offset_ms,
            max_drift_ppm=c.max_drift_ppm,
        )

    def step_clock(self, device_id: str, at: float, step_ms: int) -> None:
        """A device's wall clock steps by ``step_ms`` from virtual time ``at`` on."""
        slot = self.slots[device_id]
        slot.clock = attrs.evolve(slot.clock, jumps=(*slot.clock.jumps, ClockJump(at, step_ms)))
        if slot.device is not None:
            slot.device.clock = slot.clock
        self.trace.register_clock(device_id, slot.clock.reading_at)

    def new_slot(self, member: str, device_id: str) -> DeviceSlot:
        if device_id in self.slots:
            raise SimkitError(f"device {device_id!r} already exists in this world")
        clock = self._clock_for(device_id)
        slot = DeviceSlot(device_id, member, clock, self.entropy.fork(f"device/{device_id}"))
        slot.born = self.now()
        slot.device = self.party_class(self.version_of(device_id), "device").create(
            member, device_id, _Link(self, device_id), clock,
            slot.entropy.fork("boot0"), self.config, self._device_event,
        )  # fmt: skip
        self.slots[device_id] = slot
        self.trace.register_clock(device_id, clock.reading_at)
        if self.versions.release:
            self._note_version(device_id)
        if self.device_oracle is not None:
            self.device_oracle.attach(slot)
        return slot

    def now(self) -> float:
        """Virtual time, readable from outside Trio (checkers between fuzz steps)."""
        return self.clock.current_time()

    def graphs_of(self, member: str) -> list[str]:
        """The storage keys of the spec's graphs this member belongs to now."""
        return [sk for sk in self.spec.graphs if member in self._members_of(sk)]

    def _members_of(self, storage_key: str) -> set[str]:
        kind, _, rest = storage_key.partition(":")
        if kind == "g":
            return set(self.host.group_members(rest))
        return {rest} if kind == "u" else set(rest.split(":"))

    def followers(self, storage_key: str) -> list[str]:
        """Alive, unrevoked devices that follow a graph, in a fixed order."""
        if storage_key not in self.spec.graphs:
            return []
        members = self._members_of(storage_key)  # once, not once per device
        return [
            d
            for d, slot in sorted(self.slots.items())
            if slot.alive and not slot.revoked and slot.member in members
        ]

    def subscribe(self, slot: DeviceSlot) -> None:
        extra = [s for s in self.spec.subscriptions if s.device == slot.device_id]
        only = {s.graph for s in extra if s.only}
        for sk in self.graphs_of(slot.member):
            graph_id = graph_id_for(sk, slot.member)
            if sk not in only:
                slot.device.subscribe(graph_id)
        for sub in extra:
            slot.device.subscribe(graph_id_for(sub.graph, slot.member), sub.kinds, sub.shards)

    async def _setup(self) -> None:
        """Register the initial fleet, have the humans approve it, bootstrap each graph."""
        slots = [self.new_slot(m, d) for m, ids in sorted(self.spec.devices.items()) for d in ids]
        for slot in slots:
            await self._register(slot)
        for slot in slots:  # the initial fleet is trusted: pins set at setup
            for other in slots:
                if other is not slot:
                    slot.device.set_pin(
                        other.device_id, APPROVED, "setup", other.device.fingerprint
                    )
            self.subscribe(slot)
        for sk in self.spec.graphs:
            creators = self.followers(sk)
            if creators:
                device = self.slots[creators[0]].device
                self.note("event", "schedule", name="Bootstrap", graph=sk, by=device.device_id)
                graph_id = graph_id_for(sk, device.member_id)
                await _until_reached(device.bootstrap, graph_id)
        for slot in slots:
            await slot.device.sync()

    # -- events into the trace ------------------------------------------------------------

    def _serve(self, request):
        """The relay as the network reaches it (the adversary's wrapper), counting what
        each answer exercised."""
        self.channels.to_relay(f"{request.path}?{request.query}".encode() + request.body)
        response = self.adversary.handle(request)
        self.coverage.add(relay_labels(request, response))
        if self.versions.release:
            self.coverage.add([self.versions.met(request.headers.get("x-device"))])
        self.costs.served(request, response)
        if response.status == 200 and request.method == "GET" and request.path.endswith("/log"):
            self._log_read(request)
        elif response.status == 400 and request.method == "POST" and request.path.endswith("/keys"):
            self._rotation_refused(request, response)
        return response

    def _rotation_refused(self, request, response) -> None:
        """A rotation refused as incomplete although ``excluding`` named every missing
        device: the relay dropped ``excluding``, as an older relay does."""
        try:
            answer, body = response.json(), json.loads(request.body)
            missing, excluded = set(answer["missing"]), set(body["excluding"])
        except (ValueError, KeyError, TypeError):
            return
        sk = self.graph_requested(request.headers.get("x-device"), request.path)
        if answer.get("error") == "incomplete-rotation" and sk and missing <= excluded:
            self.ledger.dropped_exclusions.add(sk)

    def _log_read(self, request) -> None:
        """How far each device has read each log: a device reading a long log page by
        page makes progress that its store shows only once the read ends."""
        device_id = request.headers.get("x-device")
        sk = self.graph_requested(device_id, request.path)
        after = request.query.get("after", "0")
        if sk is None or not after.isdecimal():
            return
        self.ledger.read_log(device_id, sk, int(after))

    def graph_requested(self, device_id: str | None, path: str) -> str | None:
        """The storage key of the graph a device's ``/graphs/<gid>/...`` request names,
        as the relay keys it; None for another path, an unknown device or a bad ID."""
        slot = self.slots.get(device_id)
        parts = path.split("/")
        if slot is None or len(parts) < 4 or parts[1] != "graphs":
            return None
        try:
            return storage_key(unquote(parts[2], errors="replace"), slot.member)
        except UnsafeIdError:
            return None

    def _device_event(self, device: Device, event) -> None:
        self.trace.emit(
            "event", device.device_id, name=event.kind, graph=event.graph, **event.fields
        )
        if event.kind == "checkpoint.published":
            self.costs.checkpoints += 1
        elif event.kind == "record.applied":
            sk = device.storage_key(event.graph)
            self.costs.applied(device.device_id, sk, event.fields["recordId"],
                               event.fields["rev"], self.now())  # fmt: skip
        if event.kind == "record.restamped":
            self.ledger.restamp(device.device_id, event.graph, event.fields["recordId"])
        if event.kind == "log.alarm":  # any device's alarm detects the modes switched on
            modes = {m.action.mode for m in self.adversary.modes_ever}
            self.coverage.add(f"adversary {m} detected" for m in sorted(modes) if m in DETECTABLE)

    def _relay_event(self, event) -> None:
        fields = attrs.asdict(event, recurse=False)
        self.trace.emit("event", RELAY, name=event.kind, **fields)
        if isinstance(event, GraphRotate):  # who the new epoch was wrapped to, as minted
            self.ledger.dropped_exclusions.discard(event.graph)
            graph = self.relay.state.graphs.get(event.graph)
            self.ledger.mint(
                event.graph, event.epoch, graph.wraps.get(event.epoch, {}) if graph else ()
            )
        if isinstance(event, DeviceRevoke):
            self._revoked(event.device_id)
        if isinstance(event, Poke) and self.network is not None and self.network.is_running:
            for device_id in self.followers(event.graph):
                self.network.poke(device_id, {"graph": event.graph})

    def note(self, kind: str, actor: str, **fields) -> None:
        """Record a fault, crash or schedule action in the trace."""
        self.trace.emit(kind, actor, **fields)

    # -- device lifecycles ----------------------------------------------------------------

    def _start(self, slot: DeviceSlot) -> None:
        self._nursery.start_soon(task, f"device {slot.device_id}", self._device_task, slot)

    async def _device_task(self, slot: DeviceSlot) -> None:
        async def run() -> None:
            pokes = self.network.subscribe(slot.device_id)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(slot.device.run)
                async for _ in pokes:
                    slot.device.wake()

        await self.on_device(slot.device_id, run)

    async def on_device(self, device_id: str, async_fn) -> None:
        """Run ``async_fn`` as part of a device (its run loop, a ceremony on it): a
        crash of the device cancels it where it stands."""
        slot = self.slots[device_id]
        with trio.CancelScope() as scope:
            if not slot.alive:
                scope.cancel()
            slot.scopes.append(scope)
            try:
                await async_fn()
            finally:
                slot.scopes.remove(scope)

    async def _register(self, slot: DeviceSlot) -> None:
        """A device registers (the user opens the app again while the relay cannot be
        reached)."""
        await _until_reached(slot.device.register, self_sig=slot.self_sig)
        slot.registered = True

    async def bring_online(self, slot: DeviceSlot) -> None:
        """A new device registers, follows its member's graphs and starts running."""
        await self._register(slot)
        self.subscribe(slot)
        self._start(slot)

    def _revoked(self, device_id: str) -> None:
        """The relay revoked a device: it leaves the fleet (a thief keeps a stolen one)."""
        slot = self.slots.get(device_id)
        if slot is not None:
            slot.revoked, slot.left = True, self.now()
            if not slot.stolen:
                self.crash(device_id)

    def crash(self, device_id: str) -> None:
        slot = self.slots[device_id]
        if not slot.alive:
            return
        slot.snapshot = slot.device.snapshot()
        slot.device = None
        self.tripwires.pop(device_id, None)
        for scope in slot.scopes:
            scope.cancel()
        if self.device_oracle is not None:
            self.device_oracle.crashed(device_id)
        self.note("crash", device_id, what="device-crash")

    def restart(self, device_id: str, device_class: type[Device] | None = None) -> None:
        """Boot a crashed device from its snapshot (as ``device_class``, e.g. a thief's)."""
        slot = self.slots[device_id]
        if slot.alive:
            return
        slot.boots += 1
        device_class = device_class or self.party_class(self.version_of(device_id), "device")
        slot.device = device_class.restore(
            slot.snapshot, _Link(self, device_id), slot.clock,
            slot.entropy.fork(f"boot{slot.boots}"), self.config, self._device_event,
        )  # fmt: skip
        if self.device_oracle is not None:
            self.device_oracle.attach(slot)
        self.note("crash", device_id, what="device-restart", boot=slot.boots)
        if not slot.registered:  # it crashed before the relay had its keys: the app retries
            self._nursery.start_soon(self.on_device, device_id, lambda: self.bring_online(slot))
            return
        self.subscribe(slot)
        self._start(slot)

    def crash_relay(self, until: float) -> None:
        """The relay is down until ``until``; a crash during an outage extends it."""
        self._relay_outage += 1
        self._relay_back_at = max(until, self._relay_back_at if not self.relay_up else until)
        if self.relay_up:
            self.network.crash_relay(until=None)
            self.relay_up = False
            self.note("crash", RELAY, what="relay-crash")
        self.network.call_at(self._relay_back_at, self._restart_relay, self._relay_outage)

    def _restart_relay(self, outage: int) -> None:
        """Restart from what the relay had committed when it went down (it served
        nothing since), unless a later crash extended the outage."""
        if outage != self._relay_outage or self.relay_up:
            return
        self._restore_relay()
        self.network.restart_relay(self._serve)
        self.relay_up = True
        self.note("crash", RELAY, what="relay-restart")

    def _restore_relay(self) -> None:
        """The relay starts again from its store, as the version it now runs."""
        self.relay = self.party_class(self.relay_version, "relay").restore(
            self.host, relay_clock(DEFAULT_EPOCH_MS), self.relay.snapshot(),
            on_event=self._relay_event, **self.spec.relay_settings,
        )  # fmt: skip
        if self.relay_oracle is not None:
            self.relay_oracle.restarted(self.relay, self.relay_version)

    # -- releases -------------------------------------------------------------------------

    def _note_version(self, party: str) -> None:
        """The version a party starts on, and whether it is the release's base or new one."""
        version, role = self.version_of(party).name, self.versions.role(party)
        self.note("event", party, name="version", version=version, role=role)

    def party_class(self, version: Variant, role: str) -> type:
        """The class a party of ``version`` runs (``role``: relay or device); the
        change's own (the world's variant) counts the methods it overrides."""
        cls, base = (version.relay, Relay) if role == "relay" else (version.device, Device)
        return counted(cls, base) if version is self.variant else cls

    def version_of(self, party: str) -> Variant:
        """The version a device (or ``relay``) runs now."""
        return self.versions.of(party)

    @property
    def relay_version(self) -> Variant:
        return self.version_of(RELAY)

    def upgrade(self, target: str) -> None:
        """``target`` (a device ID, or ``relay``) moves to the new version: a running
        device restarts into it from its own persisted state (a crashed one boots into
        it when it restarts); the relay restarts from its store under the new class (a
        relay that is down comes back as it). Already on it: nothing happens."""
        if not self.versions.move(target):
            return
        self.note("event", target, name="version.upgrade", version=self.variant.name)
        if target == RELAY:
            self.ledger.dropped_exclusions.clear()  # the new relay may know ``excluding``
            if self.relay_up:  # the network reaches ``self.relay`` through ``_serve``
                before = self.relay.snapshot()
                self._restore_relay()
                self._upgraded(RELAY, before, self.relay.snapshot())
            return
        slot = self.slots[target]
        if slot.alive and not slot.stolen:
            before = persisted(slot.device)
            self.crash(target)
            self.restart(target)
            self._upgraded(target, before, persisted(slot.device))

    def _upgraded(self, party: str, before: dict, after: dict) -> None:
        self.ledger.upgrades.append(Upgrade(party, before, after, len(self.trace)))

    # -- the run --------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def running(self):
        """The world, built, set up and running (device loops, sweeper, schedule)."""
        with counting(self.calls):
            async with self._running() as world:
                yield world

    @contextlib.asynccontextmanager
    async def _running(self):
        self._build_relay()
        async with self.network.running():
            await self._setup()
            self.note("event", "world", name="setup.done")  # reports tell setup from the run
            self.adversary.prepare(self.spec.schedule)
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                for _, slot in sorted(self.slots.items()):
                    self._start(slot)
                nursery.start_soon(task, "the relay's sweeper", self._sweeper)
                nursery.start_soon(task, "the lag sampler and monitor", self._sample_lag)
                for action in self.spec.schedule:
                    self.network.call_at(action.at, perform, self, action)
                try:
                    yield self
                finally:
                    nursery.cancel_scope.cancel()
                    if self.device_oracle is not None:
                        self.device_oracle.stopped = True

    async def run(self) -> None:
        """The whole run: the workload and schedule for ``duration_s``, then quiescence."""
        async with self.running():
            stop = self.spec.workload.stop_at
            writing_for = self.spec.duration_s if stop is None else min(stop, self.spec.duration_s)
            with trio.move_on_after(writing_for):
                async with trio.open_nursery() as writing:
                    for device_id in writers(self.spec.workload, self.slots):
                        writing.start_soon(
                            task, f"{device_id}'s writer", write_for, self, device_id
                        )
            await trio.sleep_until(self.spec.duration_s)
            await self.quiesce()
            if self.monitor is not None:
                self._record(self.monitor.final(self))

    async def _sample_lag(self) -> None:
        """Every ``LAG_SAMPLE_S``: how far each device's unfiltered cursor trails the
        relay's counter, per graph (what reports plot)."""
        while True:
            await trio.sleep(LAG_SAMPLE_S)
            for sk, graph in sorted(self.relay.state.graphs.items()):
                lags = {}
                for device_id in self.followers(sk):
                    device = self.slots[device_id].device
                    graph_id = graph_id_for(sk, device.member_id)
                    if device.unfiltered(graph_id):
                        lags[device_id] = graph.seq - device.store.get("cursor", graph_id, 0)
                self.note("check", "world", what="lag", graph=sk, seq=graph.seq, lags=lags)
            if self.monitor is not None:
                self._record(self.monitor.step(self))
            elif self.trace.streaming:
                self.trace.release(len(self.trace))  # nobody reads it here: the file has it

    def _record(self, violations) -> None:
        """Keep each violation once, and note it in the trace where it was seen."""
        for violation in violations:
            if str(violation) not in {str(v) for v in self.violations}:
                self.violations.append(violation)
                self.note("check", "world", what="violation", **violation.to_json())

    async def _sweeper(self) -> None:
        """The relay's built-in sweeper, on the relay's clock (0 disables it)."""
        interval = self.relay.settings.sweep_interval_ms
        while interval:
            await trio.sleep(interval / 1000)
            if self.relay_up:
                now = self.relay.clock()
                swept = self.relay.sweep_if_due()
                if self.relay_oracle is not None:
                    self.relay_oracle.swept_if_due(now, swept)

    def sweep(self) -> None:
        """The one external job that sweeps when the built-in sweeper is off."""
        now = self.relay.clock()
        swept = self.relay.sweep()
        if self.relay_oracle is not None:
            self.relay_oracle.swept(now, swept)

    def departed(self) -> None:
        """A model counted a departure: the first one marks what the run had reached
        before the change made a difference."""
        self.departures += 1
        if self.coverage_at_departure is None:
            self.coverage_at_departure = Counter(self.coverage.counts)

    def exercise(self) -> Exercise:
        """How often the change ran in this world (docs/variants.md)."""
        return exercise_of(self)

    def answer(self, request):
        """The honest relay's answer to one request, checked against the spec's model."""
        if self.relay_oracle is None:
            return self.relay.handle(request)
        return self.relay_oracle.answer(self.relay, request)

    async def send_raw(self, request) -> None:
        """A request from a client outside the simulated fleet (a rogue device speaking
        raw HTTP), over the network like any other; its answer goes nowhere."""
        if self._rogue is None:
            self._rogue = self.network.transport("rogue")
        with contextlib.suppress(TransportError):
            await self._rogue.send(request)

    def retire_model(self, why: str) -> None:
        """The relay's state changed behind the model's back (a colluding relay serving
        a revoked device): stop checking it, and say why."""
        if self.relay_oracle is not None and self.relay_oracle.retire(why):
            self.note("check", "world", what="relay-model retired", why=why)

    def apply(self, device_id: str, write) -> dict:
        """Do an application write on a device and trace it with the rev it got."""
        slot = self.slots[device_id]
        self.situations.wrote(device_id, write.record_id)
        record = write.apply(slot.device)
        self.costs.writes += 1
        sk = slot.device.storage_key(write.graph_id)
        readers = [
            d for d in self.followers(sk)
            if d != device_id
            and self.slots[d].device.unfiltered(graph_id_for(sk, self.slots[d].member))
        ]  # fmt: skip
        self.costs.wrote(sk, record["id"], record["at"], self.now(), readers)
        if self.device_oracle is not None:
            self.device_oracle.app_wrote(device_id, write.graph_id, record)
        self.note("event", device_id, name="app.write", rev=record["at"], **write.trace_fields())
        return record

    @contextlib.contextmanager
    def foreign_client(self, device_id: str):
        """A non-conforming client acts with a member's device and credential (a forger):
        what it sends is not the device's, which the device model does not judge. It
        calls what this yields once it took a stamp from the device."""
        task = trio.lowlevel.current_task()
        self.foreign_tasks.add(task)
        try:
            if self.device_oracle is None:
                yield lambda: None
            else:
                yield self.device_oracle.stamped(device_id)
        finally:
            self.foreign_tasks.discard(task)

    def foreign(self) -> bool:
        """Whether the running task is a non-conforming client's (``foreign_client``):
        what the relay answers it, the device's own client never reads."""
        return bool(self.foreign_tasks) and trio.lowlevel.current_task() in self.foreign_tasks

    def sent_by_foreign(self, request) -> bool:
        """Whether a non-conforming client sent ``request`` (it is on its way now)."""
        return self.foreign_requests.get(id(request)) is request

    @contextlib.contextmanager
    def importing(self, slot: DeviceSlot, keyrings: dict, wipe: bool):
        """A device imports keyrings (a recovery bundle: ``wipe``; an invite): the device
        model may see those keys adopted."""
        if self.device_oracle is not None:
            self.device_oracle.importing(slot, keyrings, wipe)
        yield
        if self.device_oracle is not None:
            self.device_oracle.imported(slot)

    async def reimport(self, device_id: str, source_id: str) -> None:
        """The user imports ``source``'s recovery bundle on a device with a history:
        importing first wipes its local record store (spec: Ceremonies, Recover); the
        writes it still held queued are gone with it (traced, so no invariant owes them)."""
        slot, source = self.slots[device_id], self.slots[source_id].device
        if slot.device is None or source is None:
            return
        bundle = source.recovery_bundle(PASSPHRASE)
        self.channels.bundle_made(PASSPHRASE, bundle)
        wiped = [
            [graph_id, record_id]
            for graph_id in slot.device.graphs()
            for record_id in sorted(
                slot.device.store.rows(f"queue:{slot.device.storage_key(graph_id)}")
            )
        ]
        self.note("event", device_id, name="app.reimport", source=source_id, wiped=wiped)
        with self.importing(slot, open_recovery_bundle(PASSPHRASE, bundle), wipe=True):
            await slot.device.import_bundle(bundle, PASSPHRASE)
            self.subscribe(slot)  # the member's graphs the bundle had no keys for
        self.ledger.forget_reads(device_id)  # it reads every log again from the start
        slot.device.wake()

    def spawn(self, async_fn, *args, what: str | None = None) -> None:
        """Run a ceremony (or what ``what`` names) as its own task: scheduled actions and
        writers must not block the timer."""
        what = what or f"the ceremony {async_fn.__qualname__}"
        self._nursery.start_soon(task, what, async_fn, *args)

    # -- quiescence -----------------------------------------------------------------------

    async def quiesce(self) -> None:
        """Heal everything, restart whatever is down, then wait until the devices settle:
        until nothing has changed for ``drain_s`` (a world still converging, say one
        record per page under a tight rate limit, gets the time it needs, up to
        ``DRAIN_CAP_S``), or it is settled and has been stable for ``STABLE_S``."""
        self.note("fault", "world", what="heal-all")
        self.network.heal()
        self.network.error_window(503, until=trio.current_time())
        for device_id, slot in sorted(self.slots.items()):
            if not slot.alive and not slot.revoked:
                self.restart(device_id)
        start = since = trio.current_time()
        last = None
        while trio.current_time() - since < patience(self):
            if trio.current_time() - start >= DRAIN_CAP_S:
                break
            for slot in self.alive():
                slot.device.wake()
            await trio.sleep(SETTLE_POLL_S)
            now, state = trio.current_time(), progress(self)
            if state != last:
                last, since = state, now
            elif settled(self) and now - since >= STABLE_S:
                self.settled_at = now
                break
        self.drained = True
        self.note("check", "world", what="quiescence", settled=self.settled_at is not None)

    def cost(self) -> Costs:
        """What the run cost so far, the fleet's device-hours included (every device
        from when it joined until now or its revocation)."""
        now = self.now()
        self.costs.device_seconds = sum(
            (now if slot.left is None else slot.left) - slot.born for slot in self.slots.values()
        )
        return self.costs

    def alive(self) -> list[DeviceSlot]:
        return [s for _, s in sorted(self.slots.items()) if s.alive and not s.revoked]


def run_world(
    spec: S.WorldSpec,
    variant: Variant = HONEST,
    monitor=None,
    trace_path=None,
    model_check: bool | None = None,
    base: Variant = HONEST,
) -> World:
    """Build and run a world; a pure function of the spec (and so of its seed). With
    ``trace_path`` the trace streams to that file (closed at the end). A monitored
    world also checks its relay against the spec's model, unless ``model_check`` says."""
    checked = monitor is not None if model_check is None else model_check
    world = World(spec, variant, monitor, trace_path, model_check=checked, base=base)
    try:
        run_virtual(world.run, seed=spec.seed, clock=world.clock)
    finally:
        world.trace.close()
    return world
