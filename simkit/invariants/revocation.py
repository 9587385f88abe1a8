"""revocation: what a revoked device writes afterwards is never applied."""

from simkit.invariants.base import Invariant, events
from simkit.protocol.ids import storage_key
from simkit.sim.clock import DEFAULT_EPOCH_MS


class Revocation(Invariant):
    """A device that keeps writing after its revocation (a stolen device, with a relay
    that still accepts it) never has those writes applied by another device."""

    name = "revocation"

    def final(self, world):
        revoked = {d: dev.revoked_at for d, dev in world.relay.state.devices.items()}
        out = []
        for write in events(world, "app.write"):
            at = revoked.get(write.actor)
            if at is None or DEFAULT_EPOCH_MS + write.t * 1000 < at:
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
