"""convergence, lww and no-lost-write: what devices hold after heal and drain.

Records are compared as a user sees them (content, deleted flag, author and rev),
never by ``(recordId, rev)`` alone: two versions of one record may carry the same
rev (two devices stamping the same instant), and a device that keeps the wrong one
holds the right rev with the wrong content.
"""

from simkit.invariants.base import Invariant, opened_row, rev_text, seen, views
from simkit.protocol.ids import storage_key
from simkit.sim.settle import can_write, held_for_good


class Convergence(Invariant):
    """After heal and drain, every device with an unfiltered view of a graph (and its
    latest key) holds exactly the relay's LWW winners, content included, apart from
    records it refused on purpose and its own writes still queued (held by policy,
    e.g. a read-only member; ``liveness`` says when a queue must have drained)."""

    name = "convergence"
    honest_only = True

    def final(self, world):
        out = []
        for sk, graph in sorted(world.relay.state.graphs.items()):
            for device_id, device, graph_id in views(world, sk):
                keys = device.keyring(graph_id).keys
                held = device.records(graph_id)
                refused = device.store.rows(f"refused:{sk}")
                queued = device.store.rows(f"queue:{sk}")  # held by policy (liveness checks)
                wrong = {}
                for rid in sorted(graph.records.keys() | held.keys()):
                    if rid in refused or rid in queued:
                        continue
                    row = graph.records.get(rid)
                    winner = None if row is None else opened_row(sk, row, keys)
                    if row is not None and winner is None:
                        continue  # a row nobody can open is refused by every receiver
                    if held.get(rid) != winner:
                        wrong[rid] = (held.get(rid), winner)
                if wrong:
                    first, (mine, theirs) = next(iter(wrong.items()))
                    out.append(
                        self.violation(
                            world,
                            f"{device_id} does not hold the relay's winners for {len(wrong)} "
                            f"record(s), e.g. {first}: holds {seen(mine)}; the relay's winner "
                            f"is {seen(theirs)}",
                            graph=sk,
                            devices=(device_id,),
                            records=tuple(wrong),
                        )
                    )
        return out


class LastWriteWins(Invariant):
    """The stored version of each record is the highest rev written, and of equal
    revs the relay keeps the first: the row is the first log entry with the top rev.

    The log only grows, so the first top entry of each record is kept as entries
    arrive; a changed earlier entry is ``seq-and-log``'s to report."""

    name = "lww"

    def __init__(self) -> None:
        self._first_top: dict[str, dict[str, tuple[int, int]]] = {}
        self._read: dict[str, int] = {}

    def step(self, world):
        out = []
        for sk, graph in sorted(world.relay.state.graphs.items()):
            first_top = self._first_top.setdefault(sk, {})
            for entry in graph.log[self._read.get(sk, 0) :]:
                top = first_top.get(entry.record_id)
                if top is None or entry.rev > top[0]:
                    first_top[entry.record_id] = (entry.rev, entry.seq)
            self._read[sk] = len(graph.log)
            for rid, row in sorted(graph.records.items()):
                expected = first_top.get(rid)
                if expected is not None and (row.rev, row.seq) != expected:
                    out.append(
                        self.violation(
                            world,
                            f"{rid} is stored at {rev_text(row.rev)} seq {row.seq}; the first "
                            f"write of the highest rev is {rev_text(expected[0])} "
                            f"seq {expected[1]}",
                            graph=sk,
                            records=(rid,),
                        )
                    )
        return out


class NoLostWrite(Invariant):
    """Every write a device accepted locally is present (or superseded by a higher
    rev, or an equal rev the relay kept first) on every subscribed device after
    drain, across crashes and restarts.

    Owed are each device's last write of each record, and every write the relay
    logged; not a record the relay refused for good (``push.rejected``, a quota).
    (A write replaced in its device's queue before it was pushed never reaches the
    relay: its device's later write supersedes it.) A write re-stamped after a clock
    repair (``record.restamped``) counts at its new rev. Writes by devices that were
    revoked, may not write, or never got the graph's latest key are not owed
    (liveness covers the last two).
    """

    name = "no-lost-write"
    honest_only = True
    observes = ("app.write", "record.restamped", "push.rejected", "app.reimport")

    def __init__(self) -> None:
        # (device, graph ID, record) -> its last write: (trace seq, rev, data)
        self._last: dict[tuple[str, str, str], tuple[int, int, dict]] = {}
        # (device, graph ID, record, rev) -> (trace seq, data) of every write
        self._writes: dict[tuple[str, str, str, int], tuple[int, dict]] = {}
        self._refused: set[tuple[str, str, str]] = set()

    def observe(self, world, event):
        fields = event.fields
        if fields["name"] == "app.reimport":  # the import wiped the writes still queued
            for graph_id, record_id in fields["wiped"]:
                self._last.pop((event.actor, graph_id, record_id), None)
            return ()
        key = (event.actor, fields["graph"], fields["recordId"])
        if fields["name"] == "app.write":
            self._last[key] = (event.seq, fields["rev"], fields["data"])
            self._writes[(*key, fields["rev"])] = (event.seq, fields["data"])
            self._refused.discard(key)
        elif fields["name"] == "record.restamped":
            moved = self._writes.pop((*key, fields["old"]), None)
            if moved is not None:
                self._writes[(*key, fields["new"])] = moved
                if self._last.get(key, (None,))[0] == moved[0]:
                    self._last[key] = (moved[0], fields["new"], moved[1])
        else:  # push.rejected: the relay refused it for good, it is not owed
            self._refused.add(key)
        return ()

    def final(self, world):
        logged = {
            (sk, entry.record_id, entry.rev)
            for sk, graph in world.relay.state.graphs.items()
            for entry in graph.log
        }
        owed: dict[int, tuple[str, str, str, int, dict]] = {}
        for (actor, graph_id, rid, rev), (seq, data) in self._writes.items():
            sk = storage_key(graph_id, world.slots[actor].member)
            if (sk, rid, rev) in logged:
                owed[seq] = (actor, graph_id, rid, rev, data)
        for (actor, graph_id, rid), (seq, rev, data) in self._last.items():
            if (actor, graph_id, rid) not in self._refused:
                owed[seq] = (actor, graph_id, rid, rev, data)
        out = []
        for seq, (actor, graph_id, rid, rev, data) in sorted(owed.items()):
            writer = world.slots[actor]
            sk = storage_key(graph_id, writer.member)
            if writer.revoked or writer.device is None or not can_write(world, actor, sk):
                continue
            # held: behind an epoch it knows of, or one whose key is not coming (a rotation
            # excluded it in approve mode, F5), though no answer told it so yet (F34)
            if writer.device.behind(graph_id) or held_for_good(world, writer, graph_id):
                continue
            out.extend(self._missing(world, seq, actor, sk, rid, rev, data))
        return out

    def _missing(self, world, seq, actor, sk, rid, rev, data):
        row = world.relay.state.graphs.get(sk)
        stored = row.records.get(rid) if row is not None else None
        for device_id, device, graph_id in views(world, sk):
            held = device.records(graph_id).get(rid)
            if held is not None and (held["at"] > rev or held["data"] == data):
                continue
            if held is not None and held["at"] == rev and stored is not None and stored.rev == rev:
                continue  # an equal rev the relay kept first: this write lost the tie
            if rid in device.store.rows(f"refused:{sk}"):
                continue
            yield self.violation(
                world,
                f"write #{seq} by {actor} ({rid} at {rev_text(rev)}) is missing on {device_id}, "
                f"which holds {seen(held)}",
                graph=sk,
                devices=(actor, device_id),
                records=(rid,),
            )
