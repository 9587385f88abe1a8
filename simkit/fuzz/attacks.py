"""The rules that draw what a malicious relay does: a mode switched on for chosen
devices, an attack with what exposes it, malformed answers from the spec's tables,
a fork meeting the honest history, an attack right after a restart, a theft."""

from hypothesis import strategies as st
from hypothesis.stateful import rule

from simkit.fuzz import actions as A
from simkit.fuzz.params import RECORDS
from simkit.fuzz.swarm import since_classic, swarm
from simkit.protocol.messages import ANSWER_MALFORMATIONS

MODES = (
    ("withhold", {"log": "lists"}),
    ("withhold", {"log": "hides"}),
    ("withhold", {"log": "lists", "fraction": 0.5}),
    ("rollback", {}),
    ("fork", {}),
    ("reorder", {"what": "log"}),
    ("reorder", {"what": "pull"}),
    ("replay", {"into": "slot"}),
    ("replay", {"into": "graph"}),
    ("rewrite-log", {"how": "rev"}),
    ("rewrite-log", {"how": "drop"}),
    ("substitute-keys", {}),
    ("drop-wraps", {}),
    ("substitute-wraps", {}),
    ("lie-epoch", {}),
)
CLASSIC_MODES = tuple(MODES[i] for i in (0, 1, 3, 5, 7, 9, 11, 14))  # 685eb33's (``classic``)
ANSWERS_MALFORMED = tuple(ANSWER_MALFORMATIONS)


class AttackRules:
    """Rules of ``AdversaryMachine`` (``simkit.fuzz.machine``)."""

    def _mode(self, data, name: str, params: dict, target: str) -> A.Adversary:
        params = dict(params)
        if name == "rollback":
            params["snapshot_at"] = 0
        if name == "substitute-keys":
            others = [d for d in self.honest_devices() if d != target]
            params["victim"] = self.pick(data, others, "victim")
        return A.Adversary(mode=name, targets=[target], params=params)

    @swarm("adversary")
    @rule(data=st.data())
    def malicious(self, data):
        if len(self.honest_devices()) < 2:
            return
        # a rollback twice as often: its situation needs the mode and a push answered
        # under it (a rolled-back relay answering a push; about 1 in 130 worlds without)
        modes = CLASSIC_MODES if self.classic else (*MODES, ("rollback", {}))
        mode = self.pick(data, modes, "mode")
        target = self.pick(data, self.honest_devices(), "target")
        graphs = self.graphs_of(target) if mode[0] == "rollback" else []
        graph = self.pick(data, graphs, "graph") if graphs else None
        if graph is not None:  # the target is served a counter the snapshot lacks ...
            self.do(A.Write(device=target, graph=graph, record=RECORDS[1], op="edit"))
            self.do(A.Advance(seconds=5))
        self.do(self._mode(data, *mode, target))
        if graph is not None:
            # ... then writes at once: a rolled-back relay answering its push is the
            # contradiction this mode is about (a situation; rare when left to chance)
            self.do(A.Write(device=target, graph=graph, record=RECORDS[0], op="edit"))

    @since_classic
    @swarm("adversary")
    @rule(
        data=st.data(),
        mode=st.sampled_from(MODES),
        count=st.sampled_from([1, 70, 70]),  # a boundary's worth is what checkpoints need
        merge=st.sampled_from([True, True, False]),
    )
    def attack(self, data, mode, count, merge):
        """A mode switched on, then what exposes it: another device writes to a graph
        the target follows (one record, or a checkpoint boundary's worth); on a fork
        or rollback the target writes as much on its side; after substituted keys the
        target rotates (a wrap to the changed keys); time passes for checkpoints to be
        published and served; and a fork or rollback may meet the honest history."""
        if len(self.honest_devices()) < 2:
            return
        target = self.pick(data, self.honest_devices(), "target")
        shared = [
            (d, g)
            for d in self.honest_devices()
            if d != target
            for g in self.graphs_of(d)
            if g in self.graphs_of(target)
        ]
        if not shared:
            return
        writer, graph = self.pick(data, shared, "writer")
        if mode[0] == "withhold":
            # the target first holds the version the withheld one replaces: log check (1)
            # judges the rev an entry names, not only its record (a situation)
            self.do(A.Write(device=writer, graph=graph, record="r0", op="edit"))
            self.do(A.Advance(seconds=30))
        self.do(self._mode(data, *mode, target))
        sides = [writer, target] if mode[0] in ("fork", "rollback") else [writer]
        for device in sides:
            if count == 1 or mode[0] == "withhold":
                self.do(A.Write(device=device, graph=graph, record="r0", op="edit"))
            if count > 1:
                self.do(A.Burst(device=device, graph=graph, count=count))
        if mode[0] == "substitute-keys":
            self.do(A.Rotate(by=target, graph=graph))
        self.do(A.Advance(seconds=30))
        self.do(A.Advance(seconds=30))
        if merge and mode[0] in ("fork", "rollback"):
            self.do(A.Merge())
            self.do(A.Advance(seconds=30))

    @since_classic
    @swarm("adversary")
    @rule(data=st.data(), what=st.sampled_from(ANSWERS_MALFORMED))
    def malformed_answers(self, data, what):
        """The relay answers a device with one malformation of the spec's table of an
        answer (a roster entry, keys, a wrap, a key gap, a pull or log page or entry, a
        push answer), then time passes: it must neither crash nor believe it."""
        if len(self.honest_devices()) < 2:
            return
        target = self.pick(data, self.honest_devices(), "target")
        self.do(A.Adversary(mode="malform", targets=[target], params={"what": what}))
        self.do(A.Advance(seconds=30))

    @since_classic
    @swarm("adversary")
    @rule()
    def merge(self):
        """The relay ends its oldest mode: a fork or rollback meets the honest history."""
        self.do(A.Merge())

    @since_classic
    @swarm("adversary")
    @rule(data=st.data(), mode=st.sampled_from(MODES))
    def attack_after_restart(self, data, mode):
        """A crashed device boots and is attacked at once, on what it kept across the
        crash (pins, epochs, checkpoints, cursors)."""
        down = [
            d for d, s in sorted(self.world.slots.items()) if s.device is None and not s.revoked
        ]
        if not down or not self.honest_devices():
            return
        target = self.pick(data, down, "device")
        self.do(A.Restart(device=target))
        self.do(self._mode(data, *mode, target))

    @swarm("steal")
    @rule(data=st.data())
    def steal(self, data):
        pairs = self._same_member_pairs()
        if pairs:
            by, device = self.pick(data, pairs, "steal")
            self.ceremony(A.Steal(by=by, device=device))
