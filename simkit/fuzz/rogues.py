"""The rules that draw what a member's non-conforming client or a rogue device sends
(forgeries, malformed records from the spec's tables, false checkpoints, a newer
client's records, raw requests), and the host's and blobs' side: membership,
capabilities, blob uploads and uses, sweeps."""

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from simkit.fuzz import actions as A
from simkit.fuzz import rogue
from simkit.fuzz.params import RECORDS
from simkit.fuzz.swarm import since_classic, swarm
from simkit.model.requests import requests
from simkit.protocol.messages import RECEIVED_RECORD, RECORD_MALFORMATIONS
from simkit.sim.clock import relay_time_ms
from simkit.sim.forge import HOWS


def _weight(name: str) -> int:
    """An absent member comes up three times as often as another malformation, an
    optional one (``s``, ``d``, ``deleted``) eight times: a receiver that reads an
    optional member's absence as "nothing to check" accepts what it must refuse."""
    m = RECORD_MALFORMATIONS[name]
    if m.kind != "absent":
        return 1
    table = next(t for t in RECEIVED_RECORD if t.name == m.message)
    return 3 if next(f for f in table.fields if f.name == m.field).required else 8


MALFORMED = tuple(m for m in RECORD_MALFORMATIONS for _ in range(_weight(m)))
BLOB_POLICIES = (("retain", None), ("transport", None), ("ephemeral", 1_000), ("ephemeral", 90_000))


class RogueRules:
    """Rules of the machines (``simkit.fuzz.machine``) mixed into ``WorldMachine``."""

    @swarm("rogue")
    @rule(
        data=st.data(),
        record=st.sampled_from(RECORDS),
        how=st.sampled_from(HOWS),
        op=st.sampled_from(["edit", "delete"]),
    )
    def forge(self, data, record, how, op):
        """A member's non-conforming client pushes a sealed record (or tombstone) that
        breaks one receive check: every receiver refuses it. Or it fills a key gap, of
        the latest epoch or of the oldest one a device lacks, with a wrap nobody can open."""
        chosen = self.device_and_graph(data)
        if chosen is None:
            return
        device, graph = chosen
        gap = self.pick(data, ["latest", "oldest"], "gap") if how == "wrap" else None
        self.do(A.Forge(device=device, graph=graph, record=record, how=how, gap=gap, op=op))

    @since_classic
    @swarm("rogue")
    @rule(data=st.data(), record=st.sampled_from(RECORDS), what=st.sampled_from(MALFORMED))
    def malformed(self, data, record, what):
        """A member's non-conforming client pushes a record with one malformation of the
        spec's tables (``simkit.protocol.messages``): refused when invalid, applied when
        valid (a member at its boundary, an unknown member, a key given twice)."""
        chosen = self.device_and_graph(data)
        if chosen is not None:
            device, graph = chosen
            self.do(A.Malformed(device=device, graph=graph, record=record, what=what))

    @since_classic
    @swarm("rogue")
    @rule(data=st.data(), of=st.sampled_from(["other-member", "other-slot"]))
    def false_checkpoint(self, data, of):
        """A member's client publishes a checkpoint nobody may believe (another member's
        device, or another device's slot), after enough writes for a boundary: a
        receiver that believed it would compare heads with it and raise a false alarm."""
        chosen = self.device_and_graph(data)
        if chosen is None:
            return
        device, graph = chosen
        self.do(A.Burst(device=device, graph=graph, count=70))
        self.do(A.FalseCheckpoint(device=device, graph=graph, of=of))
        self.do(A.Advance(seconds=30))

    @since_classic
    @swarm("newer")
    @rule(data=st.data(), record=st.sampled_from(RECORDS))
    def newer(self, data, record):
        """A member's newer client writes a record carrying a member this client does not
        know (Versioning rule 3): it is signed, then ignored; every device accepts it."""
        chosen = self.device_and_graph(data)
        if chosen is not None:
            device, graph = chosen
            self.do(A.Newer(device=device, graph=graph, record=record))

    @swarm("rogue")
    @rule(data=st.data(), count=st.integers(1, 40))
    def raw_requests(self, data, count):
        """A client outside the fleet sends a burst of raw requests drawn from the whole
        request space (``simkit.fuzz.rogue``), each aimed at the relay as the model sees
        it after the one before; every answer is checked against the model."""
        for _ in range(count):
            oracle = self.world.relay_oracle
            if oracle is None or oracle.check is None:
                return
            now = relay_time_ms(self.world.now())
            request = data.draw(requests(oracle.check.model, rogue.SPACE, now), label="request")
            self.do(A.Rogue(request=rogue.encode(request)))

    @swarm("membership")
    @rule(member=st.sampled_from(("carol", "bob")), leave=st.booleans())
    def membership(self, member, leave):
        """A member leaves or rejoins the group (the roster keeps its devices)."""
        self.do((A.Leave if leave else A.Join)(member=member))

    @swarm("capability")
    @rule(
        member=st.sampled_from(("bob", "carol")),
        may=st.sampled_from(["read-only", "all", "no-rotate"]),
    )
    def capability(self, member, may):
        self.do(A.Capability(member=member, may=may))

    @swarm("blobs")
    @rule(data=st.data(), policy=st.sampled_from(BLOB_POLICIES))
    def blob_upload(self, data, policy):
        chosen = self.device_and_graph(data)
        if chosen is None:
            return
        device, graph = chosen
        blob = f"{device}-b{len(self.steps)}"
        self.blobs.append((graph, blob))
        name, ttl = policy
        self.do(A.BlobUpload(device=device, graph=graph, blob=blob, policy=name, ttl=ttl))
        if ttl == 1_000 and data.draw(st.booleans(), label="used after its ttl"):
            # used once its ttl has passed, likely before a sweep: Blob, "GET, ack and
            # DELETE of an expired blob find nothing, swept or not"
            self.do(A.Advance(seconds=2))
            self.do(A.BlobFetch(device=device, graph=graph, blob=blob, ack=False))

    @swarm("blobs")
    @rule(data=st.data(), ack=st.booleans(), delete=st.booleans())
    def blob_use(self, data, ack, delete):
        """A member's device fetches a blob (and acks it), or deletes it."""
        if not self.blobs or not self.alive():
            return
        graph, blob = self.pick(data, self.blobs, "blob")
        readers = [d for d in self.alive() if graph in self.graphs_of(d)]
        if not readers:
            return
        device = self.pick(data, readers, "device")
        if delete:
            self.do(A.BlobDelete(device=device, graph=graph, blob=blob))
        else:
            self.do(A.BlobFetch(device=device, graph=graph, blob=blob, ack=ack))

    @swarm("blobs")
    @precondition(lambda self: self.params.relay.get("sweep_interval_ms") == 0)
    @rule()
    def sweep(self):
        """The built-in sweeper is off: the one external job sweeps."""
        self.do(A.Sweep())
