"""forgery: a record that breaks a receive check is never applied."""

from simkit.invariants.base import Invariant
from simkit.protocol.ids import storage_key


class Forgery(Invariant):
    """No device ever holds a record a non-conforming client forged (a bad envelope,
    the wrong slot or author, an unknown signer, a bad signature or ciphertext, data
    its schema refuses): client rule 2 says such records are skipped, never applied
    best-effort. Judged as each record is applied (the forged op as a pull handed it to
    the device, known by its ciphertext: an honest write can share its record, rev and
    seq) and at quiescence (every held record). Holds whatever the relay does."""

    name = "forgery"
    observes = ("record.applied",)
    judges_events = True

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()  # (device, record) reported: once a fact

    def observe(self, world, event):
        fields, slot = event.fields, world.slots.get(event.actor)
        if slot is None:
            return ()
        sk, rid = storage_key(fields["graph"], slot.member), fields["recordId"]
        served = (event.actor, sk, rid, fields["rev"], fields["seq"])
        if served not in world.ledger.forged_served:
            return ()
        self._seen.add((event.actor, rid))
        why = world.ledger.forged_why.get((sk, rid, fields["rev"]), "a forged record")
        detail = f"{event.actor} applied {rid} (seq {fields['seq']}), a forged record: {why}"
        return [
            self.violation(world, detail, event.seq, graph=sk, devices=(event.actor,),
                           records=(fields["recordId"],))
        ]  # fmt: skip

    def final(self, world):
        out = []
        for device_id, slot in sorted(world.slots.items()):
            if slot.device is None:
                continue
            for graph_id in slot.device.graphs():
                for rid, record in sorted(slot.device.records(graph_id).items()):
                    if "forged" in record.get("data", {}) and (device_id, rid) not in self._seen:
                        out.append(
                            self.violation(
                                world,
                                f"{device_id} applied a forged record {rid} "
                                f"({record['data']['forged']})",
                                graph=slot.device.storage_key(graph_id),
                                devices=(device_id,),
                                records=(rid,),
                            )
                        )
        return out
