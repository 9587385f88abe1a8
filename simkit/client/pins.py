"""A device's approval pins for other devices (spec: Device approval pin): what a
human decided after comparing pairing codes, and the last key triple seen for each
device (a ``Device`` is made of these)."""

from simkit.client.approval import APPROVED, REJECTED, Pin, fingerprint_of
from simkit.client.events import DeviceError
from simkit.protocol.keys import pairing_code


class Pins:
    """Approval pins and pairing codes."""

    def pairing_code(self) -> str:
        """The code this device shows a human during linking."""
        return pairing_code(self.fingerprint)

    def pairing_code_of(self, device_id: str) -> str | None:
        """The code a holder shows for another device, from its last-seen key triple."""
        entry = self.store.get("seen", device_id)
        fp = fingerprint_of(entry) if entry else None
        return pairing_code(fp) if fp else None

    def pin(self, device_id: str) -> Pin | None:
        return self.store.get("pin", device_id)

    def set_pin(self, device_id: str, state: str, via: str, fingerprint: str | None) -> None:
        self.store.put("pin", device_id, Pin(state, via, fingerprint))
        self.store.commit()

    def approve(self, device_id: str) -> None:
        """A human approved this device (after comparing pairing codes)."""
        entry = self.store.get("seen", device_id)
        if entry is None:
            raise DeviceError(f"device {device_id!r} has not been seen in a roster or keygaps")
        self.set_pin(device_id, APPROVED, "human", fingerprint_of(entry))
        self.emit("device.approved", None, device=device_id, via="human")

    def reject(self, device_id: str) -> None:
        """A human refused this device: it is never wrapped to in ``approve`` mode."""
        entry = self.store.get("seen", device_id)
        self.set_pin(device_id, REJECTED, "human", fingerprint_of(entry) if entry else None)

    def forget_device(self, device_id: str) -> None:
        """Back to ``unknown`` (from approved, rejected or conflicted)."""
        self.store.delete("pin", device_id)
        self.store.commit()

    def remember(self, entry: dict) -> None:
        """Keep the last key triple seen for a device (for approval and pairing codes)."""
        if self.store.get("seen", entry["deviceId"]) != entry:
            self.store.put("seen", entry["deviceId"], entry)
