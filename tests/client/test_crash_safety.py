"""Crash-safe state: a device crashed at any await point of a sync run restarts
from its last durable snapshot and converges with nothing lost."""

import pytest
import trio
import trio.testing

from simkit.client import Device
from tests.client.world import RecordingTransport, World


class Crash(Exception):
    """The device's process died here."""


class CrashingTransport(RecordingTransport):
    """Dies at the ``at``-th request: before it reaches the relay, or after the relay
    applied it but before the device saw the answer."""

    def __init__(self, relay, at: int, after: bool) -> None:
        super().__init__(relay)
        self.at, self.after = at, after
        self.attempts = 0

    async def send(self, request):
        point, self.attempts = self.attempts, self.attempts + 1
        if point == self.at and not self.after:
            raise Crash(f"before {request.method} {request.path}")
        response = await super().send(request)
        if point == self.at and self.after:
            raise Crash(f"after {request.method} {request.path}")
        return response


async def _scenario(crash_at: int, after: bool):
    world = World()
    a1 = await world.registered("alice", "a1")
    b1 = await world.registered("bob", "b1")
    assert await a1.bootstrap("g:team")
    b1.subscribe("g:team")
    await world.sync_all()
    for i in range(70):  # enough to cross a checkpoint boundary during the run
        b1.put("g:team", f"b{i}", "note", {"i": i})
    await b1.sync()
    acknowledged = [a1.put("g:team", f"a{i}", "note", {"i": i}) for i in range(5)]
    a1.put("g:team", "b3", "note", {"edited": "by alice"})
    a1.transport = CrashingTransport(world.relay, crash_at, after)
    crashed = False
    try:
        await a1.sync()
    except Crash:
        crashed = True
    requests = a1.transport.attempts
    if crashed:
        a1 = Device.restore(
            a1.snapshot(), RecordingTransport(world.relay), a1.clock, world.entropy.fork("boot2")
        )
        world.devices["a1"] = a1
    await world.sync_all()
    return world, a1, b1, acknowledged, crashed, requests


def _run(crash_at: int, after: bool):
    box = {}

    async def main():
        box["result"] = await _scenario(crash_at, after)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return box["result"]


def _reference():
    """The outcome and request count of the same run with no crash."""
    _world, a1, _b1, _acknowledged, crashed, requests = _run(-1, False)
    assert not crashed
    return {rid: r["data"] for rid, r in a1.records("g:team").items()}, requests


@pytest.mark.parametrize("after", [False, True], ids=["before-request", "after-relay-applied"])
def test_crash_at_every_await_point_of_a_sync_run_loses_nothing(after):
    reference, requests = _reference()
    assert requests >= 7  # keys, keygaps, push, devices, pull, log, checkpoint push
    for crash_at in range(requests):
        world, a1, b1, acknowledged, crashed, _ = _run(crash_at, after)
        assert crashed
        relay_rows = world.relay.state.graphs["g:team"].records
        for record in acknowledged:
            assert a1.get("g:team", record["id"]) == record
            assert b1.get("g:team", record["id"]) == record
            assert relay_rows[record["id"]].rev == record["at"]
        assert a1.pending() == 0 and b1.pending() == 0
        assert a1.records("g:team") == b1.records("g:team")
        data = {rid: r["data"] for rid, r in a1.records("g:team").items()}
        assert data == reference, f"crash at point {crash_at} changed the outcome"
        assert "alarm" not in (a1.graph_status("g:team").log, b1.graph_status("g:team").log)
