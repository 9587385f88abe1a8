"""blindness: the relay's state never holds plaintext, a graph key or a private key."""

import json

from simkit.invariants.base import Invariant
from simkit.sim.workload import PLAINTEXT_MARK


class Blindness(Invariant):
    """Scan the relay's whole state for what the simulation wrote: record text (each
    workload record carries a plaintext marker), blob plaintext, every graph key any
    device holds, and every device's private keys. Run at quiescence and every
    ``every`` steps (a full scan is not cheap)."""

    name = "blindness"

    def __init__(self, every: int = 10) -> None:
        self.every, self._steps = every, 0

    def remembers(self, steps_left: int | None = None) -> object:
        """How many steps until the next scan, if one comes within ``steps_left``: the
        count itself judges nothing, and a scan no step left reaches cannot either."""
        until = self.every - self._steps % self.every
        return {} if steps_left is not None and until > steps_left else {"until_scan": until}

    def step(self, world):
        self._steps += 1
        return self.final(world) if self._steps % self.every == 0 else []

    def final(self, world):
        state = json.dumps(world.relay.snapshot())
        secrets = {PLAINTEXT_MARK.strip(): "record plaintext"}
        for device_id, slot in sorted(world.slots.items()):
            device = slot.device
            if device is None:
                continue
            for sk, wire in sorted(device.store.rows("keyring").items()):
                for epoch, key in sorted(wire["keys"].items()):
                    secrets[key] = f"the epoch-{epoch} key of {sk}"
            keys = device.keys.to_json()
            secrets[keys["wrap"]["d"]] = f"{device_id}'s wrapping private key"
            secrets[keys["sign"]["d"]] = f"{device_id}'s signing private key"
        out = [
            self.violation(world, f"the relay's state contains {what}")
            for secret, what in sorted(secrets.items())
            if secret in state
        ]
        for sk, graph in sorted(world.relay.state.graphs.items()):
            for blob_id, blob in sorted(graph.blobs.items()):
                if b"blob:" in blob.data:
                    out.append(
                        self.violation(world, f"blob {blob_id} is stored in plaintext", graph=sk)
                    )
        return out
