"""Hypothesis state machines whose rules are world actions.

``HonestMachine`` fuzzes the protocol with an honest relay under network faults,
clock skew, crashes and every ceremony, and checks every invariant.
``AdversaryMachine`` switches malicious relay modes on (and steals devices) and
checks the invariants that must hold whatever the relay does, plus
alarm-completeness. Invariants run after every step and at quiescence (teardown:
heal, drain, final checks). Every step is recorded as JSON (``simkit.fuzz.steps``)
so a failure becomes a reproducer.

A variant is fuzzed with ``machine_for(variant, honest=...)``.
"""

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from simkit.errors import SimkitError
from simkit.fuzz.driver import WorldDriver
from simkit.fuzz.steps import GRAPHS, RECORDS, WorldParams, apply_step
from simkit.invariants import Monitor, Violation
from simkit.sim.variant import HONEST, Variant

MAX_LINKS = 2
MODES = (
    ("withhold", {"log": "lists"}),
    ("withhold", {"log": "hides"}),
    ("rollback", {}),
    ("reorder", {"what": "log"}),
    ("replay", {"into": "slot"}),
    ("rewrite-log", {"how": "rev"}),
    ("substitute-keys", {}),
    ("lie-epoch", {}),
)


class InvariantViolation(SimkitError, AssertionError):
    """One or more invariants broke; the violations say which, where and when."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__("\n".join(str(v) for v in violations))


class WorldMachine(RuleBasedStateMachine):
    variant: Variant = HONEST
    honest = True
    last: "WorldMachine | None" = None  # the latest run (after shrinking: the minimal one)

    def __init__(self) -> None:
        super().__init__()
        self.driver: WorldDriver | None = None
        self.params: WorldParams | None = None
        self.steps: list[dict] = []
        self.monitor = Monitor(self.honest)
        self.links = 0
        type(self).last = self

    # -- plumbing -------------------------------------------------------------------------

    @property
    def world(self):
        return self.driver.world

    def start(self, params: WorldParams) -> None:
        self.params = params
        self.driver = WorldDriver(params.spec(), self.variant)

    def do(self, **step) -> None:
        self.steps.append(step)
        apply_step(self.driver, step, len(self.steps) - 1)

    def alive(self) -> list[str]:
        """Devices that run (a stolen device counts: the thief runs it)."""
        return [
            d
            for d, slot in sorted(self.world.slots.items())
            if slot.device is not None and (not slot.revoked or slot.stolen)
        ]

    def honest_devices(self) -> list[str]:
        return [d for d in self.alive() if not self.world.slots[d].revoked]

    def graphs_of(self, device_id: str) -> list[str]:
        return self.world.graphs_of(self.world.slots[device_id].member)

    @invariant()
    def invariants_hold(self) -> None:
        if self.driver is not None:
            violations = self.monitor.step(self.world)
            if violations:
                raise InvariantViolation(violations)

    def teardown(self) -> None:
        if self.driver is None:
            return
        try:
            self.driver.run(self.world.quiesce)
            violations = self.monitor.final(self.world)
            self.trace_hash = self.world.trace.trace_hash()
            if violations:
                raise InvariantViolation(violations)
        finally:
            self.driver.close()

    # -- rules ------------------------------------------------------------------------

    @rule(seconds=st.sampled_from([1, 5, 30, 120]))
    def advance(self, seconds):
        self.do(rule="advance", seconds=seconds)

    @rule(data=st.data(), record=st.sampled_from(RECORDS), delete=st.booleans())
    def write(self, data, record, delete):
        if not self.alive():
            return
        device = data.draw(st.sampled_from(self.alive()), label="device")
        graph = data.draw(st.sampled_from(self.graphs_of(device)), label="graph")
        op = "delete" if delete else "edit"
        self.do(rule="write", device=device, graph=graph, record=record, op=op)

    @rule(data=st.data(), record=st.sampled_from(RECORDS))
    def concurrent_write(self, data, record):
        """Two devices write one record at the same instant (equal revs are likely)."""
        graph = "g:team"
        writers = [d for d in self.honest_devices() if graph in self.graphs_of(d)]
        if len(writers) < 2:
            return
        pair = data.draw(st.lists(st.sampled_from(writers), min_size=2, max_size=2, unique=True))
        self.do(rule="concurrent", devices=pair, graph=graph, record=record)

    @rule(data=st.data())
    def refresh(self, data):
        """Several users press "sync now" at once (concurrent key grants, pushes, pulls)."""
        if len(self.alive()) < 2:
            return
        devices = data.draw(
            st.lists(st.sampled_from(self.alive()), min_size=2, max_size=3, unique=True)
        )
        self.do(rule="refresh", devices=sorted(devices))

    @precondition(lambda self: self.links < MAX_LINKS)
    @rule(member=st.sampled_from(("alice", "bob")), announce=st.booleans())
    def link(self, member, announce):
        """A new device registers; ``announce``: the app has every device sync at once."""
        self.links += 1
        device = f"{member[0]}{5 + self.links}"
        self.do(rule="link", member=member, device=device, announce=announce)

    @rule(data=st.data())
    def approve_or_reject(self, data):
        pending = [
            (by, d)
            for by in self.honest_devices()
            for d, seen in sorted(self.world.slots[by].device.store.rows("seen").items())
            if self.world.slots[by].device.pin(d) is None and seen
        ]
        if not pending:
            return
        by, device = data.draw(st.sampled_from(pending), label="pending")
        verdict = data.draw(st.sampled_from(["approve", "approve", "reject"]), label="verdict")
        self.do(rule=verdict, by=by, device=device)

    def _same_member_pairs(self) -> list[tuple[str, str]]:
        devices = self.honest_devices()
        slots = self.world.slots
        return [
            (by, d)
            for by in devices
            for d in devices
            if by != d and slots[by].member == slots[d].member
        ]

    @rule(data=st.data())
    def revoke(self, data):
        pairs = self._same_member_pairs()
        if pairs:
            by, device = data.draw(st.sampled_from(pairs), label="revoke")
            self.do(rule="revoke", by=by, device=device)

    @rule(data=st.data(), graph=st.sampled_from(GRAPHS))
    def rotate(self, data, graph):
        holders = [d for d in self.honest_devices() if graph in self.graphs_of(d)]
        if holders:
            self.do(rule="rotate", by=data.draw(st.sampled_from(holders)), graph=graph)

    @rule(data=st.data())
    def recover(self, data):
        alices = [d for d in self.honest_devices() if self.world.slots[d].member == "alice"]
        if alices and "a9" not in self.world.slots:
            source = data.draw(st.sampled_from(alices), label="source")
            self.do(rule="recover", member="alice", device="a9", source=source)

    @rule(data=st.data())
    def crash_or_restart(self, data):
        down = [
            d for d, s in sorted(self.world.slots.items()) if s.device is None and not s.revoked
        ]
        if down and data.draw(st.booleans(), label="restart"):
            self.do(rule="restart", device=data.draw(st.sampled_from(down)))
        elif len(self.honest_devices()) > 2:
            self.do(rule="crash", device=data.draw(st.sampled_from(self.honest_devices())))

    @rule(data=st.data(), ms=st.sampled_from([-600_000, -90_000, 90_000, 400_000, 3_600_000]))
    def jump_clock(self, data, ms):
        if not self.honest_devices():
            return
        self.do(rule="jump", device=data.draw(st.sampled_from(self.honest_devices())), ms=ms)


class HonestMachine(WorldMachine):
    """An honest relay under network faults, clock skew and crashes."""

    @initialize(
        seed=st.integers(0, 2**32 - 1),
        approval=st.sampled_from(["observe", "approve"]),
        skew=st.sampled_from([0, 60_000, 180_000]),
        loss=st.sampled_from([0.0, 0.01, 0.05]),
    )
    def world_is(self, seed, approval, skew, loss):
        self.start(WorldParams(seed, approval, skew, loss, loss))

    @rule(data=st.data(), seconds=st.sampled_from([10, 60, 300]))
    def partition(self, data, seconds):
        if not self.honest_devices():
            return
        devices = data.draw(
            st.lists(st.sampled_from(self.honest_devices()), min_size=1, max_size=3, unique=True)
        )
        self.do(rule="partition", devices=sorted(devices), seconds=seconds)

    @rule()
    def heal(self):
        self.do(rule="heal")

    @rule(seconds=st.sampled_from([5, 30]), status=st.sampled_from([503, 429]))
    def relay_trouble(self, seconds, status):
        self.do(rule="errors", status=status, seconds=seconds)

    @rule(seconds=st.sampled_from([5, 30]))
    def relay_crash(self, seconds):
        self.do(rule="relay-crash", seconds=seconds)


class AdversaryMachine(WorldMachine):
    """A relay that turns malicious for chosen devices, and devices that get stolen."""

    honest = False

    @initialize(seed=st.integers(0, 2**32 - 1), approval=st.sampled_from(["observe", "approve"]))
    def world_is(self, seed, approval):
        self.start(WorldParams(seed, approval))

    @rule(data=st.data(), mode=st.sampled_from(MODES))
    def malicious(self, data, mode):
        name, params = mode
        if len(self.honest_devices()) < 2:
            return
        target = data.draw(st.sampled_from(self.honest_devices()), label="target")
        params = dict(params)
        if name == "rollback":
            params["snapshot_at"] = 0
        if name == "substitute-keys":
            others = [d for d in self.honest_devices() if d != target]
            params["victim"] = data.draw(st.sampled_from(others), label="victim")
        self.do(rule="adversary", mode=name, targets=[target], params=params)

    @rule(data=st.data())
    def steal(self, data):
        pairs = self._same_member_pairs()
        if pairs:
            by, device = data.draw(st.sampled_from(pairs), label="steal")
            self.do(rule="steal", by=by, device=device)


def machine_for(variant: Variant, honest: bool) -> type[WorldMachine]:
    """A state machine class that fuzzes ``variant``."""
    base = HonestMachine if honest else AdversaryMachine
    return type(f"{base.__name__}[{variant.name}]", (base,), {"variant": variant})
