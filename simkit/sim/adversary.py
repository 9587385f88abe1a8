"""The malicious relay: wrappers around the honest relay, switched on for chosen
devices from a chosen time (docs/adversary.md says what each does, what should
catch it, and what the protocol cannot catch).

The network calls ``MaliciousRelay.handle``; with no mode on it is the honest
relay. A mode either serves its targets from another relay (``fork``,
``rollback``) or edits the answers its targets receive.
"""

import hashlib
import json
from urllib.parse import unquote

import attrs
import trio

from simkit.client import Device
from simkit.errors import SimkitError
from simkit.protocol.ids import storage_key
from simkit.protocol.keys import DeviceKeys
from simkit.protocol.messages import ANSWER_MALFORMATIONS, ANSWER_OF, answer_problems
from simkit.protocol.wrap import wrap_graph_key
from simkit.relay import Poke, Relay, Request, Response
from simkit.sim.clock import DEFAULT_EPOCH_MS, relay_clock

MODES = (
    "accept-revoked",
    "fork",
    "rollback",
    "withhold",
    "replay",
    "rewrite-log",
    "reorder",
    "substitute-keys",
    "drop-wraps",
    "substitute-wraps",
    "lie-epoch",
    "malform",
)


class AdversaryError(SimkitError, ValueError):
    """An adversary action names an unknown mode or bad parameters."""


def _route(request: Request) -> tuple[str | None, str]:
    """(graph ID, last path segment) of a graph route, or (None, '') otherwise; the
    graph ID decoded as the relay decodes it."""
    parts = request.path.strip("/").split("/")
    if len(parts) >= 3 and parts[0] == "graphs":
        return unquote(parts[1], errors="replace"), parts[2]
    return None, parts[-1] if parts else ""


def _json(response: Response) -> dict | None:
    if response.status != 200 or not response.headers.get("content-type", "").startswith(
        "application/json"
    ):
        return None
    body = response.json()
    return body if isinstance(body, dict) else None


def _with_body(response: Response, body: dict) -> Response:
    return attrs.evolve(response, body=json.dumps(body, separators=(",", ":")).encode())


def _chosen(record_id: str, fraction: float) -> bool:
    """A fixed pseudo-random choice of records (no hash order, no randomness)."""
    return hashlib.sha256(record_id.encode()).digest()[0] < 256 * fraction


class Mode:
    """One malicious mode; ``targets`` empty means every device."""

    def __init__(self, world, action) -> None:
        self.world, self.action, self.params = world, action, dict(action.params)
        self.targets = frozenset(action.targets)
        # target -> (when, graph ID) it was first served a contradiction
        self.served: dict[str, tuple[float, str]] = {}

    def contradict(self, request: Request, device_id: str, graph_id: str) -> None:
        """Note that a target was served something the client detects directly in that
        graph, when this is its only mode (another could mask the contradiction). Not
        when a non-conforming client sent the request in the target's name (a forgery,
        a false checkpoint, a newer client's record): the answer goes to it, and the
        target's client never reads it (found by a steered run: the answer to a false
        checkpoint's push under a rollback was counted as served to the device)."""
        if self.world.foreign.sent(request):
            return  # a non-conforming client's request: the target's client never reads it
        aimed = [m for m in self.world.adversary.modes if m.aims_at(device_id)]
        if aimed == [self]:
            self.served.setdefault(device_id, (trio.current_time(), graph_id))
            self.world.coverage.add(["adversary contradiction"])

    def aims_at(self, device_id: str | None) -> bool:
        return not self.targets or device_id in self.targets

    def relay_for(self, relay: Relay, device_id: str) -> Relay:
        return relay

    def edit(self, request: Request, device_id: str, response: Response) -> Response:
        return response

    def storage_key(self, request: Request, graph_id: str) -> str:
        return storage_key(graph_id, request.headers.get("x-member", ""))


class Shadow(Mode):
    """``fork`` (from now) and ``rollback`` (from a snapshot taken at ``snapshot_at``):
    the targets are served by a second relay whose history diverges from the honest
    one. ``merge_at`` ends the mode: the targets meet the honest history again."""

    def __init__(self, world, action, snapshot: dict) -> None:
        super().__init__(world, action)
        self.shadow = world.parties.party_class(world.parties.relay_version, "relay").restore(
            world.host, relay_clock(DEFAULT_EPOCH_MS), snapshot, on_event=self._event,
            **world.spec.relay_settings,
        )  # fmt: skip
        merge_at = self.params.get("merge_at")
        if merge_at is not None:
            world.network.call_at(merge_at, world.adversary.switch_off, self)

    def _event(self, event) -> None:
        if isinstance(event, Poke):
            for device_id in self.world.followers(event.graph):
                if self.aims_at(device_id):
                    self.world.network.poke(device_id, {"graph": event.graph})

    def relay_for(self, relay: Relay, device_id: str) -> Relay:
        return self.shadow

    def edit(self, request, device_id, response):
        """A rolled-back counter below a seq the target was served is a contradiction."""
        graph_id, what = _route(request)
        body = _json(response)
        served = self.world.adversary.served_cursor.get((device_id, graph_id), 0)
        rolled_back = body is not None and what == "push" and body["cursor"] < served
        if rolled_back:
            self.world.situations.reached("a rolled-back relay answers a push")
            self.contradict(request, device_id, graph_id)
        return response


class Withhold(Mode):
    """Drop from the targets' pulls the ops other devices push after the switch
    (a ``fraction`` of records, 1 by default); with ``log: hides`` the targets'
    log omits them too."""

    def __init__(self, world, action) -> None:
        super().__init__(world, action)
        self.start = {key: graph.seq for key, graph in world.relay.state.graphs.items()}
        self.fraction = float(self.params.get("fraction", 1.0))
        self.hide_in_log = self.params.get("log", "lists") == "hides"
        self.others: dict[str, set[str]] = {}  # storage key -> records others pushed
        # (target, storage key) -> (record, seq) withheld from its pulls that it would
        # detect: a contradiction once its log lists one (no log route, nothing served)
        self.withheld: dict[tuple[str, str], set[tuple[str, int]]] = {}

    def observe_push(self, request: Request, device_id: str, graph_id: str) -> None:
        if self.aims_at(device_id):
            return
        try:
            ops = [op["recordId"] for op in json.loads(request.body)["ops"]]
        except (ValueError, KeyError, TypeError):
            return  # the relay will refuse it as invalid
        chosen = self.others.setdefault(self.storage_key(request, graph_id), set())
        chosen.update(record_id for record_id in ops if _chosen(record_id, self.fraction))

    def _held(self, device_id: str, graph_id: str, record_id: str) -> dict | None:
        slot = self.world.slots.get(device_id)
        return slot.device.get(graph_id, record_id) if slot and slot.device else None

    def _detectable(self, device_id: str, graph_id: str, op: dict) -> bool:
        """Log check (1) compares revs only: an op the target already holds at that rev or
        newer (its own write of an equal rev, say) is withheld undetectably."""
        held = self._held(device_id, graph_id, op["recordId"])
        return held is None or held["at"] < op["rev"]

    def _passable(self, device_id: str, graph_id: str, ops: list[dict]) -> list[dict]:
        """The ops the target's cursor can pass: those before the first op under an
        epoch it holds no key for (client rule 4 stops its pull there; found by the fuzzer)."""
        slot = self.world.slots.get(device_id)
        if slot is None or slot.device is None:
            return []
        ring = slot.device.keyring(graph_id)
        for i, op in enumerate(ops):
            if (ring.current if op.get("e") is None else op["e"]) not in ring.keys:
                return ops[:i]
        return ops

    def _hidden(self, key: str, record_id: str, seq: int) -> bool:
        return seq > self.start.get(key, 0) and record_id in self.others.get(key, ())

    def edit(self, request, device_id, response):
        graph_id, what = _route(request)
        body = _json(response)
        if body is None or what not in ("pull", "log"):
            return response
        key = self.storage_key(request, graph_id)
        if what == "pull":
            kept = [o for o in body["ops"] if not self._hidden(key, o["recordId"], o["seq"])]
            hidden = [o for o in self._passable(device_id, graph_id, body["ops"]) if o not in kept]
            detectable = {
                (o["recordId"], o["seq"])
                for o in hidden
                if self._detectable(device_id, graph_id, o)
            }
            self.withheld.setdefault((device_id, key), set()).update(detectable)
            if any(self._held(device_id, graph_id, record_id) for record_id, _ in detectable):
                self.world.situations.reached("a newer version withheld from its holder")
            body["ops"] = kept
        elif self.hide_in_log:
            entries = [e for e in body["entries"] if not self._hidden(key, e["recordId"], e["seq"])]
            body["entries"] = entries
        elif any(
            (e["recordId"], e["seq"]) in self.withheld.get((device_id, key), ())
            for e in body["entries"]
        ):
            self.contradict(request, device_id, graph_id)  # the log lists an op its pull withheld
        return _with_body(response, body)


class Replay(Mode):
    """Serve the targets a copy of a real op in another slot (``into: slot``) or from
    another graph (``into: graph``), next to the op it copies."""

    def edit(self, request, device_id, response):
        graph_id, what = _route(request)
        body = _json(response)
        if body is None or what != "pull" or not body["ops"]:
            return response
        first = body["ops"][0]
        if self.params.get("into", "slot") == "graph":
            here = self.storage_key(request, graph_id)
            others = [g for k, g in sorted(self.world.relay.state.graphs.items()) if k != here]
            rows = [r for g in others for _, r in sorted(g.records.items())]
            if not rows:
                return response
            copy = {**rows[0].wire(), "seq": first["seq"]}
        else:
            copy = {**first, "recordId": f"{first['recordId'][:56]}-replay"}
        body["ops"] = [first, copy, *body["ops"][1:]]
        return _with_body(response, body)


class RewriteLog(Mode):
    """Rewrite the targets' log after the switch: ``how: rev`` lowers each new
    entry's rev by one, ``how: drop`` drops every new entry."""

    def __init__(self, world, action) -> None:
        super().__init__(world, action)
        self.start = {key: graph.seq for key, graph in world.relay.state.graphs.items()}

    def edit(self, request, device_id, response):
        graph_id, what = _route(request)
        body = _json(response)
        if body is None or what != "log":
            return response
        start = self.start.get(self.storage_key(request, graph_id), 0)
        if self.params.get("how", "rev") == "drop":
            body["entries"] = [e for e in body["entries"] if e["seq"] <= start]
        else:
            body["entries"] = [
                {**e, "rev": e["rev"] - 1} if e["seq"] > start else e for e in body["entries"]
            ]
        return _with_body(response, body)


class Reorder(Mode):
    """Serve log pages (``what: log``) or pull pages (``what: pull``) in reverse order."""

    def edit(self, request, device_id, response):
        graph_id, what = _route(request)
        body = _json(response)
        field = {"log": "entries", "pull": "ops"}.get(self.params.get("what", "log"))
        if body is None or what != self.params.get("what", "log"):
            return response
        if field == "entries" and len({e["seq"] for e in body[field]}) > 1:
            self.contradict(request, device_id, graph_id)
        body[field] = list(reversed(body[field]))
        return _with_body(response, body)


class SubstituteKeys(Mode):
    """Publish the relay's own keys (with a valid selfSig of its own) as ``victim``'s
    in the targets' rosters and key gaps."""

    def __init__(self, world, action) -> None:
        super().__init__(world, action)
        self.victim = self.params["victim"]
        member = world.slots[self.victim].member
        self.keys = DeviceKeys.generate(world.entropy.fork(f"adversary/keys/{self.victim}"))
        self.fake = {
            "pubJwk": self.keys.pub_jwk,
            "sigJwk": self.keys.sig_jwk,
            "selfSig": self.keys.self_sig(member),
        }

    def edit(self, request, device_id, response):
        _, what = _route(request)
        body = _json(response)
        field = {"devices": "devices", "keygaps": "gaps"}.get(what)
        if body is None or field is None:
            return response
        body[field] = [
            {**e, **self.fake} if e["deviceId"] == self.victim else e for e in body[field]
        ]
        return _with_body(response, body)


class DropWraps(Mode):
    """Answer the targets' GET keys with no wraps at all."""

    def edit(self, request, device_id, response):
        _graph_id, what = _route(request)
        body = _json(response)
        if body is None or what != "keys" or request.method != "GET":
            return response
        return _with_body(response, {**body, "wraps": []})


class SubstituteWraps(Mode):
    """Answer the targets' GET keys with wraps of a key the relay made, sealed to the
    target's real wrapping key (any party can wrap to a public key)."""

    def __init__(self, world, action) -> None:
        super().__init__(world, action)
        self.entropy = world.entropy.fork("adversary/wraps")
        self.keys: dict[tuple[str, int], bytes] = {}

    def edit(self, request, device_id, response):
        graph_id, what = _route(request)
        body = _json(response)
        device = self.world.relay.state.devices.get(device_id)
        if body is None or what != "keys" or request.method != "GET" or device is None:
            return response
        key_of = self.storage_key(request, graph_id)
        wraps = []
        for wrap in body["wraps"]:
            fake = self.keys.setdefault((key_of, wrap["epoch"]), self.entropy.token_bytes(32))
            wrapped = wrap_graph_key(fake, device.pub_jwk, entropy=self.entropy)
            wraps.append({"epoch": wrap["epoch"], "wrapped": wrapped})
        return _with_body(response, {**body, "wraps": wraps})


class LieEpoch(Mode):
    """Report an epoch ``by`` (default 1) above the real one in push and pull answers."""

    def edit(self, request, device_id, response):
        _, what = _route(request)
        body = _json(response)
        if body is None or what not in ("push", "pull") or "epoch" not in body:
            return response
        return _with_body(
            response, {**body, "epoch": body["epoch"] + int(self.params.get("by", 1))}
        )


class Malform(Mode):
    """``malform``: each answer of one kind to the targets carries one malformation of
    the spec's table of it (``what``: a name of ``ANSWER_MALFORMATIONS``: a roster entry
    without its ``revokedAt``, a pull op whose ``c`` is of the wrong type, a keys answer
    whose ``latestEpoch`` is out of range, ...), in the answer or its first listed entry.
    A device must neither crash nor take what is wrong for true (the device model
    judges what it does with it)."""

    PLACE = "\x00malformed"  # stands for the malformed entry until its text goes in

    def edit(self, request, device_id, response):
        what = self.params["what"]
        m, (route, listed) = ANSWER_MALFORMATIONS[what], ANSWER_OF[what]
        body = _json(response)
        if body is None or _route(request)[1] != route:
            return response
        if listed is None:
            text = m.text(body)
        else:
            entries = body.get(listed)
            if not isinstance(entries, list) or not entries or not isinstance(entries[0], dict):
                return response
            rest = json.dumps({**body, listed: [self.PLACE, *entries[1:]]},
                              separators=(",", ":"))  # fmt: skip
            text = rest.replace(json.dumps(self.PLACE), m.text(entries[0]), 1)
        self.world.coverage.add([f"malformed {what}"])
        return attrs.evolve(response, body=text.encode())


class ThiefDevice(Device):
    """A stolen device running the thief's client: it never holds its writes for a
    newer epoch, and a keys read the relay refuses does not stop it: it pushes them
    under the key it still has."""

    def behind(self, graph_id: str) -> bool:
        return False

    def not_checked(self, graph_id: str, what: str) -> None:
        """The honest client asks again before any push (F18); the thief does not."""


class AcceptRevoked(Mode):
    """Keep serving a revoked target's record routes (a stolen device, a colluding
    relay): its pushes and pulls are handled as if it were still active. Receivers
    must refuse what it writes. Key routes still refuse it."""

    ROUTES = ("push", "pull", "log", "devices")

    def handle(self, relay: Relay, request: Request, device_id: str) -> Response:
        devices = relay.state.devices
        device = devices.get(device_id)
        honest = relay is self.world.relay
        if device is None or device.revoked_at is None or _route(request)[1] not in self.ROUTES:
            return self.world.answer(request) if honest else relay.handle(request)
        if honest:
            self.world.retire_model("accept-revoked: the relay served a revoked device")
        devices[device_id] = attrs.evolve(device, revoked_at=None)
        try:
            return relay.handle(request)
        finally:
            devices[device_id] = attrs.evolve(devices[device_id], revoked_at=device.revoked_at)


class MaliciousRelay:
    """The relay as the network sees it: honest until a mode is switched on."""

    def __init__(self, world) -> None:
        self.world = world
        self.modes: list[Mode] = []
        self._snapshots: dict[float, dict] = {}
        self.served_cursor: dict[tuple[str, str], int] = {}  # (device, graph ID) -> max cursor
        self.modes_ever: list[Mode] = []

    def contradictions(self) -> dict[str, tuple[float, str]]:
        """Each target's first directly detectable contradiction: (simulated time,
        the graph ID it was served in)."""
        out: dict[str, tuple[float, str]] = {}
        for mode in self.modes_ever:
            for device_id, served in mode.served.items():
                out[device_id] = min(served, out.get(device_id, served))
        return out

    def prepare(self, schedule) -> None:
        """Take the snapshots that ``rollback`` actions will roll back to: the state
        right after setup, and one at each scheduled rollback's ``snapshot_at``."""
        self._capture(0.0)
        for action in schedule:
            if getattr(action, "mode", None) == "rollback":
                at = float(action.params.get("snapshot_at", 0))
                self.world.network.call_at(at, self._capture, at)

    def _capture(self, at: float) -> None:
        self._snapshots[at] = self.world.relay.snapshot()

    def switch_on(self, action) -> Mode:
        builders = {
            "fork": lambda: Shadow(self.world, action, self.world.relay.snapshot()),
            "rollback": lambda: Shadow(
                self.world, action, self._snapshots[float(action.params.get("snapshot_at", 0))]
            ),
            "withhold": lambda: Withhold(self.world, action),
            "replay": lambda: Replay(self.world, action),
            "rewrite-log": lambda: RewriteLog(self.world, action),
            "reorder": lambda: Reorder(self.world, action),
            "substitute-keys": lambda: SubstituteKeys(self.world, action),
            "drop-wraps": lambda: DropWraps(self.world, action),
            "substitute-wraps": lambda: SubstituteWraps(self.world, action),
            "lie-epoch": lambda: LieEpoch(self.world, action),
            "accept-revoked": lambda: AcceptRevoked(self.world, action),
            "malform": lambda: Malform(self.world, action),
        }
        if action.mode not in builders:
            raise AdversaryError(f"unknown adversary mode {action.mode!r}; modes are {MODES}")
        mode = builders[action.mode]()
        self.modes.append(mode)
        self.modes_ever.append(mode)
        return mode

    def switch_off(self, mode: Mode) -> None:
        if mode in self.modes:
            self.modes.remove(mode)
            self.world.note("fault", "adversary", name="switch-off", mode=mode.action.mode)
            self.world.coverage.add(["adversary merge"])

    def handle(self, request: Request) -> Response:
        device_id = request.headers.get("x-device")
        active = [m for m in self.modes if m.aims_at(device_id)]
        graph_id, what = _route(request)
        relay = self.world.relay
        for mode in active:
            relay = mode.relay_for(relay, device_id)
        stolen = [m for m in active if isinstance(m, AcceptRevoked)]
        if stolen:
            response = stolen[0].handle(relay, request, device_id)
        elif relay is self.world.relay:
            response = self.world.answer(request)
        else:
            response = relay.handle(request)
        if what == "push" and request.method == "POST" and response.status == 200:
            for mode in self.modes:  # what the relay accepted (a rogue's push may be junk)
                if isinstance(mode, Withhold):
                    mode.observe_push(request, device_id, graph_id)
        # a malformed answer is made last: every other mode edits (and counts) what the
        # relay said, not what another mode broke (found by the fuzzer: a withholding
        # relay reading a log page whose entries a malforming one had made a string)
        for mode in sorted(active, key=lambda m: isinstance(m, Malform)):
            response = mode.edit(request, device_id, response)
        body = _json(response) if what == "pull" else None
        cursor = (body or {}).get("cursor")
        # served only in an answer the device can take: a malformed one (any member the
        # spec's tables refuse, not only its cursor) tells it nothing (F33)
        if (
            isinstance(cursor, int)
            and not isinstance(cursor, bool)
            and response.status == 200
            and answer_problems("pull", body) is None
        ):
            key = (device_id, graph_id)
            self.served_cursor[key] = max(self.served_cursor.get(key, 0), cursor)
        return response
