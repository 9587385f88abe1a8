"""``RelayModel``: the spec's relay written as plainly as possible, to predict a real one.

It is sans-I/O like the relay: ``handle(request, now)`` returns what the relay must
answer at relay time ``now`` and applies the state change the spec requires. It is
written from the spec and docs/relay.md, not from ``simkit.relay``: it shares only
the request/response values, the host (the same identities and directory), the
settings and the protocol's pure helpers. Every step checks first and changes after,
so no step ever needs undoing.
"""

import copy
from collections.abc import Callable

from simkit.errors import EncodingError
from simkit.model import blobs, devices, keys, records, schema
from simkit.model.answer import Expected, Refuse, invalid
from simkit.model.routes import Route, match
from simkit.model.state import Call, Graph
from simkit.protocol.canonical import parse_json
from simkit.protocol.host import Host
from simkit.protocol.http import Request
from simkit.protocol.limits import RelaySettings

HANDLERS: dict[str, Callable[["RelayModel", Call], Expected]] = {
    "register": devices.register,
    "list_devices": devices.list_devices,
    "revoke": devices.revoke,
    "push": records.push,
    "pull": records.pull,
    "log": records.log,
    "get_keys": keys.get_keys,
    "roster": keys.roster,
    "keygaps": keys.keygaps,
    "put_keys": keys.put_keys,
    "discard": keys.discard,
    "upload": blobs.upload,
    "download": blobs.download,
    "ack": blobs.ack,
    "delete_blob": blobs.delete,
}


class RelayModel:
    """``RelayModel(host, now=0, **settings)``: settings as ``simkit.relay.Relay`` takes them.

    ``now`` is the relay's clock when it starts (the built-in sweeper's schedule
    counts from it). ``devices`` and ``graphs`` are the store; ``buckets`` and
    ``next_sweep_at`` are volatile, as in a real server.
    """

    def __init__(self, host: Host, now: int = 0, **settings: object) -> None:
        self.host = host
        self.given = settings  # as given, for another version's model (``ModelCheck``)
        self.settings = RelaySettings(**settings)
        self.devices: dict[str, dict] = {}  # deviceId -> its GET /devices entry
        self.graphs: dict[str, Graph] = {}  # storage key -> graph; a write creates one
        self.touched: str | None = None  # the graph the last request resolved to, if any
        self.written: set[str] = set()  # the graphs changed since ``ModelCheck`` last asked
        self.restart(now)

    # -- what survives a restart, and what does not --------------------------------

    def restart(self, now: int) -> None:
        """A relay restart: the store survives; rate-limit buckets refill; the sweeper
        is due one interval after the restart."""
        self.buckets: dict[tuple[str, str], int] = {}  # (member, bucket) -> when full again
        interval = self.settings.sweep_interval_ms
        self.next_sweep_at = now + interval if interval else None

    def snapshot(self) -> dict:
        """The whole model (store and volatile parts), to ``restore`` later."""
        return copy.deepcopy(
            {"devices": self.devices, "graphs": self.graphs, "buckets": self.buckets,
             "next_sweep_at": self.next_sweep_at}
        )  # fmt: skip

    def restore(self, snapshot: dict) -> None:
        """Back to a ``snapshot()`` exactly (call ``restart`` too if the relay restarted)."""
        snapshot = copy.deepcopy(snapshot)
        self.devices, self.graphs = snapshot["devices"], snapshot["graphs"]
        self.buckets, self.next_sweep_at = snapshot["buckets"], snapshot["next_sweep_at"]

    # -- one request ---------------------------------------------------------------

    def handle(self, request: Request, now: int) -> Expected:
        """The answer the relay must give at relay time ``now``; applies its state change."""
        self.touched = None
        try:
            route, params = match(request.method, request.path)
            call = self._pipeline(route, params, request, now)
            return HANDLERS[route.name](self, call)
        except Refuse as refusal:
            return refusal.expected

    def _pipeline(self, route: Route, params: dict, request: Request, now: int) -> Call:
        """Authentication item 4 in order (docs/relay.md, Request pipeline)."""
        identity = self.host.authenticate(request)
        if identity is not None:
            self._take_token(identity.member_id, route.bucket, now)
        if identity is None:
            raise Refuse(401, "unauthenticated", "pipeline step 2")
        member, device = identity.member_id, identity.device_id
        if not (schema.safe_id(member) and schema.safe_id(device)):
            raise Refuse(403, "malformed-identity", "pipeline step 3")
        if route.registered:
            entry = self.devices.get(device)
            if entry is None or entry["memberId"] != member:
                raise Refuse(403, "device-not-registered", "pipeline step 4")
            if entry["revokedAt"] is not None:
                raise Refuse(403, "device-revoked", "pipeline step 5")
        call = Call(request, now, params, member, device)
        if "gid" in params:
            call.key = self.touched = self._resolve(member, params["gid"])
            if route.capability is not None:
                self.require(call, route.capability, "auth rule 5")
        call.body = self._body(route, request)
        return call

    def _take_token(self, member: str, bucket: str, now: int) -> None:
        """Per-member, per-bucket token buckets, kept as the time each bucket is full again."""
        limit = self.settings.rate_limits.get(bucket)
        if limit is None:
            return
        full_again = max(self.buckets.get((member, bucket), now), now) + limit.refill_ms
        wait = full_again - now - limit.burst * limit.refill_ms
        if wait > 0:
            raise Refuse(
                429, "rate-limited", "pipeline step 1", None,
                {"retry-after": str(-(-wait // 1000))}, retryAfterMs=wait,
            )  # fmt: skip
        self.buckets[member, bucket] = full_again

    def _resolve(self, member: str, gid: str) -> str:
        """A graph ID as the caller sends it, to its storage key (spec: Graph identifiers)."""
        rule = "pipeline step 6"
        if gid == "u":
            return f"u:{member}"
        kind, colon, rest = gid.partition(":")
        if not (colon and kind in ("g", "d") and schema.safe_id(rest)):
            raise invalid((rule, "graph IDs"), "malformed graph ID")
        if kind == "g":
            if not self.in_group(member, rest):
                raise Refuse(403, "not-a-member", rule, "not a member of the group")
            return gid
        if rest == member:
            raise invalid((rule, "graph IDs"), "a pairwise graph with oneself")
        if not self.host.is_member(rest):
            raise Refuse(404, "unknown-member", rule, "unknown member")
        a, b = sorted((member, rest))
        return f"d:{a}:{b}"

    def _body(self, route: Route, request: Request) -> object:
        """Pipeline step 7: known query parameters, then the body's size, syntax and depth."""
        rule = "pipeline step 7"
        if any(name not in route.query for name in request.query):
            raise invalid(rule, "unknown query parameter")
        body = request.body
        if route.body == "raw":
            if len(body) > self.settings.max_blob_bytes:
                raise Refuse(413, "too-large", "limit: maxBlobBytes")
            return body
        if route.body == "none":
            if body:
                raise invalid(rule, "this route takes no body")
            return None
        if len(body) > self.settings.max_push_bytes:
            raise Refuse(413, "too-large", "limit: maxPushBytes")
        try:
            value = parse_json(body)
        except EncodingError:
            raise invalid(rule, "not JSON") from None
        if schema.too_deep(value):
            raise invalid(rule, "nested too deep")
        return value

    # -- the directory, as the relay asks it --------------------------------------

    def in_group(self, member: str, group: str) -> bool:
        return member in self.host.group_members(group) and self.host.is_active(member)

    def current_members(self, key: str) -> list[str]:
        """The owner; both parties; or the group's active members (docs/relay.md, Host seams)."""
        kind, _, rest = key.partition(":")
        if kind == "u":
            return [rest]
        if kind == "d":
            return rest.split(":")
        return sorted({m for m in self.host.group_members(rest) if self.host.is_active(m)})

    def devices_of(self, member: str) -> list[dict]:
        """A member's devices, revoked ones included, by device ID."""
        return [d for _, d in sorted(self.devices.items()) if d["memberId"] == member]

    def eligible(self, key: str) -> list[dict]:
        """Who a new epoch must reach: active devices of current members."""
        return [
            d
            for m in self.current_members(key)
            for d in self.devices_of(m)
            if d["revokedAt"] is None
        ]

    def require(self, call: Call, capability: str, rule: str) -> None:
        """Capabilities are asked for ``g:`` graphs only; none, or ``None``, allows all."""
        if not call.key.startswith("g:"):
            return
        ask = getattr(self.host, "capabilities", None)
        granted = None if ask is None else ask(call.member, call.key[2:])
        if granted is not None and capability not in granted:
            raise Refuse(403, "not-permitted", rule, need=capability)

    # -- graphs ----------------------------------------------------------------------

    def graph(self, key: str) -> Graph:
        """The stored graph, or an empty one that is not stored (a read creates nothing)."""
        return self.graphs.get(key) or Graph(key)

    def written_graph(self, key: str) -> Graph:
        """The graph a write changes; it enters the store with its first write."""
        self.written.add(key)  # Events rule 1: it is owed a poke
        return self.graphs.setdefault(key, Graph(key))

    # -- the sweeper -------------------------------------------------------------------

    def sweep(self, now: int) -> int:
        """The relay's sweep at ``now``; returns how many blobs it forgot."""
        forgotten = blobs.sweep(self, now)
        if self.settings.sweep_interval_ms:
            self.next_sweep_at = now + self.settings.sweep_interval_ms
        return forgotten

    def sweep_if_due(self, now: int) -> int | None:
        """The built-in sweeper's schedule: ``None`` when not due (or disabled)."""
        if self.next_sweep_at is None or now < self.next_sweep_at:
            return None
        return self.sweep(now)
