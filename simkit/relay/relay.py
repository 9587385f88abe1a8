"""The reference relay: the pipeline of ``RelayCore`` plus one mixin per spec noun."""

from simkit.relay.blobs import BlobRoutes
from simkit.relay.devices import DeviceRoutes
from simkit.relay.records import RecordRoutes


class Relay(DeviceRoutes, RecordRoutes, BlobRoutes):
    """``Relay(host, clock, *, state=None, on_event=None, **settings)``; see docs/relay.md.

    Protocol variants subclass it and override one rule method (docs/relay.md,
    Variants); everything else stays the reference behaviour.
    """
