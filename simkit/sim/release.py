"""A world's versions: one, or (a release, docs/releases.md) a base and a new one, and
which parties have moved to the new one. The world asks it which class a party runs
and which model judges it; ``World.parties.upgrade`` moves a party."""

import attrs

from simkit.sim.network import RELAY
from simkit.sim.spec import Rollout
from simkit.sim.variant import Variant


@attrs.define
class Versions:
    """``new``: the version the world fuzzes (its variant); ``base``: with a
    ``rollout``, the one every party starts on but those it names."""

    new: Variant
    base: Variant
    rollout: Rollout | None = None
    moved: set[str] = attrs.Factory(set)  # the parties on the new version (a release)

    def __attrs_post_init__(self) -> None:
        if self.rollout is None:
            self.base = self.new
        else:
            self.moved.update(self.rollout.devices_new)
            if self.rollout.relay_new:
                self.moved.add(RELAY)

    @property
    def release(self) -> bool:
        return self.rollout is not None

    def of(self, party: str) -> Variant:
        """The version a device (or ``relay``) runs now."""
        return self.new if not self.release or party in self.moved else self.base

    def role(self, party: str) -> str:
        return "new" if party in self.moved else "base"

    def move(self, party: str) -> bool:
        """``party`` moves to the new version; False when there is none to move to."""
        if not self.release or party in self.moved:
            return False
        self.moved.add(party)
        return True

    def met(self, device_id: str | None) -> str:
        """The behaviour an exchange between a device and the relay reached."""
        device = "old" if device_id is not None and self.role(device_id) == "base" else "new"
        relay = "old" if self.role(RELAY) == "base" else "new"
        return f"release {device} device, {relay} relay"
