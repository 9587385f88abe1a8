"""liveness: a device that can write eventually does."""

from simkit.invariants.base import Invariant
from simkit.protocol.ids import storage_key
from simkit.sim.settle import can_write


class Liveness(Invariant):
    """A device that is online, not revoked, permitted to write and not behind on keys
    empties its queue by quiescence. Behind is the relay's word, not the device's: a
    device that believes the relay is ahead when it is not (an answer without
    ``epoch`` misread, say: Versioning rule 3) is stuck, not waiting."""

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
                graph = world.relay.state.graphs.get(sk)
                latest = 0 if graph is None else graph.latest_epoch
                held = device.keyring(graph_id).current
                if queued and can_write(world, device_id, sk) and latest <= held:
                    believed = device.relay_epoch(graph_id)
                    out.append(
                        self.violation(
                            world,
                            f"{device_id} still holds {queued} queued write(s)"
                            + (
                                f", believing the relay at epoch {believed} (it is at {latest})"
                                if believed > latest
                                else ""
                            ),
                            graph=sk,
                            devices=(device_id,),
                            records=device.queued(graph_id),
                        )
                    )
        return out
