"""Hypothesis state machines whose rules are world actions.

``HonestMachine`` fuzzes the protocol with an honest relay under network faults,
clock skew, crashes, every ceremony (whole or cut between two of its requests),
blobs, directory and capability changes, and checks every invariant.
``AdversaryMachine`` adds malicious relay modes (forks with and without a merge
included), stolen devices and attacks aimed at a device right after it restarts,
under the same faults, and checks the invariants that must hold whatever the relay
does. Invariants run after every step and at quiescence (teardown: heal, drain,
final checks). Every step is recorded as JSON (``simkit.fuzz.steps``) so a failure
becomes a reproducer.

Each example draws its settings and a swarm (``simkit.fuzz.params``): the rules it
may use. A variant is fuzzed with ``machine_for(variant, honest=...)``.
"""

from hypothesis import event, target
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from simkit.errors import SimkitError
from simkit.fuzz import actions as A
from simkit.fuzz.attacks import AttackRules
from simkit.fuzz.driver import WorldDriver
from simkit.fuzz.faults import FaultRules
from simkit.fuzz.params import GRAPHS, RECORDS, WorldParams, world_params
from simkit.fuzz.rogues import RogueRules
from simkit.fuzz.steer import Steering
from simkit.fuzz.steps import apply_step
from simkit.fuzz.swarm import since_classic, swarm
from simkit.invariants import Monitor, Violation
from simkit.protocol.messages import BOX_MALFORMATIONS, INVITE_MALFORMATIONS
from simkit.sim.network import RELAY
from simkit.sim.variant import HONEST, Variant

MAX_LINKS = 2
CLASSIC_VERDICTS = ["approve", "approve", "reject"]  # 685eb33's humans never compared codes


class InvariantViolation(SimkitError, AssertionError):
    """One or more invariants broke; the violations say which, where and when."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        super().__init__("\n".join(str(v) for v in violations))


class WorldMachine(FaultRules, RogueRules, RuleBasedStateMachine):
    variant: Variant = HONEST
    honest = True
    classic = False  # the rules and draws of commit 685eb33's machines (``simkit bench fuzz``)
    device_model = True  # off only to measure its cost (``simkit bench fuzz``)
    base: Variant = HONEST  # a release: the version the world starts on (``variant``: the new)
    base_ref: str | None = None  # how a reproducer names ``base``
    variant_ref: str | None = None  # how a reproducer names ``variant``, if not as the run
    release: frozenset = frozenset()  # "rollout" and/or "mix" (docs/releases.md)
    steering: Steering | None = None  # toward the change's departures (simkit.fuzz.steer)
    cut = False  # the budget ended this example mid-way

    @staticmethod
    def before_step() -> None:
        """Called before each step (the fuzz runner sets it to check its budget)."""

    def __init__(self) -> None:
        super().__init__()
        self.driver: WorldDriver | None = None
        self.params: WorldParams | None = None
        self.steps: list[A.Step] = []
        self.monitor = Monitor(self.honest)
        self.links = 0
        self._checked_setup = False
        self.blobs: list[tuple[str, str]] = []  # (graph, blob ID) uploaded so far
        self.replayed = 0  # steps replayed from a departing example (steering)
        self.first_departure: int | None = None  # the step the change first departed in

    # -- plumbing -------------------------------------------------------------------------

    @property
    def world(self):
        return self.driver.world

    @initialize(data=st.data())
    def world_is(self, data):
        steering = self.steering
        kept = steering and steering.follow_up(data, type(self).__name__)
        if kept:
            self.start(kept.params)
            for step in kept.prefix:
                self._replay(step)
            return
        weights = steering and steering.weights()
        params = world_params(self.honest, self.classic, self.release, weights)
        self.start(data.draw(params, label="world"))

    def start(self, params: WorldParams) -> None:
        self.params = params
        self.driver = WorldDriver(params.spec(), self.variant, self.device_model, self.base)
        if self.world.departures:
            self.first_departure = -1  # during setup

    def _replay(self, step: A.Step) -> None:
        """A step of a departing example this one follows up, with the machine's own
        bookkeeping (links made, blobs uploaded) as its rule would have kept it."""
        made = step.ceremony if isinstance(step, A.Interrupt) else step
        self.links += isinstance(made, A.Link)
        if isinstance(step, A.BlobUpload):
            self.blobs.append((step.graph, step.blob))
        self.replayed += 1
        self.do(step)

    def do(self, step: A.Step) -> None:
        """Record and apply one step, then check the invariants, exactly as ``replay``
        does (a rule may take several steps; a rule that takes none checks nothing).
        ``before_step`` may cut the example first (the fuzz budget is spent)."""
        try:
            self.before_step()
        except BaseException:
            self.cut = True
            raise
        self.steps.append(step)
        departures = self.world.departures
        apply_step(self.driver, step, len(self.steps) - 1)
        fresh = len(self.steps) > self.replayed and self.first_departure is None
        if fresh and self.world.departures > departures:
            self.first_departure = len(self.steps) - 1
        self._check()

    def _check(self) -> None:
        violations = self.monitor.step(self.world)
        if violations:
            raise InvariantViolation(violations)

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

    def device_and_graph(self, data) -> tuple[str, str] | None:
        """A running device that belongs to some graph, and one of its graphs."""
        devices = [d for d in self.alive() if self.graphs_of(d)]
        if not devices:
            return None
        device = self.pick(data, devices, "device")
        return device, self.pick(data, self.graphs_of(device), "graph")

    def next_device(self, member: str) -> str:
        """The ID the member's next linked device gets (a6, b7, ...)."""
        return f"{member[0]}{6 + self.links}"

    def pick(self, data, items, label: str):
        return data.draw(st.sampled_from(items), label=label)

    @invariant()
    def invariants_hold(self) -> None:
        """The world as set up, before any step (each step checks itself in ``do``)."""
        if self.driver is not None and not self.steps and not self._checked_setup:
            self._checked_setup = True
            self._check()

    def teardown(self) -> None:
        if self.driver is None:
            return
        if self.cut:  # the budget ended the example: nothing to judge, only to close
            self.driver.close()
            return
        try:
            self.driver.run(self.world.quiesce)
            violations = self.monitor.final(self.world)
            self._report_coverage()
            if violations:
                raise InvariantViolation(violations)
        finally:
            self.driver.close()

    def _report_coverage(self) -> None:
        """Tell Hypothesis what this example reached: a statistic per behaviour, and a
        target (more behaviours in one example) that steers generation toward them."""
        reached = self.world.coverage.reached
        for name in sorted(reached):
            event(f"behaviour: {name}")
        target(float(len(reached)), label="behaviours reached")

    # -- the application's users ----------------------------------------------------------

    @rule(seconds=st.sampled_from([1, 5, 30, 120]))
    def advance(self, seconds):
        self.do(A.Advance(seconds=seconds))

    @rule(
        data=st.data(),
        record=st.sampled_from(RECORDS),
        delete=st.booleans(),
        again=st.sampled_from((0, 0, 0, 0.05, 0.2)),
    )
    def write(self, data, record, delete, again):
        """Any running device writes, the thief's included; some of the time the user
        edits the record again a moment later, while its push may be on the way."""
        chosen = self.device_and_graph(data)
        if chosen is None:
            return
        device, graph = chosen
        op = "delete" if delete else "edit"
        self.do(A.Write(device=device, graph=graph, record=record, op=op, again=again))

    @swarm("concurrent")
    @rule(data=st.data(), record=st.sampled_from(RECORDS))
    def concurrent_write(self, data, record):
        """Two devices write one record at the same instant (equal revs are likely)."""
        graph = "g:team"
        writers = [d for d in self.honest_devices() if graph in self.graphs_of(d)]
        if len(writers) < 2:
            return
        pair = data.draw(st.lists(st.sampled_from(writers), min_size=2, max_size=2, unique=True))
        self.do(A.Concurrent(devices=pair, graph=graph, record=record))

    @swarm("burst")
    @rule(data=st.data(), count=st.sampled_from([70, 140]))
    def burst(self, data, count):
        """Enough new records at once to cross a checkpoint boundary."""
        chosen = self.device_and_graph(data)
        if chosen is None:
            return
        device, graph = chosen
        self.do(A.Burst(device=device, graph=graph, count=count))

    @swarm("refresh")
    @rule(data=st.data())
    def refresh(self, data):
        """Several users press "sync now" at once (concurrent key grants, pushes, pulls)."""
        if len(self.alive()) < 2:
            return
        devices = data.draw(
            st.lists(st.sampled_from(self.alive()), min_size=2, max_size=3, unique=True)
        )
        self.do(A.Refresh(devices=sorted(devices)))

    # -- ceremonies -----------------------------------------------------------------------

    def ceremonies(self, data) -> list[dict]:
        """The ceremonies that can start now, as steps."""
        out = []
        if self.links < MAX_LINKS:
            member = self.pick(data, ["alice", "bob"], "member")
            out.append(A.Link(member=member, device=self.next_device(member)))
        pairs = self._same_member_pairs()
        if pairs:
            by, device = self.pick(data, pairs, "revoke")
            out.append(A.Revoke(by=by, device=device))
        holders = [d for d in self.honest_devices() if self.graphs_of(d)]
        if holders:
            by = self.pick(data, holders, "rotator")
            graph = self.pick(data, self.graphs_of(by), "graph")
            out.append(A.Rotate(by=by, graph=graph))
        alices = [d for d in self.honest_devices() if self.world.slots[d].member == "alice"]
        if alices and "a9" not in self.world.slots:
            source = self.pick(data, alices, "source")
            out.append(A.Recover(member="alice", device="a9", source=source))
        inviters = [d for d in self.honest_devices() if "g:team" in self.graphs_of(d)]
        if inviters and "d1" not in self.world.slots:
            by = self.pick(data, inviters, "inviter")
            out.append(A.Invite(by=by, graph="g:team", member="dave", device="d1"))
        return out

    def ceremony(self, step: A.Step) -> None:
        if isinstance(step, A.Link):
            self.links += 1
        self.do(step)

    @swarm("link")
    @precondition(lambda self: self.links < MAX_LINKS)
    @rule(
        member=st.sampled_from(("alice", "bob")),
        announce=st.booleans(),
        older=st.sampled_from([False, False, True]),
    )
    def link(self, member, announce, older):
        """A new device registers; ``announce``: the app has every device sync at once;
        ``older``: it runs an older client, registered without selfSig."""
        device = self.next_device(member)
        self.ceremony(A.Link(member=member, device=device, announce=announce, older=older))

    @since_classic
    @swarm("link")
    @precondition(lambda self: self.links < MAX_LINKS)
    @rule(
        data=st.data(),
        member=st.sampled_from(("alice", "bob")),
        outage=st.booleans(),
        forged=st.booleans(),
    )
    def newcomer(self, data, member, outage, forged):
        """A new device links, is granted the keys and writes before the others have read
        a roster that lists it: a receiver must read the roster again for the unknown
        signer (client rule 2). ``outage`` (with the errors rules): the roster route
        fails meanwhile, and what the newcomer wrote must wait, not be dropped (client rule 6).
        ``forged`` (with the rogue rules): the graph was written to and rotated before the
        link, and a member's non-conforming client fills the newcomer's oldest gap, an
        epoch below the latest, with a wrap it cannot open, before any holder grants it
        (client rule 12)."""
        device = self.next_device(member)
        graph = self.pick(data, self.world.graphs_of(member), "graph")
        holders = [d for d in self.honest_devices() if graph in self.graphs_of(d)]
        forged = forged and self.params.enabled("rogue") and bool(holders)
        if forged:  # history under an older epoch, which the newcomer must be able to read
            rotator = self.pick(data, holders, "rotator")
            self.do(A.Write(device=rotator, graph=graph, record="r1", op="edit"))
            self.do(A.Advance(seconds=5))  # pushed, sealed under the older epoch
            self.ceremony(A.Rotate(by=rotator, graph=graph))
        self.ceremony(A.Link(member=member, device=device, announce=False))
        if forged:
            forger = self.pick(data, holders, "forger")
            self.do(A.Forge(device=forger, graph=graph, record="r0", how="wrap", gap="oldest"))
        self.do(A.Advance(seconds=30))  # a holder's key-gap recheck grants it
        if outage and self.params.enabled("errors"):
            self.do(A.Errors(status=503, seconds=120, route="GET /graphs/:gid/devices"))
        self.do(A.Write(device=device, graph=graph, record="r0", op="edit"))
        self.do(A.Advance(seconds=30))

    @since_classic
    @swarm("link")
    @precondition(lambda self: self.links < MAX_LINKS)
    @rule(data=st.data(), member=st.sampled_from(("alice", "bob")))
    def handover(self, data, member):
        """A user links a new device from an old one, which approves it and grants it
        the keys, then loses the old one: another of the member's devices revokes it
        and rotates, and the user goes on writing on the new device. In approve mode
        nobody else may have approved the new device, which then stays behind an epoch
        (client rule 5: it must hold its writes; the spec's Ceremonies)."""
        device = self.next_device(member)
        self.ceremony(A.Link(member=member, device=device, announce=False))
        slots = self.world.slots
        for _ in range(2):  # until a key recheck has shown the new device to the old ones
            self.do(A.Advance(seconds=30))
            old = [
                d
                for d in self.honest_devices()
                if slots[d].member == member and slots[d].device.store.get("seen", device)
            ]
            if old:
                break
        else:
            return
        by = self.pick(data, old, "approver")
        self.do(A.Approve(by=by, device=device))
        self.do(A.Advance(seconds=30))  # the approver grants the keys
        others = [d for d in self.honest_devices() if slots[d].member == member and d != by]
        if not others:
            return
        revoker = self.pick(data, others, "revoker")
        self.ceremony(A.Revoke(by=revoker, device=by))
        self.do(A.Advance(seconds=120))  # past the rotation's grace (revocation.py)
        graph = self.pick(data, self.graphs_of(device), "graph")
        self.do(A.Write(device=device, graph=graph, record="r0", op="edit"))
        self.do(A.Advance(seconds=30))

    @swarm("approve")
    @rule(data=st.data())
    def approve_or_reject(self, data):
        """A human decides on a pending device: by comparing pairing codes, or blindly."""
        pending = [
            (by, d)
            for by in self.honest_devices()
            for d, seen in sorted(self.world.slots[by].device.store.rows("seen").items())
            if self.world.slots[by].device.pin(d) is None and seen
        ]
        if not pending:
            return
        by, device = self.pick(data, pending, "pending")
        verdicts = CLASSIC_VERDICTS if self.classic else ["pair", "pair", "approve", "reject"]
        verdict = self.pick(data, verdicts, "verdict")
        self.do(A.BY_RULE[verdict](by=by, device=device))

    def _same_member_pairs(self) -> list[tuple[str, str]]:
        devices = self.honest_devices()
        slots = self.world.slots
        return [
            (by, d)
            for by in devices
            for d in devices
            if by != d and slots[by].member == slots[d].member
        ]

    @swarm("revoke")
    @rule(data=st.data())
    def revoke(self, data):
        pairs = self._same_member_pairs()
        if pairs:
            by, device = self.pick(data, pairs, "revoke")
            self.ceremony(A.Revoke(by=by, device=device))

    @swarm("rotate")
    @rule(data=st.data(), graph=st.sampled_from(GRAPHS))
    def rotate(self, data, graph):
        """Any running holder rotates (a thief too)."""
        holders = [d for d in self.alive() if graph in self.graphs_of(d)]
        if holders:
            self.ceremony(A.Rotate(by=self.pick(data, holders, "rotator"), graph=graph))

    @since_classic
    @swarm("rotate")
    @precondition(lambda self: self.params is not None and self.params.approval_mode == "observe")
    @rule(data=st.data(), graph=st.sampled_from(GRAPHS))
    def rotate_race(self, data, graph):
        """Two holders rotate one graph at the same instant (two admins at once). In
        observe mode only: in approve mode the loser's grant gives the devices the
        winner excluded another key (docs/findings.md, F1, a known split of the spec),
        whose records the others then refuse."""
        holders = [d for d in self.honest_devices() if graph in self.graphs_of(d)]
        if len(holders) >= 2:
            pair = st.lists(st.sampled_from(holders), min_size=2, max_size=2, unique=True)
            self.do(A.RotateRace(devices=data.draw(pair), graph=graph))

    @since_classic
    @swarm("recover")
    @rule(data=st.data())
    def reimport(self, data):
        """A user imports a recovery bundle on a device that has synced for a while (from
        another of the member's devices): importing first wipes its local record store."""
        devices = [d for d in self.honest_devices() if self.graphs_of(d)]
        if not devices:
            return
        device = self.pick(data, devices, "device")
        member = self.world.slots[device].member
        sources = [d for d in self.honest_devices() if self.world.slots[d].member == member]
        self.do(A.Reimport(device=device, source=self.pick(data, sources, "source")))

    @swarm("recover")
    @rule(data=st.data())
    def recover(self, data):
        alices = [d for d in self.honest_devices() if self.world.slots[d].member == "alice"]
        if alices and "a9" not in self.world.slots:
            source = self.pick(data, alices, "source")
            self.ceremony(A.Recover(member="alice", device="a9", source=source))

    @since_classic
    @swarm("recover")
    @rule(data=st.data(), malformed=st.sampled_from(tuple(BOX_MALFORMATIONS)))
    def recover_malformed(self, data, malformed):
        """A new device of alice is handed her recovery bundle broken one way of the spec's
        table (``SEALED_BOX``): it refuses an invalid one and adopts nothing from it."""
        alices = [d for d in self.honest_devices() if self.world.slots[d].member == "alice"]
        if alices and "a9" not in self.world.slots:
            source = self.pick(data, alices, "source")
            self.ceremony(A.Recover(member="alice", device="a9", source=source,
                                    malformed=malformed))  # fmt: skip

    @swarm("invite")
    @rule(data=st.data())
    def invite(self, data):
        """A member invites a new member, dave, to the group: dave's device opens the invite."""
        self._invite(data, None)

    @since_classic
    @swarm("invite")
    @rule(
        data=st.data(),
        malformed=st.sampled_from((*BOX_MALFORMATIONS, *INVITE_MALFORMATIONS)),
    )
    def invite_malformed(self, data, malformed):
        """dave's device is given the invite string, or handed the box by the host, broken
        one way of the spec's tables: it refuses an invalid one and adopts nothing from it."""
        self._invite(data, malformed)

    def _invite(self, data, malformed: str | None) -> None:
        inviters = [d for d in self.honest_devices() if "g:team" in self.graphs_of(d)]
        if inviters and "d1" not in self.world.slots:
            by = self.pick(data, inviters, "inviter")
            self.ceremony(
                A.Invite(by=by, graph="g:team", member="dave", device="d1", malformed=malformed)
            )

    # -- the directory --------------------------------------------------------------------

    # -- blobs ----------------------------------------------------------------------------

    # -- faults ---------------------------------------------------------------------------


class ReleaseRules(RuleBasedStateMachine):
    """The rules of a release (``--rollout``, ``--mix``): mixed into a machine only when
    it fuzzes one, so a machine of one version draws exactly what it drew before."""

    @precondition(lambda self: "rollout" in self.release and self.params is not None)
    @rule(data=st.data())
    def upgrade(self, data):
        """The release reaches one more device, at a drawn moment (one at a time)."""
        world = self.world
        old = [
            d
            for d, s in sorted(world.slots.items())
            if d not in world.versions.moved and not s.revoked
        ]
        if old:
            self.do(A.Upgrade(target=self.pick(data, old, "device")))

    @precondition(lambda self: self.params is not None and RELAY not in self.world.versions.moved)
    @rule()
    def upgrade_relay(self):
        """The release reaches the relay, at a drawn moment: before, between or after
        the devices (it may also have started on the new version)."""
        self.do(A.Upgrade(target=RELAY))


class HonestMachine(WorldMachine):
    """An honest relay under network faults, clock skew and crashes."""


class AdversaryMachine(AttackRules, WorldMachine):
    """A relay that turns malicious for chosen devices (forks included), devices that
    get stolen, and attacks aimed at a device right after it restarts."""

    honest = False

    def ceremonies(self, data) -> list[dict]:
        """Those of the honest machine, and a theft (which ``interrupt`` may cut too)."""
        out = super().ceremonies(data)
        pairs = self._same_member_pairs()
        if pairs:
            by, device = self.pick(data, pairs, "steal")
            out.append(A.Steal(by=by, device=device))
        return out


def machine_for(
    variant: Variant,
    honest: bool,
    classic: bool = False,
    device_model: bool = True,
    base: Variant = HONEST,
    release: frozenset = frozenset(),
    base_ref: str | None = None,
    variant_ref: str | None = None,
    steering: Steering | None = None,
) -> type[WorldMachine]:
    """A state machine class that fuzzes ``variant`` (``classic``: with the rules and
    draws of commit 685eb33's machines, so that a benchmark compares equal work;
    ``device_model``: off only to measure what the model costs; ``release``:
    ``rollout`` and/or ``mix``, from ``base`` to ``variant``, docs/releases.md;
    ``base_ref``, ``variant_ref``: how its reproducers name them, if not as the run;
    ``steering``: toward where the change departs, simkit.fuzz.steer)."""
    machine = HonestMachine if honest else AdversaryMachine
    bases = (ReleaseRules, machine) if release else (machine,)
    name = f"{machine.__name__}[{variant.name}]"
    attributes = {
        "variant": variant, "classic": classic, "device_model": device_model,
        "base": base, "release": frozenset(release), "base_ref": base_ref or base.name,
        "variant_ref": variant_ref, "steering": steering,
    }  # fmt: skip
    return type(name, bases, attributes)
