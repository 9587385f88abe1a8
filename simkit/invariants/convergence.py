"""convergence, lww and no-lost-write: what devices hold after heal and drain."""

from simkit.invariants.base import Invariant, can_write, events, rev_text, views
from simkit.protocol.ids import storage_key


class Convergence(Invariant):
    """After heal and drain, every device with an unfiltered view of a graph (and its
    latest key) holds exactly the relay's LWW winners, apart from records it refused
    on purpose and its own writes still queued (held by policy, e.g. a read-only
    member; ``liveness`` says when a queue must have drained)."""

    name = "convergence"
    honest_only = True

    def final(self, world):
        out = []
        for sk, graph in sorted(world.relay.state.graphs.items()):
            winners = {rid: row.rev for rid, row in graph.records.items()}
            for device_id, device, graph_id in views(world, sk):
                held = {rid: r["at"] for rid, r in device.records(graph_id).items()}
                refused = device.store.rows(f"refused:{sk}")
                queued = device.store.rows(f"queue:{sk}")  # held by policy (liveness checks)
                wrong = sorted(
                    rid
                    for rid in winners.keys() | held.keys()
                    if held.get(rid) != winners.get(rid)
                    and rid not in refused
                    and rid not in queued
                )
                if wrong:
                    out.append(
                        self.violation(
                            world,
                            f"{device_id} does not hold the relay's winners for {len(wrong)} "
                            f"record(s), e.g. {wrong[0]}: held {rev_text(held.get(wrong[0]))}, "
                            f"relay {rev_text(winners.get(wrong[0]))}",
                            graph=sk,
                            devices=(device_id,),
                            records=wrong,
                        )
                    )
        return out


class LastWriteWins(Invariant):
    """The stored version of each record is the highest rev written, and of equal
    revs the relay keeps the first: the row is the first log entry with the top rev."""

    name = "lww"

    def step(self, world):
        out = []
        for sk, graph in sorted(world.relay.state.graphs.items()):
            first_top: dict[str, tuple[int, int]] = {}
            for entry in graph.log:
                top = first_top.get(entry.record_id)
                if top is None or entry.rev > top[0]:
                    first_top[entry.record_id] = (entry.rev, entry.seq)
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
    """Every write a device accepted locally is present (or superseded by an equal or
    higher rev) on every subscribed device after drain, across crashes and restarts.

    Owed are each device's last write of each record, and every write the relay
    logged; not a record the relay refused for good (``push.rejected``, a quota).
    (A write replaced in its device's queue before it was pushed never reaches the
    relay: its device's later write supersedes it.) A write re-stamped
    after a clock repair (``record.restamped``) counts at its new rev. Writes by
    devices that were revoked, may not write, or never got the graph's latest key
    are not owed (liveness covers the last two).
    """

    name = "no-lost-write"
    honest_only = True

    def final(self, world):
        moved = {
            (e.actor, e.fields["graph"], e.fields["recordId"], e.fields["old"]): e.fields["new"]
            for e in events(world, "record.restamped")
        }
        logged = {
            (sk, entry.record_id, entry.rev)
            for sk, graph in world.relay.state.graphs.items()
            for entry in graph.log
        }
        refused = {
            (e.actor, e.fields["graph"], e.fields["recordId"])
            for e in events(world, "push.rejected")
        }
        last, owed = {}, []
        for write in events(world, "app.write"):
            key = (write.actor, write.fields["graph"], write.fields["recordId"])
            if key in refused:  # the relay refused it for good (a quota): not owed
                continue
            rev = write.fields["rev"]
            while (*key, rev) in moved:
                rev = moved[(*key, rev)]
            sk = storage_key(write.fields["graph"], world.slots[write.actor].member)
            last[key] = (write, rev, sk)
            if (sk, write.fields["recordId"], rev) in logged:
                owed.append((write, rev, sk))
        out = []
        by_seq = {write.seq: (write, rev, sk) for write, rev, sk in (*owed, *last.values())}
        for _, (write, rev, sk) in sorted(by_seq.items()):
            writer = world.slots[write.actor]
            if writer.revoked or writer.device is None or not can_write(world, write.actor, sk):
                continue
            if writer.device.behind(write.fields["graph"]):
                continue
            out.extend(self._missing(world, write, rev, sk))
        return out

    def _missing(self, world, write, rev, sk):
        rid = write.fields["recordId"]
        for device_id, device, graph_id in views(world, sk):
            held = device.records(graph_id).get(rid)
            if held is not None and (held["at"] >= rev or held["data"] == write.fields["data"]):
                continue
            if rid in device.store.rows(f"refused:{sk}"):
                continue
            yield self.violation(
                world,
                f"write #{write.seq} by {write.actor} ({rid} at {rev_text(rev)}) is missing on "
                f"{device_id}, which holds {rev_text(held and held['at'])}",
                graph=sk,
                devices=(write.actor, device_id),
                records=(rid,),
            )
