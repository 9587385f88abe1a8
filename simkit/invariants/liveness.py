"""liveness: a device that can write eventually does."""

from simkit.invariants.base import Invariant
from simkit.protocol.ids import storage_key
from simkit.sim.settle import can_write


class Liveness(Invariant):
    """A device that is online, not revoked, permitted to write and not behind on keys
    empties its queue by quiescence."""

    name = "liveness"
    honest_only = True

    def final(self, world):
        out = []
        for device_id, slot in sorted(world.slots.items()):
            device = slot.device
            if device is None or slot.revoked:
                continue
            for graph_id in device.graphs():
                sk = storage_key(graph_id, slot.member)
                queued = device.pending(graph_id)
                if queued and can_write(world, device_id, sk) and not device.behind(graph_id):
                    out.append(
                        self.violation(
                            world,
                            f"{device_id} still holds {queued} queued write(s)",
                            graph=sk,
                            devices=(device_id,),
                            records=device.queued(graph_id),
                        )
                    )
        return out
