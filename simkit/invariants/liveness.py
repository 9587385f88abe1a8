"""liveness: a device that can write eventually does."""

from simkit.invariants.base import Invariant


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
                queued = device.pending(graph_id)
                if queued and world.may_push(device_id, graph_id):
                    out.append(
                        self.violation(
                            world,
                            f"{device_id} still holds {queued} queued write(s)",
                            graph=device.storage_key(graph_id),
                            devices=(device_id,),
                        )
                    )
        return out
