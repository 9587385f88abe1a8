"""What a run costs: every request that reached the relay, by device and route, and the
bytes it carried each way.

A protocol change that doubles the requests per write passes every check of
correctness; only its cost shows it. The world counts as the relay serves (a request
lost on the way costs the device, not the relay: it is not counted here), cheaply
enough to run always.
"""

from collections import Counter

import attrs

from simkit.relay.http import Refused
from simkit.relay.routing import match
from simkit.sim.behaviours import route_name


@attrs.define
class Costs:
    requests: Counter = attrs.Factory(Counter)  # (device, route) -> requests served
    sent: Counter = attrs.Factory(Counter)  # device -> requests served
    bytes_up: Counter = attrs.Factory(Counter)  # device -> request bytes
    bytes_down: Counter = attrs.Factory(Counter)  # device -> response bytes

    def served(self, request, response) -> None:
        device = request.headers.get("x-device", "?")
        try:
            route = route_name(match(request.method, request.path)[0])
        except Refused:
            route = "no route"
        self.requests[device, route] += 1
        self.sent[device] += 1
        self.bytes_up[device] += len(request.body)
        self.bytes_down[device] += len(response.body)
