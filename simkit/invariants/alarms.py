"""alarm-soundness and alarm-completeness: the log alarm fires when, and only when,
the relay misbehaves in a way the protocol can detect."""

from simkit.invariants.base import Invariant, events
from simkit.sim.clock import DEFAULT_EPOCH_MS

# How long, in simulated seconds after the relay served a direct contradiction, a
# target may take to alarm: its next sync run comes within one poll interval (5 s);
# six intervals leave room for retries.
BOUND_S = 30.0


class AlarmSoundness(Invariant):
    """With an honest relay, under any network faults, clock skew and crashes, no device
    ever reaches ``alarm`` and no honest record is rejected.

    One rejection is the protocol's own doing and is counted in ``known`` instead
    (docs/findings.md, F2): a record written before its writer was revoked, stamped
    (by a clock running ahead) after the revocation, refused as ``revoked-device``.
    """

    name = "alarm-soundness"
    honest_only = True

    def __init__(self) -> None:
        self._read = 0
        # (record, rev) -> every (writer, t): two devices may stamp the same rev
        self._writes: dict[tuple[str, int], list[tuple[str, float]]] = {}
        self.known: list[str] = []

    def _written_before_revocation(self, world, event) -> bool:
        for writer, t in self._writes.get((event.fields["recordId"], event.fields["rev"]), ()):
            device = world.relay.state.devices.get(writer)
            if (
                device is not None
                and device.revoked_at is not None
                and DEFAULT_EPOCH_MS + t * 1000 < device.revoked_at
            ):
                return True
        return False

    def step(self, world):
        out = []
        for event in world.trace.since(self._read):
            name = event.fields.get("name") if event.kind == "event" else None
            if name == "app.write":
                key = event.fields["recordId"], event.fields["rev"]
                self._writes.setdefault(key, []).append((event.actor, event.t))
            elif name == "record.restamped":
                fields = event.fields
                for writer, t in self._writes.get((fields["recordId"], fields["old"]), ()):
                    if writer == event.actor:
                        self._writes.setdefault((fields["recordId"], fields["new"]), []).append(
                            (writer, t)
                        )
            refused_by_skew = (
                name == "record.rejected"
                and event.fields["reason"] == "revoked-device"
                and self._written_before_revocation(world, event)
            )
            if refused_by_skew:
                self.known.append(f"F2: {event.actor} refused {event.fields['recordId']}")
                continue
            if name == "log.alarm":
                detail = f"{event.actor} raised the log alarm: {event.fields['reason']}"
            elif name == "record.rejected":
                detail = (
                    f"{event.actor} rejected the honest record {event.fields['recordId']} "
                    f"({event.fields['reason']}: {event.fields['detail']})"
                )
            else:
                continue
            out.append(
                self.violation(
                    world,
                    detail,
                    trace_seq=event.seq,
                    graph=event.fields.get("graph"),
                    devices=(event.actor,),
                )
            )
        self._read = len(world.trace)
        return out


class AlarmCompleteness(Invariant):
    """With a malicious mode the protocol detects directly (withholding ops the log
    still lists, a rollback, a reordered log), every target that the relay served the
    contradiction to reaches ``alarm`` within ``BOUND_S`` simulated seconds of it."""

    name = "alarm-completeness"

    def final(self, world):
        alarmed = {}
        for event in events(world, "log.alarm"):
            alarmed.setdefault(event.actor, event.t)
        out = []
        for device_id, served_at in sorted(world.adversary.contradictions().items()):
            slot = world.slots.get(device_id)
            if slot is None or slot.revoked:
                continue
            at = alarmed.get(device_id)
            if at is None or at > served_at + BOUND_S:
                late = "never" if at is None else f"only {at - served_at:.1f} s later"
                out.append(
                    self.violation(
                        world,
                        f"{device_id} was served a contradiction at t={served_at:.1f} s "
                        f"and alarmed {late}",
                        devices=(device_id,),
                    )
                )
        return out
