"""forgery: a record that breaks a receive check is never applied."""

from simkit.invariants.base import Invariant


class Forgery(Invariant):
    """No device ever holds a record a non-conforming client forged (a bad envelope,
    the wrong slot or author, an unknown signer, a bad signature or ciphertext, data
    its schema refuses): client rule 2 says such records are skipped, never applied
    best-effort. Holds whatever the relay does."""

    name = "forgery"

    def final(self, world):
        out = []
        for device_id, slot in sorted(world.slots.items()):
            if slot.device is None:
                continue
            for graph_id in slot.device.graphs():
                for rid, record in sorted(slot.device.records(graph_id).items()):
                    if "forged" in record.get("data", {}):
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
