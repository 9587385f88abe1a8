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
from urllib.parse import unquote

import attrs
import trio

from simkit.client import AppConfig, Device, DeviceError, RelayUnavailable
from simkit.client.approval import APPROVED
from simkit.client.schemas import Registry
from simkit.errors import SimkitError, UnsafeIdError
from simkit.protocol.entropy import SeededEntropy
from simkit.protocol.ids import graph_id_for, storage_key
from simkit.relay import Poke, Relay, StaticHost
from simkit.relay.events import DeviceRevoke, GraphRotate
from simkit.sim import spec as S
from simkit.sim.adversary import MaliciousRelay
from simkit.sim.background import record, sample_lag, sweeper
from simkit.sim.behaviours import DETECTABLE, Coverage, relay_labels
from simkit.sim.channels import Channels
from simkit.sim.clock import DEFAULT_EPOCH_MS, ClockJump, DeviceClock, VirtualClock, relay_clock
from simkit.sim.costs import Costs
from simkit.sim.determinism import run_virtual
from simkit.sim.exercise import Exercise, counting, exercise_of
from simkit.sim.failure import task
from simkit.sim.foreign import Foreign
from simkit.sim.ledger import Ledger
from simkit.sim.network import RELAY, Network
from simkit.sim.oracles import DeviceOracle, RelayOracle
from simkit.sim.parties import DeviceSlot, Link, Parties, Tripwire
from simkit.sim.release import Versions
from simkit.sim.schedule import perform
from simkit.sim.settle import STABLE_S, patience, progress, settled
from simkit.sim.situations import Situations
from simkit.sim.trace import Trace
from simkit.sim.variant import HONEST, Variant
from simkit.sim.workload import shard_of, write_for, writers

SETTLE_POLL_S = 5.0
DRAIN_CAP_S = 3 * 3600.0  # a world still changing after this is livelocked, not slow
REGISTER_ATTEMPTS = 30  # longer than a device's 30 s recheck of keys and key gaps
APP_SCHEMAS = Registry({"task": lambda data: isinstance(data.get("text"), str)})
"""The simulated application's schemas (client rule 2): a ``task`` carries its text;
any other kind is free-form."""


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
        """``monitor``: an invariant monitor stepped every ``LAG_SAMPLE_S`` (of
        ``simkit.sim.background``) and at the end; ``trace_path``: stream the trace
        there as it is written, keeping in memory only what the monitor has not read yet
        (a long run's memory stays flat); ``model_check``: check every answer of the
        relay against the spec's executable model (``simkit.model``), for ``relay-model``;
        ``device_model`` (default: as ``model_check``): follow every honest device with
        the device model, for ``device-model``; ``base``: with a ``spec.rollout``, the
        version every party starts on (``variant`` is the new one)."""
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
            shard_of=shard_of if spec.shards else None,
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
        self.foreign = Foreign(self)  # clients outside the fleet (simkit.sim.foreign)
        self.relay_up = True
        self.parties = Parties(self)  # crashes, restarts, upgrades (simkit.sim.parties)

    # -- building -----------------------------------------------------------------------

    def _build_relay(self) -> None:
        self.relay = self.parties.party_class(self.parties.relay_version, "relay")(
            self.host, relay_clock(DEFAULT_EPOCH_MS), on_event=self._relay_event,
            **self.spec.relay_settings,
        )  # fmt: skip
        if self._model_wanted:
            version = self.parties.relay_version
            self.relay_oracle = RelayOracle(
                self.relay, self.host, self.spec.relay_settings, self.trace, version
            )
            self.relay_oracle.on_departure = self.departed
        if self.versions.release:
            self.parties.note_version(RELAY)
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
        slot.device = self.parties.party_class(self.parties.version_of(device_id), "device").create(
            member, device_id, Link(self, device_id), clock,
            slot.entropy.fork("boot0"), self.config, self._device_event,
        )  # fmt: skip
        self.slots[device_id] = slot
        self.trace.register_clock(device_id, clock.reading_at)
        if self.versions.release:
            self.parties.note_version(device_id)
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
                    self.ledger.approve(slot.device_id, other.device_id)
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
        response = self.adversary.handle(request)
        labels = relay_labels(request, response)
        self.coverage.add(labels)
        self.situations.answered(request, labels)
        if self.versions.release:
            self.coverage.add([self.versions.met(request.headers.get("x-device"))])
        self.costs.served(request, response)
        if response.status == 200 and request.method == "GET" and request.path.endswith("/log"):
            _log_read(self, request)
        elif response.status == 400 and request.method == "POST" and request.path.endswith("/keys"):
            _rotation_refused(self, request, response)
        return response

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
        if self.device_oracle is not None:
            self.device_oracle.heard(device, event)
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
        if isinstance(event, Poke) and self.relay_oracle is not None:
            self.relay_oracle.poked(event.graph)
        if isinstance(event, Poke) and self.network is not None and self.network.is_running:
            for device_id in self.followers(event.graph):
                self.network.poke(device_id, {"graph": event.graph})

    def note(self, kind: str, actor: str, **fields) -> None:
        """Record a fault, crash or schedule action in the trace."""
        self.trace.emit(kind, actor, **fields)

    # -- device lifecycles ----------------------------------------------------------------

    def _start(self, slot: DeviceSlot) -> None:
        if self.device_oracle is not None:  # its quiet spells are judged from now on
            self.device_oracle.looping(slot.device_id)
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
        """A new device registers, follows its member's graphs and starts running. One
        the relay revoked before it heard that its registration had landed (a crash
        in between) is refused for good: it stays off, as its app would."""
        try:
            await self._register(slot)
        except DeviceError:
            known = self.relay.state.devices.get(slot.device_id)
            if known is None or known.revoked_at is None:
                raise
            self.note("event", slot.device_id, name="app.register-refused", why="revoked")
            return
        self.subscribe(slot)
        self._start(slot)

    def _revoked(self, device_id: str) -> None:
        """The relay revoked a device: it leaves the fleet (a thief keeps a stolen one)."""
        slot = self.slots.get(device_id)
        if slot is not None:
            slot.revoked, slot.left = True, self.now()
            if not slot.stolen:
                self.parties.crash(device_id)

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
                nursery.start_soon(task, "the relay's sweeper", sweeper, self)
                nursery.start_soon(task, "the lag sampler and monitor", sample_lag, self)
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
                record(self, self.monitor.final(self))

    def sweep(self) -> None:
        """The one external job that sweeps when the built-in sweeper is off."""
        now = self.relay.clock()
        swept = self.relay.sweep()
        if self.relay_oracle is not None:
            self.relay_oracle.swept(now, swept)

    def departed(self) -> None:
        """A model counted a departure: the first marks what the run reached before it."""
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

    def retire_model(self, why: str) -> None:
        """The relay's state changed behind the model's back (a colluding relay): stop."""
        if self.relay_oracle is not None and self.relay_oracle.retire(why):
            self.note("check", "world", what="relay-model retired", why=why)

    def apply(self, device_id: str, write) -> dict:
        """Do an application write on a device and trace it with the rev it got."""
        slot = self.slots[device_id]
        self.situations.wrote(device_id, write.record_id)
        oracle = self.device_oracle
        record = oracle.app_write(device_id, write) if oracle else write.apply(slot.device)
        if slot.importing is not None:  # a bundle is being imported: its wipe may take it
            slot.importing.append([write.graph_id, record["id"]])
        self.costs.writes += 1
        sk = slot.device.storage_key(write.graph_id)
        readers = [
            d for d in self.followers(sk)
            if d != device_id
            and self.slots[d].device.unfiltered(graph_id_for(sk, self.slots[d].member))
        ]  # fmt: skip
        self.costs.wrote(sk, record["id"], record["at"], self.now(), readers)
        self.note("event", device_id, name="app.write", rev=record["at"], **write.trace_fields())
        return record

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
                self.parties.restart(device_id)
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


def _rotation_refused(world, request, response) -> None:
    """A rotation refused as incomplete although ``excluding`` named every missing
    device: the relay dropped ``excluding``, as an older relay does."""
    try:
        answer, body = response.json(), json.loads(request.body)
        missing, excluded = set(answer["missing"]), set(body["excluding"])
    except (ValueError, KeyError, TypeError):
        return
    sk = world.graph_requested(request.headers.get("x-device"), request.path)
    if answer.get("error") == "incomplete-rotation" and sk and missing <= excluded:
        world.ledger.dropped_exclusions.add(sk)


def _log_read(world, request) -> None:
    """How far each device has read each log: a device reading a long log page by
    page makes progress that its store shows only once the read ends."""
    device_id = request.headers.get("x-device")
    sk = world.graph_requested(device_id, request.path)
    after = request.query.get("after", "0")
    if sk is None or not after.isdecimal():
        return
    world.ledger.read_log(device_id, sk, int(after))
