"""The request pipeline: routing, rate limit, identity, graph resolution, body.

Every request runs the spec's steps in the spec's order (Authentication, item
4) inside one ``Transaction``; a handler only ever sees a caller who passed
them all. ``RelayCore`` also owns the store, the host seams and event delivery.
"""

from collections.abc import Callable
from typing import TypeVar

import attrs

from simkit.errors import UnsafeIdError
from simkit.protocol.host import Host, Identity
from simkit.protocol.http import Refused, Request, Response, invalid, json_response
from simkit.protocol.ids import is_safe_id, storage_key
from simkit.protocol.limits import RelaySettings
from simkit.relay.events import Event, InternalFailure
from simkit.relay.ratelimit import RateLimiter
from simkit.relay.routing import Route, match
from simkit.relay.schema import json_body, show, too_large
from simkit.relay.state import Graph, RegisteredDevice, RelayState
from simkit.relay.txn import Transaction

T = TypeVar("T")


@attrs.define
class Call:
    """One request on its way through the pipeline; each step fills in a field."""

    request: Request
    route: Route
    params: dict[str, str]
    tx: Transaction
    identity: Identity = None  # type: ignore[assignment]
    graph: Graph = None  # type: ignore[assignment]  # stored, or new and not yet stored
    body: object = None

    @property
    def now(self) -> int:
        return self.tx.now

    @property
    def member(self) -> str:
        return self.identity.member_id

    @property
    def device(self) -> str:
        return self.identity.device_id


class RelayCore:
    """Pipeline and shared helpers; the route handlers live in the mixins."""

    def __init__(
        self,
        host: Host,
        clock: Callable[[], int],
        *,
        state: RelayState | None = None,
        on_event: Callable[[Event], object] | None = None,
        on_commit: Callable[[Transaction], object] | None = None,
        **settings: object,
    ) -> None:
        self.host = host
        self.clock = clock
        self.settings = RelaySettings(**settings)
        self.state = RelayState() if state is None else state
        self.on_event = on_event
        self.on_commit = on_commit
        self._limiter = RateLimiter(self.settings.rate_limits)
        interval = self.settings.sweep_interval_ms
        self.next_sweep_at: int | None = clock() + interval if interval else None

    @classmethod
    def restore(cls: type[T], host: Host, clock: Callable[[], int], data: object, **kwargs) -> T:
        """A relay over a snapshot taken by ``snapshot()`` (a restart or a rollback)."""
        return cls(host, clock, state=RelayState.from_data(data), **kwargs)

    def snapshot(self) -> dict:
        """The whole store as JSON-able data (rate-limit buckets are not part of it)."""
        return self.state.to_data()

    def handle(self, request: Request) -> Response:
        """Answer one request. Never raises for bad input; a bug becomes 500 and is undone."""
        try:
            route, params = match(request.method, request.path)
            tx = Transaction(self.clock())
            response = self._atomically(tx, lambda: self._run(Call(request, route, params, tx)))
        except Refused as refusal:
            return refusal.response
        except Exception as exc:
            self._deliver([InternalFailure(str(request.method), str(request.path), repr(exc))])
            return json_response(
                500, {"error": "internal", "message": "internal error; nothing was changed"}
            )
        self._deliver(tx.events())
        return response

    def _atomically(self, tx: Transaction, work: Callable[[], T]) -> T:
        """Run ``work``, then ``on_commit(tx)`` if it changed anything; if either raises,
        undo everything it changed and re-raise.

        ``on_commit`` is how a driver makes a change durable before it is answered
        (``simkit serve --store``): when it fails, the request changed nothing.
        """
        try:
            result = work()
            if self.on_commit is not None and tx.changed:
                self.on_commit(tx)
            return result
        except BaseException:
            tx.rollback()
            raise

    def _deliver(self, events: list[Event]) -> None:
        if self.on_event is not None:
            for event in events:
                self.on_event(event)

    def _run(self, call: Call) -> Response:
        route = call.route
        identity = self.host.authenticate(call.request)
        if identity is not None:
            wait = self._limiter.take(identity.member_id, route.bucket, call.now)
            if wait:
                raise Refused(
                    429, "rate-limited", f"too many {route.bucket} requests; retry in {wait} ms",
                    {"retry-after": str(-(-wait // 1000))}, retryAfterMs=wait,
                )  # fmt: skip
        if identity is None:
            raise Refused(401, "unauthenticated", "the request carries no valid credential")
        if not (is_safe_id(identity.member_id) and is_safe_id(identity.device_id)):
            raise Refused(403, "malformed-identity", "member and device IDs must be safe IDs")
        call.identity = identity
        if route.registered:
            self._require_device(identity)
        if "gid" in call.params:
            call.graph = self._resolve_graph(identity.member_id, call.params["gid"])
            if route.capability is not None:
                self._require_capability(call, route.capability)
        call.body = self._read_body(call)
        return getattr(self, route.handler)(call)

    def _require_device(self, identity: Identity) -> None:
        device = self.state.devices.get(identity.device_id)
        if device is None or device.member_id != identity.member_id:
            raise Refused(
                403, "device-not-registered",
                f"device {identity.device_id} is not registered to {identity.member_id}",
            )  # fmt: skip
        if device.revoked_at is not None:
            raise Refused(403, "device-revoked", f"device {identity.device_id} is revoked")

    def _resolve_graph(self, member: str, graph_id: str) -> Graph:
        """The caller's graph ID to its stored graph (or a new, unstored one)."""
        try:
            key = storage_key(graph_id, member)
        except UnsafeIdError:
            raise invalid(
                f"graph ID {show(graph_id)} must be 'u', 'g:<groupId>' or 'd:<memberId>' "
                "with IDs matching [A-Za-z0-9_-]{1,64}"
            ) from None
        if key.startswith("g:") and not self._in_group(member, key[2:]):
            raise Refused(403, "not-a-member", f"{member} is not a member of {graph_id}")
        if key.startswith("d:"):
            other = graph_id[2:]
            if other == member:
                raise invalid("a pairwise graph names another member, not the caller")
            if not self.host.is_member(other):
                raise Refused(404, "unknown-member", f"no member {other}")
        graph = self.state.graphs.get(key)
        return Graph(key) if graph is None else graph

    def _in_group(self, member: str, group: str) -> bool:
        """The caller is a current member of the group (without listing the group)."""
        return member in self.host.group_members(group) and self.host.is_active(member)

    def _current_members(self, key: str) -> list[str]:
        """Who a graph belongs to now: the owner, both parties, or the group's active members."""
        kind, _, rest = key.partition(":")
        if kind == "u":
            return [rest]
        if kind == "d":
            return rest.split(":")
        active = {m for m in self.host.group_members(rest) if self.host.is_active(m)}
        return sorted(active)

    def eligible(self, key: str) -> list[RegisteredDevice]:
        """Devices a new epoch must reach: active devices of current members."""
        return [
            device
            for member in self._current_members(key)
            for device in self.state.devices_of(member)
            if device.revoked_at is None
        ]

    def _require_capability(self, call: Call, capability: str) -> None:
        """Only ``g:`` graphs are asked; no function, or ``None``, grants everything."""
        if not call.graph.key.startswith("g:"):
            return
        ask = getattr(self.host, "capabilities", None)
        granted = None if ask is None else ask(call.member, call.graph.key[2:])
        if granted is not None and capability not in granted:
            raise Refused(
                403, "not-permitted", f"{capability} is needed for this request", need=capability
            )

    def _read_body(self, call: Call) -> object:
        """Check the query parameters and the body's size and syntax; the handler checks fields."""
        request, route = call.request, call.route
        for name in request.query:
            if name not in route.query:
                raise invalid(f"unknown query parameter {show(name)}")
        if route.body == "json":
            return json_body(request.body, self.settings.max_push_bytes)
        if route.body == "raw":
            too_large(request.body, self.settings.max_blob_bytes)
            return request.body
        if request.body:
            raise invalid("this route takes no body")
        return None

    def _store_graph(self, call: Call) -> Graph:
        """Make the resolved graph part of the store (a write to a graph seen first)."""
        if call.graph.key not in self.state.graphs:
            call.tx.set(self.state.graphs, call.graph.key, call.graph)
        return call.graph
