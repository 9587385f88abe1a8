"""The network between each device and the relay, with every fault a parameter.

Generic over the relay: it calls ``handle(request) -> response`` (any callable) and
reads only ``request.method``, ``.path``, ``.body`` and ``response.status``, ``.body``.
The model, each parameter and each decision are in docs/sim-network.md. In short:
a device's ``send`` either returns the relay's response or raises ``TransportError``
exactly at its deadline (``timeout_ms`` after sending), whatever went wrong, since
a device cannot tell a lost request from a lost response, a partition or a dead
relay. A request already on the wire reaches the relay even if its sender gave up
or was cancelled.

Every draw comes from the link's own ``SeededEntropy`` fork, a fixed number per
exchange, so adding a device or changing one rate leaves the other draws alone.
"""

import contextlib
import json
import math
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, NamedTuple, NoReturn

import attrs
import networkx as nx
import trio

from simkit.errors import SimkitError, TransportError
from simkit.protocol.b64 import b64url_encode
from simkit.protocol.canonical import canonical_json
from simkit.protocol.entropy import SeededEntropy
from simkit.sim.clock import sleep_until, virtual_clock
from simkit.sim.failure import timer_name
from simkit.sim.trace import Trace

RELAY = "relay"
"""The relay's node in the link graph and its actor name in the trace."""
NETWORK = "network"
"""The actor of the faults the network injects."""

Handle = Callable[[Any], Any]


class NetworkError(SimkitError, ValueError):
    """A network parameter or call breaks its rule (stated in the message)."""


def _number(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise NetworkError(f"{attribute.name} must be a finite number, got {value!r}")


def _non_negative(instance: object, attribute: attrs.Attribute, value: float) -> None:
    _number(instance, attribute, value)
    if value < 0:
        raise NetworkError(f"{attribute.name} must be >= 0, got {value}")


def _positive(instance: object, attribute: attrs.Attribute, value: float) -> None:
    _number(instance, attribute, value)
    if value <= 0:
        raise NetworkError(f"{attribute.name} must be > 0, got {value}")


def _probability(instance: object, attribute: attrs.Attribute, value: float) -> None:
    _number(instance, attribute, value)
    if not 0 <= value <= 1:
        raise NetworkError(f"{attribute.name} is a probability in [0, 1], got {value}")


def _shape(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if value not in ("uniform", "exponential"):
        raise NetworkError(f"Latency shape is 'uniform' or 'exponential', got {value!r}")


def _latency(instance: object, attribute: attrs.Attribute, value: object) -> None:
    if not isinstance(value, Latency):
        raise NetworkError(f"{attribute.name} must be a Latency, got {value!r}")


@attrs.frozen
class Latency:
    """A delay: ``base_ms`` plus jitter, ``uniform`` on [0, jitter_ms) or
    ``exponential`` with mean ``jitter_ms`` (a long tail)."""

    base_ms: float = attrs.field(default=0.0, validator=_non_negative)
    jitter_ms: float = attrs.field(default=0.0, validator=_non_negative)
    shape: str = attrs.field(default="uniform", validator=_shape)

    def seconds(self, u: float) -> float:
        """The delay for a uniform draw ``u`` in [0, 1), in whole microseconds so that a
        last-digit difference in ``log`` between C libraries rarely reaches the trace."""
        uniform = self.shape == "uniform"
        jitter = u * self.jitter_ms if uniform else -self.jitter_ms * math.log1p(-u)
        return round((self.base_ms + jitter) * 1000) / 1_000_000


@attrs.frozen(kw_only=True)
class NetworkProfile:
    """Every rate and delay of the network; defaults are a healthy network."""

    up: Latency = attrs.field(default=Latency(20, 10, "exponential"), validator=_latency)
    down: Latency = attrs.field(default=Latency(20, 10, "exponential"), validator=_latency)
    relay_delay: Latency = attrs.field(default=Latency(), validator=_latency)
    request_loss: float = attrs.field(default=0.0, validator=_probability)
    response_loss: float = attrs.field(default=0.0, validator=_probability)
    poke_loss: float = attrs.field(default=0.0, validator=_probability)
    duplicate_rate: float = attrs.field(default=0.0, validator=_probability)
    duplicate_delay: Latency = attrs.field(default=Latency(0, 200), validator=_latency)
    reorder_rate: float = attrs.field(default=0.0, validator=_probability)
    reorder_delay: Latency = attrs.field(default=Latency(0, 200), validator=_latency)
    error_5xx_rate: float = attrs.field(default=0.0, validator=_probability)
    error_429_rate: float = attrs.field(default=0.0, validator=_probability)
    timeout_ms: float = attrs.field(default=10_000.0, validator=_positive)


class _Drawn(NamedTuple):
    """The uniforms one exchange draws, all of them every time, in this order."""

    request_loss: float
    up: float
    reorder: float
    reorder_delay: float
    relay_delay: float
    duplicate: float
    duplicate_delay: float
    error_5xx: float
    error_429: float
    response_loss: float
    down: float

    @classmethod
    def draw(cls, stream: SeededEntropy) -> "_Drawn":
        return cls(*stream.randoms(len(cls._fields)))


_NO_RATE_ERRORS = _Drawn(*([1.0] * len(_Drawn._fields)))
"""Draws for a duplicate copy: only an error window, not the per-request rates, refuses it."""


@attrs.define
class _Answer:
    """What one exchange brought back: the response, or None (lost, late, undelivered)."""

    response: Any = None


class NetworkTransport:
    """One device's link to the relay: its only way to reach it."""

    def __init__(self, network: "Network", device_id: str, link: SeededEntropy) -> None:
        self.device_id = device_id
        self._network = network
        self._requests = link.fork("requests")
        self._pokes = link.fork("pokes")
        self._next_xid = 0

    async def send(self, request: Any, /, **fields: object) -> Any:
        """The relay's response, or ``TransportError`` at the deadline. ``fields`` are
        added to the trace's request event (record IDs, seqs)."""
        net, device = self._network, self.device_id
        net._require_running()
        profile = net.profile
        u = _Drawn.draw(self._requests)
        xid = self._sent(request, fields)
        start = trio.current_time()
        deadline = start + profile.timeout_ms / 1000

        if not net.connected(device):
            net._fault("partitioned", device, xid)
            await self._give_up(xid, deadline)
        if u.request_loss < profile.request_loss:
            net._fault("request-lost", device, xid)
            await self._give_up(xid, deadline)
        arrive = start + profile.up.seconds(u.up) + profile.relay_delay.seconds(u.relay_delay)
        if u.reorder < profile.reorder_rate:
            arrive += profile.reorder_delay.seconds(u.reorder_delay)
            net._fault("reordered", device, xid)
        if u.duplicate < profile.duplicate_rate:
            net._fault("duplicated", device, xid)
            copy_at = arrive + profile.duplicate_delay.seconds(u.duplicate_delay)
            net.call_at(copy_at, self._deliver, xid, request, _NO_RATE_ERRORS, True)
        if arrive > deadline:
            net._fault("request-late", device, xid)
            net.call_at(arrive, self._deliver, xid, request, u, False)
            await self._give_up(xid, deadline)
        back = arrive + profile.down.seconds(u.down)
        answer = _Answer()  # the relay answers at ``arrive`` from a timer, so the device
        net.call_at(arrive, self._answer, xid, request, u, back > deadline, answer)
        await sleep_until(min(back, deadline))  # sleeps once (a tie: the timer runs first)
        if answer.response is None:
            await self._give_up(xid, deadline)
        if not net.connected(device):
            net._fault("partitioned", device, xid)
            await self._give_up(xid, deadline)
        self._received(xid, answer.response)
        return answer.response

    def _sent(self, request: Any, fields: dict) -> int:
        """Number the request and trace it; its exchange ID."""
        net = self._network
        xid, self._next_xid = self._next_xid, self._next_xid + 1
        sent = {"method": request.method, "path": request.path, "size": len(request.body)}
        net.trace.emit("request", self.device_id, xid=xid, **sent, **net._body_field(request),
                       **fields)  # fmt: skip
        return xid

    def _received(self, xid: int, response: Any) -> None:
        net = self._network
        received = {"status": response.status, "size": len(response.body)}
        net.trace.emit("response", self.device_id, xid=xid, **received, **net._body_field(response))

    def _answer(self, xid: int, request: Any, u: _Drawn, late: bool, answer: "_Answer") -> None:
        """The request reaches the relay now; keep the answer unless it is lost or late."""
        response = self._deliver(xid, request, u, False)
        if response is not None and u.response_loss < self._network.profile.response_loss:
            self._network._fault("response-lost", self.device_id, xid)
        elif response is not None and late:
            self._network._fault("response-late", self.device_id, xid)
        else:
            answer.response = response

    def _deliver(self, xid: int, request: Any, u: _Drawn, duplicate: bool) -> Any | None:
        """The request reaches the relay now: its answer, or None if it never got there."""
        net, device = self._network, self.device_id
        if not net.connected(device):
            net._fault("partitioned", device, xid)
            return None
        if not net.relay_up:
            net._fault("relay-down", device, xid)
            return None
        status = net._injected_error(u, request)
        if status is None:
            response = net.handle(request)
        else:
            net._fault("relay-error", device, xid, status=status)
            response = net._error_response(status)
        net.trace.emit(
            "delivery",
            RELAY,
            device=device,
            xid=xid,
            status=response.status,
            applied=status is None,
            duplicate=duplicate,
            size=len(response.body),
            **_refusals(response),
        )
        return response

    def send_direct(self, request: Any) -> Any | None:
        """The request reaches the relay at this very instant, with no loss, latency or
        per-request error rate (an error window still refuses it): for a client whose
        requests probe the relay, not the network. Its answer, or None."""
        self._network._require_running()
        xid = self._sent(request, {})
        response = self._deliver(xid, request, _NO_RATE_ERRORS, False)
        if response is not None:
            self._received(xid, response)
        return response

    async def _give_up(self, xid: int, deadline: float) -> NoReturn:
        await sleep_until(deadline)
        self._network.trace.emit("fault", self.device_id, fault="timeout", xid=xid)
        raise TransportError(
            f"{self.device_id}: no response to request {xid} within "
            f"{self._network.profile.timeout_ms:g} ms"
        )


class Network:
    """The devices' links to one relay: latency, loss, duplicates, partitions, relay
    errors and crashes, and the realtime pokes. Use inside ``async with net.running()``,
    which owns the tasks that deliver late, duplicated and scheduled things.

    ``handle`` may be replaced at any time (a restarted relay, a malicious wrapper).
    ``response_type(status, headers, body)`` builds the relay's injected 503/429
    answers; by default ``simkit.relay.Response``.
    """

    def __init__(
        self,
        handle: Handle,
        profile: NetworkProfile,
        entropy: SeededEntropy,
        trace: Trace,
        *,
        response_type: Callable[[int, dict[str, str], bytes], Any] | None = None,
        trace_bodies: bool = False,
    ) -> None:
        if not isinstance(profile, NetworkProfile):
            raise NetworkError(f"profile must be a NetworkProfile, got {profile!r}")
        self.handle = handle
        self.profile = profile
        self.trace = trace
        self.relay_up = True
        self._entropy = entropy
        self._response_type = response_type
        self._trace_bodies = trace_bodies
        self._transports: dict[str, NetworkTransport] = {}
        self._links = nx.Graph()
        self._links.add_node(RELAY)
        self._cut_until: dict[str, float] = {}
        self._down_until: float | None = None
        self._error_window: tuple[int, float, str | None] | None = None
        self._poke_sinks: dict[str, trio.MemorySendChannel] = {}
        self._nursery: trio.Nursery | None = None
        self._timer_error: Exception | None = None
        self._timer_failed: trio.Event | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator["Network"]:
        """Run the network; on exit, whatever is still in flight is dropped."""
        if self._nursery is not None:
            raise NetworkError("the network is already running")
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._timer_error = None
            self._timer_failed = trio.Event()
            nursery.start_soon(self._raise_timer_error)
            try:
                yield self
            finally:
                self._nursery = None
                nursery.cancel_scope.cancel()

    @property
    def is_running(self) -> bool:
        return self._nursery is not None

    def _require_running(self) -> None:
        if self._nursery is None:
            raise NetworkError("the network is not running: use `async with network.running():`")

    def call_at(self, t: float, fn: Callable[..., object], *args: object) -> None:
        """Call ``fn(*args)`` at virtual time ``t`` (calls due at the same time run in the
        order they were scheduled). The clock calls it outside any task, so an error is
        re-raised from the network's own task, and a call outlives no ``running()``."""
        self._require_running()
        virtual_clock().call_at(t, self._timer, (self._nursery, fn, args))

    def _timer(self, nursery: trio.Nursery, fn: Callable[..., object], args: tuple) -> None:
        if nursery is not self._nursery or self._timer_error is not None:
            return  # scheduled in a run that has ended, or the world has already failed
        try:
            fn(*args)
        except Exception as exc:
            now = virtual_clock().current_time()
            exc.add_note(f"in {timer_name(fn, args)} at virtual time {now:.3f} s")
            self._timer_error = exc
            self._timer_failed.set()

    async def _raise_timer_error(self) -> None:
        await self._timer_failed.wait()
        raise self._timer_error

    # Links

    def transport(self, device_id: str) -> NetworkTransport:
        """The device's transport (the same object on every call)."""
        if device_id not in self._transports:
            if not isinstance(device_id, str) or device_id in (RELAY, NETWORK):
                raise NetworkError(
                    f"device ID must be a string other than relay/network: {device_id!r}"
                )
            self._transports[device_id] = NetworkTransport(
                self, device_id, self._entropy.fork(f"link/{device_id}")
            )
            self._links.add_node(device_id)
            if device_id not in self._cut_until:
                self._links.add_edge(RELAY, device_id)
        return self._transports[device_id]

    @property
    def links(self) -> nx.Graph:
        """A frozen copy of the links: nodes are ``relay`` and devices; an edge is a live link."""
        return nx.freeze(self._links.copy())

    def connected(self, device_id: str) -> bool:
        return self._links.has_edge(RELAY, device_id)

    def partition(self, devices: Iterable[str], until: float | None = None) -> None:
        """Cut these devices off the relay until virtual time ``until`` (None: until healed).

        Overlapping partitions compose: a device stays cut until its latest deadline.
        """
        cut = sorted(set(devices))
        if not cut or RELAY in cut:
            raise NetworkError(f"partition needs one or more device IDs, got {cut}")
        end = math.inf if until is None else until
        for device in cut:
            self._cut_until[device] = max(self._cut_until.get(device, end), end)
            self._links.add_node(device)
            if self._links.has_edge(RELAY, device):
                self._links.remove_edge(RELAY, device)
        self.trace.emit("fault", NETWORK, fault="partition", devices=cut, until=until)
        if until is not None:
            self.call_at(until, self._heal_due, cut, end)

    def _heal_due(self, devices: list[str], end: float) -> None:
        """A scheduled heal, for the devices no later partition still holds."""
        self.heal(d for d in devices if self._cut_until.get(d) == end)

    def heal(self, devices: Iterable[str] | None = None) -> None:
        """Reconnect these cut devices (None: all of them) now."""
        cut = self._cut_until.keys()
        healed = sorted(cut if devices is None else cut & set(devices))
        if not healed:
            return
        for device in healed:
            del self._cut_until[device]
            self._links.add_edge(RELAY, device)
        self.trace.emit("fault", NETWORK, fault="heal", devices=healed)

    # The relay

    def crash_relay(self, until: float | None = None) -> None:
        """The relay stops answering (connection refused) until ``until`` or ``restart_relay``.

        A request arriving meanwhile is not applied; its sender times out.
        """
        self.relay_up = False
        self._down_until = math.inf if until is None else until
        self.trace.emit("crash", RELAY, what="crash", until=until)
        if until is not None:
            self.call_at(until, self._restart_due, self._down_until)

    def _restart_due(self, until: float) -> None:
        if self._down_until == until:
            self.restart_relay()

    def restart_relay(self, handle: Handle | None = None) -> None:
        """The relay answers again, through ``handle`` if given (e.g. restored from a snapshot)."""
        if handle is not None:
            self.handle = handle
        self.relay_up = True
        self._down_until = None
        self.trace.emit("crash", RELAY, what="restart")

    def error_window(self, status: int, until: float, route: str | None = None) -> None:
        """Until ``until``, the relay answers ``status`` (429 or 5xx) without applying
        anything: to every request, or (a partial outage) to those of one ``route``
        ("GET /graphs/:gid/devices": a segment starting with ``:`` matches any).

        A new window replaces the current one.
        """
        if status != 429 and not 500 <= status <= 599:
            raise NetworkError(f"an error window answers 429 or 5xx, not {status}")
        self._error_window = (status, until, route)
        fields = {} if route is None else {"route": route}
        self.trace.emit(
            "fault", NETWORK, fault="error-window", status=status, until=until, **fields
        )

    def _injected_error(self, u: _Drawn, request: Any) -> int | None:
        """The status the relay answers instead of applying a request, or None."""
        window = self._error_window
        if (
            window is not None
            and trio.current_time() < window[1]
            and (window[2] is None or _on_route(request, window[2]))
        ):
            return window[0]
        if u.error_5xx < self.profile.error_5xx_rate:
            return 503
        if u.error_429 < self.profile.error_429_rate:
            return 429
        return None

    def _error_response(self, status: int) -> Any:
        code = "rate-limited" if status == 429 else "unavailable"
        body = canonical_json({"error": code, "message": "injected by the simulated network"})
        return self._response_class()(status, {"content-type": "application/json"}, body)

    def _response_class(self) -> Callable[[int, dict[str, str], bytes], Any]:
        if self._response_type is None:
            from simkit.relay import Response  # late: the network does not need the relay

            self._response_type = Response
        return self._response_type

    # Realtime pokes

    def subscribe(self, device_id: str) -> trio.MemoryReceiveChannel:
        """A fresh channel of the device's pokes. It replaces (and closes) any earlier one,
        so a restarted device that subscribes again never sees pokes sent while it was down."""
        self.transport(device_id)
        previous = self._poke_sinks.pop(device_id, None)
        if previous is not None:
            previous.close()
        sink, receive = trio.open_memory_channel(math.inf)
        self._poke_sinks[device_id] = sink
        return receive

    def poke(self, device_id: str, payload: object, /, **fields: object) -> None:
        """Send a realtime poke to a device (callable from the relay's synchronous
        event hook). ``fields`` go to the trace, ``payload`` to the device."""
        self._require_running()
        stream = self.transport(device_id)._pokes
        u_loss, u_down = stream.randoms(2)
        if not self.connected(device_id):
            self._fault("poke-partitioned", device_id, None, **fields)
        elif u_loss < self.profile.poke_loss:
            self._fault("poke-lost", device_id, None, **fields)
        else:
            at = trio.current_time() + self.profile.down.seconds(u_down)
            self.call_at(at, self._deliver_poke, device_id, payload, fields)

    def _deliver_poke(self, device_id: str, payload: object, fields: dict[str, object]) -> None:
        if not self.connected(device_id):
            self._fault("poke-partitioned", device_id, None, **fields)
            return
        sink = self._poke_sinks.get(device_id)
        try:
            if sink is None:
                raise trio.BrokenResourceError
            sink.send_nowait(payload)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._fault("poke-unheard", device_id, None, **fields)
            return
        self.trace.emit("delivery", device_id, poke=True, **fields)

    # Trace helpers

    def _fault(self, fault: str, device: str, xid: int | None, **fields: object) -> None:
        self.trace.emit("fault", NETWORK, fault=fault, device=device, xid=xid, **fields)

    def _body_field(self, message: Any) -> dict[str, str]:
        """``{"body": base64url}`` when tracing bodies, else nothing (bodies are heavy)."""
        return {"body": b64url_encode(message.body)} if self._trace_bodies else {}


def _refusals(response: Any) -> dict:
    """Why the relay refused, for the trace: an error answer's code, and a push answer's
    rejected ops counted per reason (``rev-too-far-ahead`` explains a re-stamp)."""
    if response.status != 200:
        code = _json_field(response.body, "error")
        return {"error": code} if isinstance(code, str) else {}
    if b'"rejected"' not in response.body:
        return {}
    rejected = _json_field(response.body, "rejected")
    if not isinstance(rejected, list):
        return {}
    reasons = Counter(r.get("reason") for r in rejected if isinstance(r, dict))
    return {"rejected": dict(sorted((str(k), n) for k, n in reasons.items()))}


def _json_field(body: bytes, name: str) -> Any:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data.get(name) if isinstance(data, dict) else None


def _on_route(request: Any, route: str) -> bool:
    """Whether a request is one of ``route`` ("METHOD /a/:param/b")."""
    method, _, template = route.partition(" ")
    want, have = template.split("/"), request.path.split("?")[0].split("/")
    return (
        request.method == method
        and len(want) == len(have)
        and all(w.startswith(":") or w == h for w, h in zip(want, have, strict=True))
    )
