"""revocation: what a revoked device writes afterwards is never applied."""

from simkit.invariants.base import Invariant, events
from simkit.protocol.ids import storage_key
from simkit.sim.clock import DEFAULT_EPOCH_MS


class Revocation(Invariant):
    """A device that keeps writing after its revocation (a stolen device, with a relay
    that still accepts it) never has those writes applied by another device.

    Writes the thief stamps before the revocation (its clock is behind) pass the
    revoked-at check by design: the protocol cannot tell them from honest ones
    (docs/findings.md, F3). They are counted in ``known``.
    """

    name = "revocation"

    def __init__(self) -> None:
        self.known: list[str] = []

    def final(self, world):
        revoked = {d: dev.revoked_at for d, dev in world.relay.state.devices.items()}
        out = []
        for write in events(world, "app.write"):
            at = revoked.get(write.actor)
            if at is None or DEFAULT_EPOCH_MS + write.t * 1000 < at:
                continue
            if write.fields["rev"] < at:
                self.known.append(f"F3: {write.actor} backdated {write.fields['recordId']}")
                continue
            sk = storage_key(write.fields["graph"], world.slots[write.actor].member)
            for device_id, slot in sorted(world.slots.items()):
                if device_id == write.actor or slot.device is None:
                    continue
                for held in slot.device.store.rows(f"records:{sk}").values():
                    if held["data"] == write.fields["data"] and held["data"]:
                        out.append(
                            self.violation(
                                world,
                                f"{device_id} applied {write.fields['recordId']}, written "
                                f"by {write.actor} after its revocation",
                                graph=sk,
                                devices=(device_id, write.actor),
                                records=(write.fields["recordId"],),
                            )
                        )
        return out
