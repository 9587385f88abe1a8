"""simkit.client: the device (docs/client.md)."""

from simkit.client.approval import APPROVE, OBSERVE
from simkit.client.clock import Clock, SystemClock
from simkit.client.config import AppConfig
from simkit.client.device import Device
from simkit.client.events import ClientEvent, DeviceError
from simkit.client.schemas import Registry
from simkit.client.store import LocalStore
from simkit.client.transport import Backoff, InProcessTransport, RelayUnavailable, Transport

__all__ = [
    "APPROVE",
    "OBSERVE",
    "AppConfig",
    "Backoff",
    "ClientEvent",
    "Clock",
    "Device",
    "DeviceError",
    "InProcessTransport",
    "LocalStore",
    "Registry",
    "RelayUnavailable",
    "SystemClock",
    "Transport",
]
