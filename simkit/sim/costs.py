"""What a run costs: every request that reached the relay, by device and route, the
bytes it carried each way, the records pulled, and the application writes and
checkpoint records it was all for.

A protocol change that doubles the requests per write passes every check of
correctness; only its cost shows it. The world counts as the relay serves (a request
lost on the way costs the device, not the relay: it is not counted here), cheaply
enough to run always.
"""

from collections import Counter

import attrs

from simkit.protocol.http import Refused
from simkit.relay.routing import match
from simkit.sim.behaviours import route_name

PULL = "GET /graphs/:gid/pull"


@attrs.define
class Costs:
    requests: Counter = attrs.Factory(Counter)  # (device, route) -> requests served
    sent: Counter = attrs.Factory(Counter)  # device -> requests served
    bytes_up: Counter = attrs.Factory(Counter)  # device -> request bytes
    bytes_down: Counter = attrs.Factory(Counter)  # device -> response bytes
    route_up: Counter = attrs.Factory(Counter)  # route -> request bytes
    route_down: Counter = attrs.Factory(Counter)  # route -> response bytes
    pulled: int = 0  # records served in pull answers
    writes: int = 0  # application writes
    checkpoints: int = 0  # checkpoint records the devices published
    device_seconds: float = 0.0  # the fleet's time, summed over devices (``World.cost``)
    # (storage key, record) -> [rev, written at, devices that do not hold it yet] per
    # write still converging; ``converged``: seconds each write took to reach them all
    pending: dict = attrs.Factory(dict)
    converged: list[float] = attrs.Factory(list)
    tracked: int = 0  # writes followed to convergence

    def served(self, request, response) -> None:
        device = request.headers.get("x-device", "?")
        try:
            route = route_name(match(request.method, request.path)[0])
        except Refused:
            route = "no route"
        up, down = len(request.body), len(response.body)
        self.requests[device, route] += 1
        self.sent[device] += 1
        self.bytes_up[device] += up
        self.bytes_down[device] += down
        self.route_up[route] += up
        self.route_down[route] += down
        if route == PULL and response.status == 200:
            self.pulled += response.body.count(b'"recordId"')  # one per op served

    def wrote(self, sk: str, record_id: str, rev: int, at: float, readers) -> None:
        """An application write at virtual time ``at`` that ``readers`` must apply."""
        self.tracked += 1
        waiting = set(readers)
        if not waiting:
            self.converged.append(0.0)
            return
        self.pending.setdefault((sk, record_id), []).append([rev, at, waiting])

    def applied(self, device: str, sk: str, record_id: str, rev: int, at: float) -> None:
        """``device`` applied a version: it holds every write of that record up to it."""
        writes = self.pending.get((sk, record_id))
        if not writes:
            return
        for write in list(writes):
            if write[0] <= rev:
                write[2].discard(device)
                if not write[2]:
                    self.converged.append(at - write[1])
                    writes.remove(write)
        if not writes:
            del self.pending[sk, record_id]

    def merge(self, other: "Costs") -> None:
        """Add another run's costs (a fuzz run's examples)."""
        for name in ("requests", "sent", "bytes_up", "bytes_down", "route_up", "route_down"):
            getattr(self, name).update(getattr(other, name))
        self.pulled += other.pulled
        self.writes += other.writes
        self.checkpoints += other.checkpoints
        self.device_seconds += other.device_seconds
        self.converged.extend(other.converged)
        self.tracked += other.tracked

    def state(self) -> dict:
        """What ``merge`` adds up, as JSON (a campaign chunk sends it back)."""
        counters = ("sent", "bytes_up", "bytes_down", "route_up", "route_down")
        return {
            "requests": [[device, route, n] for (device, route), n in self.requests.items()],
            **{name: dict(getattr(self, name)) for name in counters},
            **{name: getattr(self, name) for name in ("pulled", "writes", "checkpoints",
                                                       "device_seconds", "tracked")},
            "converged": list(self.converged),
        }  # fmt: skip

    @classmethod
    def from_state(cls, data: dict) -> "Costs":
        costs = cls(**{k: v for k, v in data.items() if k != "requests"})
        costs.requests = Counter({(d, r): n for d, r, n in data["requests"]})
        for name in ("sent", "bytes_up", "bytes_down", "route_up", "route_down"):
            setattr(costs, name, Counter(getattr(costs, name)))
        return costs

    def to_json(self) -> dict:
        """Totals, per route, and per application write and per device-hour (None when
        there was none to divide by)."""
        routes: Counter = Counter()
        for (_, route), n in self.requests.items():
            routes[route] += n
        totals = {
            "requests": sum(routes.values()),
            "bytes_up": sum(self.route_up.values()),
            "bytes_down": sum(self.route_down.values()),
            "records_pulled": self.pulled,
            "checkpoint_records": self.checkpoints,
        }
        hours = self.device_seconds / 3600

        def per(divisor: float) -> dict | None:
            return {k: round(v / divisor, 2) for k, v in totals.items()} if divisor else None

        return {
            **totals,
            "app_writes": self.writes,
            "device_hours": round(hours, 3),
            "per_app_write": per(self.writes),
            "per_device_hour": per(hours),
            "converge_s": _spread(self.converged, self.tracked),
            "routes": {
                route: {
                    "requests": routes[route],
                    "bytes_up": self.route_up[route],
                    "bytes_down": self.route_down[route],
                }
                for route in sorted(routes)
            },
        }


def _spread(latencies: list[float], tracked: int) -> dict:
    """Time to converge after a write: how many writes reached every device that
    follows the graph unfiltered, and the median and 99th percentile (simulated s)."""
    ordered = sorted(latencies)

    def at(share: float) -> float | None:
        return round(ordered[round(share * (len(ordered) - 1))], 3) if ordered else None

    return {"writes": tracked, "converged": len(ordered), "p50": at(0.5), "p99": at(0.99)}
