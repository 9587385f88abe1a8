"""simkit.model.device: an executable model of one device, written from the spec.

``DeviceModel`` follows a device input by input (its requests, the answers it
receives, its commits, crashes and imports) and judges each against the client rules,
the constructions and the status tables of relay-spec.md; ``views`` holds what it is
told and what it finds (docs/model.md, "The device model").
"""

from simkit.model.device.model import DeviceModel
from simkit.model.device.views import App, Changes, Finding, Identity, LogView, Pin

__all__ = ["App", "Changes", "DeviceModel", "Finding", "Identity", "LogView", "Pin"]
