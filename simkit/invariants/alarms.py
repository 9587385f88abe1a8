"""alarm-soundness and alarm-completeness: the log alarm fires when, and only when,
the relay misbehaves in a way the protocol can detect."""

from simkit.client.logverify import ALARM
from simkit.client.schemas import CHECKPOINT_KIND
from simkit.invariants.base import Invariant
from simkit.protocol.derived import checkpoint_record_id
from simkit.protocol.ids import graph_id_for, storage_key
from simkit.sim.clock import DEFAULT_EPOCH_MS


class AlarmSoundness(Invariant):
    """With an honest relay, under any network faults, clock skew and crashes, no device
    ever reaches ``alarm`` and no honest record is rejected (records a non-conforming
    client forged must be: the ledger knows which ops a pull handed each device).

    Two rejections are the protocol's own doing and are counted in ``known`` instead:
    a record written before its writer was revoked, stamped (by a clock running
    ahead) after the revocation, refused as ``revoked-device``, an application's
    write or a checkpoint the client wrote itself (docs/findings.md, F2); and a
    record its writer sealed under an epoch key the refuser does not share, after two
    rotations split that epoch (F1), refused as ``decrypt``.
    """

    name = "alarm-soundness"
    honest_only = True
    judges_events = True
    observes = (
        "app.write",
        "other.write",
        "checkpoint.published",
        "record.restamped",
        "record.rejected",
        "log.alarm",
    )

    def __init__(self) -> None:
        # (record, rev) -> every (writer, t): two devices may stamp the same rev
        self._writes: dict[tuple[str, int], list[tuple[str, float]]] = {}
        self.known: list[str] = []

    def _written_before_revocation(self, world, fields) -> bool:
        for writer, t in self._writes.get((fields["recordId"], fields["rev"]), ()):
            device = world.relay.state.devices.get(writer)
            if (
                device is not None
                and device.revoked_at is not None
                and DEFAULT_EPOCH_MS + t * 1000 < device.revoked_at
            ):
                return True
        return False

    def _split_epoch(self, world, sk: str, event, fields) -> bool:
        """The record's writer holds another key than the refuser for the epoch it was
        sealed under (when the relay still stores that version; else for any epoch both
        hold): an epoch split between two keys (F1)."""
        graph = world.relay.state.graphs.get(sk)
        row = graph.records.get(fields["recordId"]) if graph else None
        refuser = world.slots[event.actor].device
        if refuser is None:
            return False
        theirs = refuser.keyring(fields["graph"]).keys
        stored = row is not None and row.rev == fields["rev"] and row.e is not None
        for writer, _ in self._writes.get((fields["recordId"], fields["rev"]), ()):
            device = world.slots[writer].device
            if device is None:
                continue
            mine = device.keyring(graph_id_for(sk, device.member_id)).keys
            epochs = [row.e] if stored else mine.keys() & theirs.keys()
            if any(mine.get(e) not in (None, theirs.get(e)) for e in epochs):
                return True
        return False

    def observe(self, world, event):
        fields = event.fields
        name = fields["name"]
        # the client writes checkpoints; another client of the member writes with its keys
        if name in ("app.write", "other.write", "checkpoint.published"):
            self._writes.setdefault((fields["recordId"], fields["rev"]), []).append(
                (event.actor, event.t)
            )
            return ()
        if name == "record.restamped":
            old, new = (fields["recordId"], fields["old"]), (fields["recordId"], fields["new"])
            mine = [(w, t) for w, t in self._writes.get(old, ()) if w == event.actor]
            if old != new:  # a re-stamp to the same rev (a broken clock repair) adds no writer
                self._writes.setdefault(new, []).extend(mine)
            return ()
        if name == "record.rejected":
            sk = storage_key(fields["graph"], world.slots[event.actor].member)
            if world.ledger.handed_forgery(event.actor, sk, fields["recordId"], fields["rev"]):
                return ()  # a non-conforming client's record: refusing it is right
            if fields["reason"] == "revoked-device" and self._written_before_revocation(
                world, fields
            ):
                self.known.append(f"F2: {event.actor} refused {fields['recordId']}")
                return ()
            if fields["reason"] == "decrypt" and self._split_epoch(world, sk, event, fields):
                self.known.append(f"F1: {event.actor} refused {fields['recordId']}")
                return ()
            detail = (
                f"{event.actor} rejected the honest record {fields['recordId']} "
                f"({fields['reason']}: {fields['detail']})"
            )
        else:
            detail = f"{event.actor} raised the log alarm: {fields['reason']}"
        return (
            self.violation(
                world,
                detail,
                trace_seq=event.seq,
                graph=fields.get("graph"),
                devices=(event.actor,),
                records=tuple(filter(None, [fields.get("recordId")])),
            ),
        )


class AlarmCompleteness(Invariant):
    """The alarm fires whenever the protocol can tell. Two cases:

    - a direct contradiction (withholding ops the log still lists, a rollback, a
      reordered log): every target the relay served one to, while it was the
      target's only mode, is in ``alarm`` by the end of its first sync run of that
      graph that completes (reaches the relay throughout, and neither its pull nor
      its log read stopped before the end: ``sync.stopped`` at a page limit or at the
      graph's share of the run, docs/client.md "Paging") after it was served. A
      run is the unit: reading a long log one entry per page over a lossy network
      takes what it takes, but a completed run has read the log to what it served;
    - log check (2), what checkpoints catch (forks that meet again, withheld log entries,
      rewritten logs): a device that holds a peer's believable checkpoint for a
      boundary it has folded, with a different head, is in ``alarm``. Believable is
      the spec's rule: the record sits in the slot derived for the ``d`` in its data,
      and its author (``by``) owns ``d`` in the roster.
    """

    name = "alarm-completeness"
    observes = ("log.alarm", "sync.stopped", "sync.done")

    def __init__(self) -> None:
        self._alarmed: dict[str, float] = {}
        self._runs: dict[tuple[str, str], list[float]] = {}  # completed runs per graph
        self._stopped: set[tuple[str, str]] = set()  # a read of the run under way stopped early

    def observe(self, world, event):
        name, run = event.fields["name"], (event.actor, event.fields["graph"])
        if name == "log.alarm":
            self._alarmed.setdefault(event.actor, event.t)
        elif name == "sync.stopped":
            if event.fields["route"] in ("pull", "log"):
                self._stopped.add(run)
        elif run in self._stopped:
            self._stopped.discard(run)  # the rest is read in a later run
        elif event.fields.get("error") is None:
            self._runs.setdefault(run, []).append(event.t)
        return ()

    def final(self, world):
        return self._contradictions(world) + self._checkpoints(world)

    def _contradictions(self, world):
        out = []
        for device_id, (served_at, graph_id) in sorted(world.adversary.contradictions().items()):
            slot = world.slots.get(device_id)
            if slot is None or slot.revoked or not _verifies(world, slot, graph_id):
                continue
            runs = [t for t in self._runs.get((device_id, graph_id), ()) if t >= served_at]
            if not runs:
                continue  # it never completed a run of that graph since (down, cut off)
            alarmed = self._alarmed.get(device_id)
            if alarmed is None or alarmed > runs[0]:
                late = "never" if alarmed is None else f"only at t={alarmed:.1f} s"
                out.append(
                    self.violation(
                        world,
                        f"{device_id} was served a contradiction in {graph_id} at "
                        f"t={served_at:.1f} s, completed a sync run of it at t={runs[0]:.1f} s "
                        f"and alarmed {late}",
                        devices=(device_id,),
                    )
                )
        return out

    def _checkpoints(self, world):
        out = []
        owners = {d: dev.member_id for d, dev in world.relay.state.devices.items()}
        for device_id, slot in sorted(world.slots.items()):
            device = slot.device
            if device is None or slot.revoked:
                continue
            for graph_id in device.graphs():
                log = device.log_state(graph_id)
                epoch1 = device.keyring(graph_id).keys.get(1)
                if log is None or log.state == ALARM or log.anchored_from is not None:
                    continue
                if epoch1 is None or not device.unfiltered(graph_id):
                    continue
                for rid, record in sorted(device.records(graph_id).items()):
                    if record["kind"] != CHECKPOINT_KIND or record.get("deleted"):
                        continue
                    data = record["data"]
                    peer = data.get("d")
                    if peer == device_id or owners.get(peer) != record["by"]:
                        continue
                    if rid != checkpoint_record_id(epoch1, peer):
                        continue
                    ours = log.heads.get(str(data.get("seq")))
                    if ours is not None and ours != data.get("head"):
                        out.append(
                            self.violation(
                                world,
                                f"{device_id} holds {peer}'s checkpoint for boundary "
                                f"{data['seq']}, whose head differs from its own, and is "
                                f"not in alarm (log status {log.state})",
                                graph=device.storage_key(graph_id),
                                devices=(device_id, peer),
                                records=(rid,),
                            )
                        )
        return out


def _verifies(world, slot, graph_id: str) -> bool:
    """Whether the device verifies ``graph_id``'s log: its app verifies logs and the
    world does not give it filtered views of the graph only. A device whose views of a
    graph are all filtered has log status ``off`` there (Log verification status), so
    nothing obliges it to alarm."""
    sk = storage_key(graph_id, slot.member)
    only = any(s.only and s.device == slot.device_id and s.graph == sk
               for s in world.spec.subscriptions)  # fmt: skip
    return world.config.log_verification and not only
