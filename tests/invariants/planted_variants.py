"""Planted breaks for the invariants no other test made fire (issue 39): each a client
a real slip could produce, caught by the invariant named in test_planted_breaks.py."""

import trio

from simkit.client import Device
from simkit.sim.variant import Variant


class AsksFortyOne(Device):
    async def request(self, method, path, *args, **kwargs):  # a retry loop gone wrong
        if method == "GET":
            async with trio.open_nursery() as nursery:
                for _ in range(40):
                    nursery.start_soon(lambda: super(AsksFortyOne, self).request(method, path))
        return await super().request(method, path, *args, **kwargs)


class SilentAlarm(Device):
    def emit(self, kind, graph_id, **fields):  # the alarm is raised but nobody hears it
        if kind != "log.alarm":
            super().emit(kind, graph_id, **fields)


asks_forty_one = Variant("asks-forty-one", "every GET sent 41 times", device=AsksFortyOne)
silent_alarm = Variant("silent-alarm", "log.alarm never emitted", device=SilentAlarm)
