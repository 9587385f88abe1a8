"""Clients outside the conforming fleet: a rogue device speaking raw HTTP, and a
non-conforming client acting with a member's device and credential (a forger). What
they send is not the device's own, so the device model does not judge it and the
malicious relay may tell it apart (``World.foreign``)."""

import contextlib

import trio


class Foreign:
    """The world's clients outside the fleet, and which requests are theirs."""

    def __init__(self, world) -> None:
        self.world = world
        self._raw = None  # the transport of raw requests (``send_raw``)
        self.tasks: set = set()  # tasks of non-conforming clients (``client``)
        self.requests: dict = {}  # id -> a request such a client has on its way

    async def send_raw(self, request) -> None:
        """A request from a client outside the simulated fleet (a rogue device speaking
        raw HTTP); its answer goes nowhere. It reaches the relay at the instant it was
        drawn for (``NetworkTransport.send_direct``): the rogue aims at the relay's
        edges as the model sees them now (a rev exactly maxRevSkew ahead, a push that
        fills the byte quota exactly), which latency and the fleet's traffic meanwhile
        would blur; the network's faults are the fleet's to meet."""
        if self._raw is None:
            self._raw = self.world.network.transport("rogue")
        self._raw.send_direct(request)

    @contextlib.contextmanager
    def client(self, device_id: str):
        """A non-conforming client acts with a member's device and credential (a forger):
        what it sends is not the device's, which the device model does not judge. It
        calls what this yields once it took a stamp from the device."""
        task = trio.lowlevel.current_task()
        self.tasks.add(task)
        try:
            if self.world.device_oracle is None:
                yield lambda: None
            else:
                yield self.world.device_oracle.stamped(device_id)
        finally:
            self.tasks.discard(task)

    def running(self) -> bool:
        """Whether the running task is a non-conforming client's (``client``):
        what the relay answers it, the device's own client never reads."""
        return bool(self.tasks) and trio.lowlevel.current_task() in self.tasks

    def sent(self, request) -> bool:
        """Whether a non-conforming client sent ``request`` (it is on its way now)."""
        return self.requests.get(id(request)) is request
