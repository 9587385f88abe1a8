"""simkit.relay: the reference Encrypted Record Sync Relay, sans-I/O (docs/relay.md)."""

from simkit.protocol.host import Host, Identity, StaticHost
from simkit.protocol.http import Request, Response
from simkit.protocol.limits import RateLimit, RelaySettings, RelaySettingsError
from simkit.relay.events import (
    BlobForgotten,
    DeviceRegister,
    DeviceRevoke,
    Event,
    GraphRotate,
    InternalFailure,
    KeysDiscard,
    KeysGrant,
    Poke,
)
from simkit.relay.relay import Relay
from simkit.relay.state import SCHEMA_VERSION, NewerStateError, RelayState, RelayStateError

__all__ = [
    "SCHEMA_VERSION",
    "BlobForgotten",
    "DeviceRegister",
    "DeviceRevoke",
    "Event",
    "GraphRotate",
    "Host",
    "Identity",
    "InternalFailure",
    "KeysDiscard",
    "KeysGrant",
    "NewerStateError",
    "Poke",
    "RateLimit",
    "Relay",
    "RelaySettings",
    "RelaySettingsError",
    "RelayState",
    "RelayStateError",
    "Request",
    "Response",
    "StaticHost",
]
