"""``DeviceModel``: one device as the spec describes it, followed input by input.

It is told every request the device sends and every answer (or loss) it receives,
every commit of its durable state (in the spec's nouns, ``views.Changes``), a crash,
a restart, a bundle or invite it imports, a write its application was told is
durable. From the answers alone it knows what the device was given: keys (it opens
the device's wraps itself), rosters, served ops, log entries, the relay's epoch and
clock. It then judges each request as the device sends it and each commit as the
device makes it, against the rule of the spec that governs it, and keeps a
``Finding`` for each disagreement. Where the spec leaves a choice open (when to poll,
which roster a cache may serve, who publishes a checkpoint, how often to retry) it
accepts every allowed choice; docs/model.md lists each tolerance.

Written from relay-spec.md alone: it shares with the client only the protocol's
constructions (``simkit.protocol``) and the wire vocabulary.
"""

import bisect
import json
from collections import Counter, defaultdict
from urllib.parse import unquote

import attrs

from simkit.errors import SimkitError
from simkit.model.answer import Refuse
from simkit.model.device import facts
from simkit.model.device.log import LogSeen
from simkit.model.device.views import (
    UNFILTERED,
    App,
    Changes,
    Finding,
    Identity,
    LogView,
    Pin,
    Subscription,
)
from simkit.model.routes import match
from simkit.model.rules import changed
from simkit.protocol.derived import checkpoint_record_id
from simkit.protocol.ids import graph_id_for, storage_key
from simkit.protocol.keys import device_fingerprint, self_attestation_bytes, verify_bytes
from simkit.protocol.records import verify_record
from simkit.protocol.wrap import unwrap_graph_key

MAX_OPS_PER_PUSH = 200  # client rule 7
MAX_PUSH_BYTES = 8 * 1024 * 1024
ROSTERS_KEPT = 8  # per graph: enough to cover a page's whole processing window

ACCEPT, REFUSE, EITHER, UNDECIDED = "accept", "refuse", "either", "undecided"


@attrs.define
class Served:
    """An op as a pull answer served it to one subscription, and when (the model's tick)."""

    op: dict
    sub: Subscription
    tick: int
    boot: int


@attrs.define
class PushSent:
    """A push the device sent: its graph, its ops in order, and its task."""

    sk: str
    ops: list[dict]
    task: object


@attrs.frozen
class PushRun:
    """What a device held when it sent the first batch of a run of pushes to a graph
    (it may seal every batch then): its epoch and its queued versions."""

    epoch: int
    queued: dict


@attrs.define
class Graph:
    """What the device was given and what it keeps, for one graph (by storage key)."""

    sk: str
    gid: str  # the graph ID as this device sends it
    keys: dict[int, bytes] = attrs.Factory(dict)  # held, as committed
    opened: dict[int, set[bytes]] = attrs.Factory(lambda: defaultdict(set))  # from wraps
    unopenable: dict[int, list] = attrs.Factory(dict)  # epoch -> [the wrap, discarded since]
    discards_cut: bool = False  # a discard since the last keys answer could not reach the relay
    relay_epoch: int = 0  # the highest epoch any answer showed
    noted_epoch: int = 0  # the relay's epoch as the device keeps it
    held: dict[str, dict] = attrs.Factory(dict)
    history: dict[str, list[dict]] = attrs.Factory(lambda: defaultdict(list))  # held before
    queued: dict[str, dict] = attrs.Factory(dict)
    before: dict[str, dict | None] = attrs.Factory(dict)  # held before a queued write
    refused: dict[str, tuple[float, str]] = attrs.Factory(dict)
    cursors: dict[Subscription, int] = attrs.Factory(dict)
    served: dict[int, list[Served]] = attrs.Factory(dict)  # seq -> the ops served at it
    served_seqs: list[int] = attrs.Factory(list)  # the same seqs, sorted
    served_by_record: dict[str, list[Served]] = attrs.Factory(lambda: defaultdict(list))
    bounds: dict[Subscription, int] = attrs.Factory(dict)  # the furthest cursor served
    counter: int = 0  # the highest cursor any answer gave: the relay's counter is at least
    rosters: list[tuple[int, int, dict]] = attrs.Factory(list)  # (tick, boot, entries)
    keygaps: dict = attrs.Factory(dict)  # the last keygaps answer's entries
    pushes: list[tuple[int, int, int, dict]] = attrs.Factory(list)  # (tick, n, sent, answer)
    settled: dict[str, str | None] = attrs.Factory(dict)  # record -> reason refused (None: ok)
    log: LogSeen = attrs.Factory(lambda self: LogSeen(self.sk), takes_self=True)
    log_view: LogView | None = None
    minted: set[int] = attrs.Factory(set)  # epochs this device posted as a new epoch
    restamps: dict[str, int] = attrs.Factory(dict)  # refused rev-too-far-ahead, push order
    pulled: int = 0  # when it last sent a pull (tick)
    pushed: tuple[int, int] = (0, 0)  # when it sent its last two pushes (ticks)
    push_body: bytes = b""  # the last push's body


class DeviceModel:
    """``DeviceModel(identity, app)``: feed it the device's inputs in the order they
    happen; ``findings`` grows with every disagreement. ``changes`` names spec rules
    a variant changes on purpose: their checks are not made (docs/variants.md)."""

    def __init__(self, identity: Identity, app: App, changes: tuple[str, ...] = ()) -> None:
        self.me, self.app = identity, app
        self.changes = tuple(changes)
        self.excused: Counter[str] = Counter()  # findings left to the other invariants
        self.findings: list[Finding] = []
        self.graphs: dict[str, Graph] = {}
        self.pins: dict[str, Pin] = {}
        self.triples: dict[str, set[str | None]] = defaultdict(set)  # device -> fingerprints
        self.tick = 0
        self.boot = 0
        self.last = 0  # the previous stamp (client rule 1)
        self.skew = 0  # own clock - relay now, once adopted (client rule 9)
        self._staged: list = []  # answers processed at the device's next commit
        self._tasks: dict[object, tuple] = {}  # task -> what its next request must be
        self._failures: dict[object, tuple] = {}  # task -> the request that last failed
        self._importing: dict[str, dict[int, bytes]] | None = None
        self._wipe = False
        self._pushes: dict[object, PushSent] = {}
        self._pushing: dict[tuple, PushRun] = {}  # (task, graph) -> its push run so far
        self._verdicts: dict[tuple, tuple[str, str]] = {}

    # -- bookkeeping ---------------------------------------------------------------------

    def graph(self, sk: str) -> Graph:
        found = self.graphs.get(sk)
        if found is None:
            found = self.graphs[sk] = Graph(sk, graph_id_for(sk, self.me.member_id))
        return found

    def _sk(self, graph_id: str) -> str | None:
        try:
            return storage_key(graph_id, self.me.member_id)
        except SimkitError:
            return None

    def find(self, rule: str, detail: str, graph: str | None = None, records=()) -> None:
        """Keep a disagreement, unless the variant changes that rule on purpose (then
        count it: the other invariants judge what the change does)."""
        excused = changed(rule, self.changes)
        if excused is not None:
            self.excused[excused] += 1
            return
        self.findings.append(Finding(rule, f"{self.me.device_id} {detail}", graph, tuple(records)))

    # -- requests --------------------------------------------------------------------------

    def sent(self, task: object, request, now: float) -> None:
        """The device sent ``request`` at virtual time ``now`` (seconds)."""
        self.tick += 1
        self._retry_rules(task, request, now)
        route, params = _route(request)
        if route is None or self._failures.get(task) == _signature(request):
            return  # a retry sends again what was judged when it was first sent
        sk = self._sk(params["gid"]) if "gid" in params else None
        if sk is not None and route in ("push", "pull"):
            graph = self.graph(sk)
            if route == "pull":
                graph.pulled = self.tick
            elif request.body != graph.push_body:  # a new push, not a retry of the last
                graph.pushed, graph.push_body = (graph.pushed[1], self.tick), request.body
        if route == "push" and sk is not None:
            self._push_sent(task, sk, request)
        elif route == "put_keys" and sk is not None:
            self._keys_posted(sk, request)
        elif route == "discard" and sk is not None:
            self._discarded(sk, params["epoch"])

    def _retry_rules(self, task: object, request, now: float) -> None:
        """Client rule 10: a request that failed with 429, 5xx or a loss is retried after
        a backoff (the spec does not fix the number of attempts: the model asks for one
        retry at least). Client rule 11: after ``403 not-permitted`` the run continues
        with the pull."""
        if request.method != "POST" or not request.path.endswith("/push"):
            for key in [k for k in self._pushing if k[0] is task]:
                del self._pushing[key]
        owed = self._tasks.pop(task, None)
        if owed is None:
            return
        kind, what, at = owed
        if kind == "retry":
            if _signature(request) != what:
                self.find(
                    "client rule 10",
                    f"did not retry {what[0]} {what[1]} after it failed with {at[1]}; it sent "
                    f"{request.method} {request.path} instead (model: retry with backoff)",
                )
            elif now <= at[0]:
                self.find(
                    "client rule 10",
                    f"retried {what[0]} {what[1]} at once after {at[1]} (model: a jittered "
                    "backoff first)",
                )
        elif kind == "pull" and _route(request) != ("pull", {"gid": what}) and not at:
            self.find(
                "client rule 11",
                f"after a push to {what} refused 403 not-permitted, sent {request.method} "
                f"{request.path} (model: hold the writes and continue with the pull)",
                graph=self._sk(what),
            )

    def _push_sent(self, task: object, sk: str, request) -> None:
        graph = self.graph(sk)
        body = _json(request.body)
        ops = body.get("ops") if isinstance(body, dict) else None
        if not isinstance(ops, list):
            self.find("client rule 7", f"sent a push to {sk} whose body is not {{ops: [...]}}", sk)
            return
        if len(ops) > MAX_OPS_PER_PUSH or len(request.body) > MAX_PUSH_BYTES:
            self.find(
                "client rule 7",
                f"pushed {len(ops)} ops ({len(request.body)} bytes) in one batch to {sk} "
                "(model: at most 200 ops and 8 MiB)",
                sk,
            )
        current = max(graph.keys, default=0)
        if not graph.keys or graph.relay_epoch > current:
            self.find(
                "client rule 5",
                f"pushed to {sk} holding epoch {current} while an answer showed epoch "
                f"{graph.relay_epoch} (model: a device behind an epoch holds its writes)",
                sk,
                [op.get("recordId") for op in ops if isinstance(op, dict)],
            )
        # batches sealed when the device began pushing may still go out: under the epoch
        # it held then, with the versions queued then (docs/model.md)
        began = self._pushing.get((task, sk)) or PushRun(current, dict(graph.queued))
        for op in ops:
            self._check_pushed(graph, op, began, current)
        self._pushes[task] = PushSent(sk, ops, task)
        self._pushing[task, sk] = began

    def _check_pushed(self, graph: Graph, op: object, began: "PushRun", current: int) -> None:
        """One op as the device pushes it: sealed under its current epoch in its slot,
        signed by itself over the storage key, its queued write, and nothing more."""
        sk = graph.sk
        if not isinstance(op, dict) or not facts.safe_id(op.get("recordId")):
            self.find("Ops on the wire", f"pushed a malformed op to {sk}: {op!r:.80}", sk)
            return
        rid = op["recordId"]
        epoch = op.get("e", current)
        if not began.epoch <= epoch <= current:
            self.find(
                "client rule 5",
                f"sealed {rid} under epoch {epoch} while holding epoch {current} (model: writes "
                "go out under the current epoch)",
                sk,
                [rid],
            )
        key = graph.keys.get(epoch)
        if key is None:
            return
        envelope, problem = facts.open_op(key, sk, op)
        problem = problem or facts.envelope_problem(envelope, rid)
        if problem is not None:
            self.find(
                "Cryptographic constructions",
                f"pushed {rid} to {sk} sealed wrong: {problem[1]} (model: AES-GCM under the "
                f"epoch key with AAD {sk}/{rid}, a RecordEnvelope of v 1)",
                sk,
                [rid],
            )
            return
        record = envelope["r"]
        signature = envelope.get("s")
        if envelope.get("d") != self.me.device_id:
            self.find(
                "RecordEnvelope",
                f"pushed {rid} with d {envelope.get('d')!r} (model: the device ID that signed, "
                f"{self.me.device_id!r})",
                sk,
                [rid],
            )
        elif not (isinstance(signature, str) and _verifies(self.me.sig_jwk, sk, record, signature)):
            self.find(
                "Cryptographic constructions",
                f"pushed {rid} whose signature does not verify over skm-record-v1, the storage "
                f"key {sk} and the record (model: ECDSA over the storage key)",
                sk,
                [rid],
            )
        if op.get("rev") != record["at"]:
            self.find(
                "Ops on the wire",
                f"pushed {rid} with rev {op.get('rev')} for a record at {record['at']} (model: "
                "rev is the record's at)",
                sk,
                [rid],
            )
        if record["by"] != self.me.member_id:
            self.find("GraphRecord", f"pushed {rid} with by {record['by']!r}", sk, [rid])
        if ("k" in op or "sh" in op) and not self.app.send_metadata:
            self.find(
                "Partial sync rules",
                f"sent k/sh on {rid} ({op.get('k')!r}) though the app did not opt in (model: "
                "the default is to send neither)",
                sk,
                [rid],
            )
        elif "k" in op and op["k"] != record["kind"]:
            self.find("Ops on the wire", f"pushed {rid} with k {op['k']!r}, not its kind", sk)
        if record != graph.queued.get(rid) and record != began.queued.get(rid):
            self.find(
                "the queue",
                f"pushed a version of {rid} (at {record['at']}) that is not its queued write "
                f"(queued: {_at(graph.queued.get(rid))})",
                sk,
                [rid],
            )
        if record["kind"] == facts.CHECKPOINT_KIND:
            self._check_checkpoint(graph, record)

    def _check_checkpoint(self, graph: Graph, record: dict) -> None:
        """A checkpoint the device publishes: the protocol's schema, its own device, the
        slot derived for it, and the head at that boundary of the log it was served."""
        sk, data = graph.sk, record["data"]
        problem = facts.checkpoint_problem(data)
        if problem is not None:
            self.find("Checkpoint record", f"published a checkpoint in {sk}: {problem}", sk)
            return
        if data["d"] != self.me.device_id:
            self.find("Checkpoint record", f"published a checkpoint naming {data['d']!r}", sk)
        epoch1 = graph.keys.get(1)
        if epoch1 is not None and record["id"] != checkpoint_record_id(epoch1, data["d"]):
            self.find(
                "Derived values",
                f"published its checkpoint in slot {record['id']!r}, not the one derived "
                "from its device ID (HMAC under HKDF(epoch-1 key, skm-ckpt-v1))",
                sk,
                [record["id"]],
            )
        view = graph.log_view
        if view is not None and view.anchored is not None:
            self.find("Log verification status", "anchored mid-log, published a checkpoint", sk)
        head = graph.log.head_at(data["seq"])
        if head is not None and head != data["head"]:
            self.find(
                "Log chain",
                f"published head {data['head'][:10]}... at boundary {data['seq']} of {sk}; the "
                f"log it was served gives {head[:10]}...",
                sk,
                [record["id"]],
            )

    def _keys_posted(self, sk: str, request) -> None:
        """POST keys: client rule 14's gate on every wrap, and for a new epoch a post that
        covers every active device of the roster it read (wrapped or excluded)."""
        graph = self.graph(sk)
        body = _json(request.body)
        if not isinstance(body, dict):
            return
        wraps = body.get("wraps") if isinstance(body.get("wraps"), list) else []
        targets = [w.get("deviceId") for w in wraps if isinstance(w, dict)]
        excluding = body.get("excluding") if isinstance(body.get("excluding"), list) else []
        epoch = body.get("epoch")
        mint = isinstance(epoch, int) and epoch > graph.relay_epoch
        roster = (graph.rosters[-1][2] if graph.rosters else {}) if mint else graph.keygaps
        for target in targets:
            if target == self.me.device_id or not isinstance(target, str):
                continue
            handed = self._handed(roster, target)
            pin = self.pins.get(target)
            if self.app.approval_mode == "approve" and (pin is None or pin.state != "approved"):
                self.find(
                    "client rule 14",
                    f"wrapped epoch {epoch} of {sk} to {target}, which it has not approved "
                    "(model: in approve mode only approved devices are wrapped to)",
                    sk,
                )
            elif (
                pin is not None
                and pin.state == "approved"
                and handed not in (None, pin.fingerprint)
            ):
                self.find(
                    "client rule 14",
                    f"wrapped epoch {epoch} of {sk} to {target}, whose published keys changed "
                    "since it was approved (model: the pin becomes conflicted)",
                    sk,
                )
        if self.app.approval_mode == "observe":
            for target in excluding:
                if isinstance(target, str) and self._handed(roster, target) is not None:
                    self.find(
                        "client rule 14",
                        f"excluded {target} from epoch {epoch} of {sk} in observe mode (model: "
                        "in mode observe the key is wrapped anyway)",
                        sk,
                    )
        if mint and epoch not in graph.minted:
            graph.minted.add(epoch)
            active = {
                d for d, e in roster.items() if isinstance(e, dict) and e.get("revokedAt") is None
            }
            missing = sorted(active - set(targets) - set(excluding))
            if missing:
                self.find(
                    "client rule 14",
                    f"posted epoch {epoch} of {sk} neither wrapped to nor excluding {missing} "
                    "of the roster it read (model: blocked devices are named in excluding)",
                    sk,
                )

    def _handed(self, roster: dict, device_id: str) -> str | None:
        """The fingerprint of the key triple the device was handed for ``device_id``."""
        entry = roster.get(device_id)
        if not isinstance(entry, dict):
            return None
        return _fingerprint(entry)

    def _discarded(self, sk: str, epoch_text: str) -> None:
        """Client rule 12: DELETE keys/:epoch only for a wrap that did not open."""
        graph = self.graph(sk)
        epoch = int(epoch_text) if epoch_text.isdecimal() else None
        if epoch not in graph.unopenable or graph.unopenable[epoch][1]:
            self.find(
                "client rule 12",
                f"discarded its wrap of epoch {epoch_text} of {sk}, which opened or was not "
                f"served (model: discard only a wrap that fails to unwrap)",
                sk,
            )
            return
        graph.unopenable[epoch][1] = True

    # -- answers ---------------------------------------------------------------------------

    def received(self, task: object, request, response, now: float, clock_ms: int) -> None:
        """The device received ``response`` to ``request`` (``clock_ms``: its own clock)."""
        self.tick += 1
        status = response.status
        if status == 429 or status >= 500:
            self._failed(task, request, now, f"status {status}")
        else:
            self._failures.pop(task, None)
        route, params = _route(request)
        sk = self._sk(params["gid"]) if route is not None and "gid" in params else None
        retried = status == 429 or status >= 500  # the push stays in flight
        push = (self._pushes.get if retried else self._pushes.pop)(task, None)
        push = push if route == "push" else None
        if route is None or sk is None or status != 200:
            if push is not None and status == 403 and _error(response) == "not-permitted":
                # owed unless it pulled the graph after its push before this one
                graph = self.graph(sk) if sk is not None else None
                pulled = graph is not None and graph.pulled > graph.pushed[0]
                self._tasks[task] = ("pull", params["gid"], pulled)
            return
        answer = _json(response.body)
        if not isinstance(answer, dict):
            return
        graph = self.graph(sk)
        # client rule 5 names the epoch of push and pull answers; a keys answer is the
        # fetch it asks for (a keygaps or POST keys answer is neither: docs/model.md)
        epoch = answer.get("latestEpoch") if route == "get_keys" else answer.get("epoch")
        if route in ("push", "pull", "get_keys") and _count(epoch):
            graph.relay_epoch = max(graph.relay_epoch, epoch)
        if route == "pull":
            self._pulled(graph, request, answer)
        elif route == "push" and push is not None:
            self._staged.append(("push", sk, push, answer, clock_ms))
        elif route == "get_keys":
            self._keys_answered(graph, answer)
        elif route in ("roster", "keygaps"):
            entries = answer.get("devices", answer.get("gaps"))
            if isinstance(entries, list):
                found = {e["deviceId"]: e for e in entries if isinstance(e, dict)
                         and isinstance(e.get("deviceId"), str)}  # fmt: skip
                for device_id, entry in found.items():
                    self.triples[device_id].add(_fingerprint(entry))
                if route == "roster":
                    kept = graph.rosters[-ROSTERS_KEPT + 1 :]
                    graph.rosters = [*kept, (self.tick, self.boot, found)]
                else:
                    graph.keygaps = found
        elif route == "log":
            graph.log.read(_int(request.query.get("after"), 0), answer)

    def lost(self, task: object, request, now: float) -> None:
        """The request or its answer was lost on the network: client rule 10 retries it."""
        self.tick += 1
        self._failed(task, request, now, "a lost request")

    @staticmethod
    def _counter(graph: Graph, cursor: int, what: str, page: bool = False) -> None:
        """The relay's counter never goes back (Endpoints: seq is a counter): a push
        answer or an exhausted pull states it, and it is at least every cursor any
        answer gave before (a page that says ``more`` states only where it stopped)."""
        if cursor < graph.counter and not page:
            graph.log.contradiction(f"{what}'s cursor {cursor} is below {graph.counter}")
        graph.counter = max(graph.counter, cursor)

    def _failed(self, task: object, request, now: float, why: str) -> None:
        """A request's first failure owes a retry; a retry that fails again may be the
        last attempt (the spec bounds the attempts without fixing how many)."""
        signature = _signature(request)
        if self._failures.get(task) != signature:
            self._tasks[task] = ("retry", signature, (now, why))
        self._failures[task] = signature
        route, params = _route(request)
        if route == "discard" and (sk := self._sk(params["gid"])) is not None:
            # the relay could not be reached: the rest of this keys answer's discards may
            # wait for the next run (client rule 10 bounds the attempts)
            self.graph(sk).discards_cut = True

    def _pulled(self, graph: Graph, request, answer: dict) -> None:
        kinds = tuple(sorted(filter(None, request.query.get("kinds", "").split(","))))
        shards = tuple(sorted(filter(None, request.query.get("shards", "").split(","))))
        sub = (_gid(request.path), kinds, shards)
        ops = answer.get("ops") if isinstance(answer.get("ops"), list) else []
        after = _int(request.query.get("after"), 0)
        cursor = answer.get("cursor")
        if isinstance(cursor, int) and cursor < after and sub[1:] == (UNFILTERED, UNFILTERED):
            graph.log.contradiction(f"a pull answer's cursor {cursor} went back below {after}")
        if isinstance(cursor, int):
            self._counter(graph, cursor, "a pull answer", page=answer.get("more") is True)
        furthest = after
        ops = [op for op in ops if isinstance(op, dict) and _count(op.get("seq"))]
        end = max([after, *(op["seq"] for op in ops)])
        if isinstance(cursor, int):  # the page speaks for (after, cursor], whether or not
            end = max(end, cursor)  # it says more (a withholding relay's cursor runs ahead)
        self._forget_served(graph, sub, after, end)
        for op in ops:
            served = Served(op, sub, self.tick, self.boot)
            if op["seq"] not in graph.served:
                bisect.insort(graph.served_seqs, op["seq"])
            graph.served.setdefault(op["seq"], []).append(served)
            graph.served_by_record[op.get("recordId")].append(served)
            furthest = max(furthest, op["seq"])
        if isinstance(cursor, int):
            furthest = max(furthest, cursor)
        graph.bounds[sub] = max(graph.bounds.get(sub, 0), furthest)

    def _forget_served(self, graph: Graph, sub, after: int, end: int) -> None:
        """A page tells a subscription's whole view over (after, end]: what was served
        there before is replaced (the relay serves each record's current version only)."""
        seqs = graph.served_seqs
        for seq in seqs[bisect.bisect_right(seqs, after) : bisect.bisect_right(seqs, end)]:
            graph.served[seq] = [item for item in graph.served[seq] if item.sub != sub]
            if not graph.served[seq]:
                del graph.served[seq]
        graph.served_seqs = sorted(graph.served)

    def _keys_answered(self, graph: Graph, answer: dict) -> None:
        """GET keys: open each wrap with the device's own key; client rule 12 says a
        wrap that does not open is discarded before the keys are read again."""
        wraps = answer.get("wraps") if isinstance(answer.get("wraps"), list) else []
        now_unopenable = {}
        for wrap in wraps:
            if not isinstance(wrap, dict) or not isinstance(wrap.get("epoch"), int):
                continue
            epoch, wrapped = wrap["epoch"], wrap.get("wrapped")
            try:
                graph.opened[epoch].add(unwrap_graph_key(wrapped, self.me.wrap_key))
            except (SimkitError, ValueError, TypeError):
                if epoch not in graph.keys:
                    now_unopenable[epoch] = wrapped
        for epoch, wrapped in now_unopenable.items():
            if graph.unopenable.get(epoch) == [wrapped, False] and not graph.discards_cut:
                self.find(
                    "client rule 12",
                    f"was served the same unopenable wrap of epoch {epoch} of {graph.sk} again "
                    "without discarding it (model: DELETE keys/:epoch, then it is re-granted)",
                    graph.sk,
                )
        graph.unopenable = {epoch: [wrapped, False] for epoch, wrapped in now_unopenable.items()}
        graph.discards_cut = False

    # -- the application, crashes, imports -------------------------------------------------

    def app_wrote(self, sk: str, record_id: str, rev: float) -> None:
        """The application was told a write is done: it must be durable already."""
        held = self.graph(sk).held.get(record_id)
        if held is None or held.get("at") != rev:
            self.find(
                "Local writes",
                f"told the application {record_id} was written at {rev} in {sk}, but its "
                f"durable store holds {_at(held)} (model: durable when the write returns)",
                sk,
                [record_id],
            )

    def crashed(self) -> None:
        """What the device had received but not committed is gone with its process."""
        self._staged.clear()
        self._tasks.clear()
        self._pushing.clear()
        self._failures.clear()
        self._pushes.clear()
        for graph in self.graphs.values():
            graph.unopenable.clear()
            graph.restamps.clear()

    def restarted(self) -> None:
        self.boot += 1

    def importing(self, keyrings: dict[str, dict[int, bytes]], wipe: bool) -> None:
        """A recovery bundle (``wipe``: importing first wipes the local record store) or an
        invite is being imported: until ``imported``, its keys may be adopted."""
        self._importing = keyrings
        self._wipe = wipe

    def imported(self) -> None:
        if self._wipe:
            self._check_wiped()
        self._importing, self._wipe = None, False

    # -- commits ---------------------------------------------------------------------------

    def committed(self, changes: Changes, clock_ms: int) -> None:
        """One commit of the device's durable state, at its own clock ``clock_ms``."""
        self.tick += 1
        staged, self._staged = self._staged, []
        for kind, *args in staged:
            if kind == "push":
                self._push_answered(*args)
        for sk, keys in changes.keyrings.items():
            self._keys_adopted(self.graph(sk), keys)
        for sk, epoch in changes.relay_epochs.items():
            graph = self.graph(sk)
            if epoch < graph.noted_epoch and not self._wipe:  # a wipe starts the view over
                self.find(
                    "client rule 5",
                    f"moved its epoch of {sk} down from {graph.noted_epoch} to {epoch} (model: "
                    "it only ever moves upward)",
                    sk,
                )
            graph.noted_epoch = epoch
        for device_id, pin in changes.pins.items():
            self._pinned(device_id, pin)
        touched = {key for part in (changes.held, changes.queued, changes.refused) for key in part}
        order = {k: self.graph(k[0]).restamps.get(k[1], -1) for k in touched}
        for sk, rid in sorted(touched, key=order.__getitem__):
            restamp = self.graph(sk).restamps.pop(rid, None) is not None
            self._record_changed(sk, rid, changes, clock_ms, restamp)
        for sub, cursor in changes.cursors.items():
            sk = self._sk(sub[0])
            if sk is not None:
                self._cursor_moved(self.graph(sk), sub, cursor)
        for sk, view in changes.logs.items():
            self._log_changed(self.graph(sk), view)

    def _push_answered(self, sk: str, push: PushSent, answer: dict, clock_ms: int) -> None:
        """A push answer: client rule 9 adopts the relay's now on rev-too-far-ahead."""
        graph = self.graph(sk)
        rejected = {}
        for entry in answer.get("rejected") or []:
            if isinstance(entry, dict) and isinstance(entry.get("recordId"), str):
                rejected[entry["recordId"]] = entry.get("reason")
        for op in push.ops:
            if isinstance(op, dict) and isinstance(op.get("recordId"), str):
                graph.settled[op["recordId"]] = rejected.get(op["recordId"])
        cursor, accepted = answer.get("cursor"), answer.get("accepted")
        if isinstance(cursor, int):
            graph.pushes = [*graph.pushes[-3:], (self.tick, len(push.ops), accepted, answer)]
            self._counter(graph, cursor, "a push answer")
        order = [op.get("recordId") for op in push.ops if isinstance(op, dict)]
        graph.restamps = {
            rid: index
            for index, rid in enumerate(order)
            if rejected.get(rid) == "rev-too-far-ahead"
        }
        now = answer.get("now")
        if graph.restamps and facts.is_number(now):
            self.skew = clock_ms - now
            self.last = min(self.last, clock_ms - self.skew)

    def _keys_adopted(self, graph: Graph, keys: dict[int, bytes]) -> None:
        """Keys are adopted from a wrap the relay served the device (client rule 13:
        after minting, what the relay holds), or from an imported bundle or invite; old
        epochs are kept."""
        imported = (self._importing or {}).get(graph.sk, {})
        for epoch in sorted(set(graph.keys) - set(keys)):
            if self._importing is None:
                self.find("Keyring", f"dropped its key of epoch {epoch} of {graph.sk} (model: "
                          "old epochs are kept)", graph.sk)  # fmt: skip
        for epoch, key in sorted(keys.items()):
            if (
                graph.keys.get(epoch) == key
                or key in graph.opened.get(epoch, ())
                or (imported.get(epoch) == key)
            ):
                continue
            rule = "client rule 13" if epoch in graph.minted else "Keys"
            self.find(
                rule,
                f"adopted a key for epoch {epoch} of {graph.sk} that no keys answer wrapped to "
                "it (model: read keys back and adopt what the relay holds)",
                graph.sk,
            )
        graph.keys = dict(keys)

    def _pinned(self, device_id: str, pin: Pin | None) -> None:
        """Device approval pin: approved by possession needs a verified record of that
        device and its valid selfSig; conflicted only from approved, when its published
        keys changed."""
        before = self.pins.get(device_id)
        if pin is None:
            self.pins.pop(device_id, None)
            return
        self.pins[device_id] = pin
        by_possession = pin.state == "approved" and pin.via == "possession" and before is None
        if by_possession and not self._possession_proved(device_id, pin):
            self.find(
                "Device approval pin",
                f"approved {device_id} by possession without a valid selfSig over the key "
                "triple it pinned (model: such a device is never auto-approved)",
            )
        if pin.state == "conflicted" and (before is None or before.state != "conflicted"):
            changed = (
                before is not None
                and before.state == "approved"
                and any(fp != before.fingerprint for fp in self.triples.get(device_id, ()))
            )
            if not changed:
                self.find(
                    "Device approval pin",
                    f"marked {device_id} conflicted without having been handed keys other than "
                    "the ones it approved",
                )

    def _possession_proved(self, device_id: str, pin: Pin) -> bool:
        """A roster listed the device with the pinned key triple and a selfSig over it."""
        entries = (r.get(device_id) for g in self.graphs.values() for _, _, r in g.rosters)
        return any(
            isinstance(entry, dict)
            and _fingerprint(entry) == pin.fingerprint
            and _self_sig_valid(entry, pin.fingerprint)
            for entry in entries
        )

    def _record_changed(self, sk: str, rid: str, changes: Changes, clock_ms: int, restamp: bool):
        """One record's held version, queue entry and refusal after a commit."""
        graph, key = self.graph(sk), (sk, rid)
        old, queued_before = graph.held.get(rid), graph.queued.get(rid)
        new = changes.held.get(key, old)
        queued = changes.queued.get(key, queued_before)
        if key in changes.refused:
            self._refusal(graph, rid, changes.refused[key])
        written = queued is not None and queued != queued_before
        if new != old:
            if new is None:
                if self._importing is None and not _refused_for_good(graph, rid):
                    self.find("Held records", f"dropped {rid} from {sk} (model: a record is "
                              "never forgotten; a deletion is a tombstone)", sk, [rid])  # fmt: skip
            elif written and new == queued:
                self._stamped(graph, rid, old, new, clock_ms, restamp)
            elif restamp and queued is None:
                # re-stamped, the write lost to the relay's copy it had kept aside (a pull
                # served it while the write was queued): the stamp is spent all the same
                spent = self._expected_stamp(graph, rid, old, clock_ms, True)
                self.last = max(spent, self.last)
                queued_before = {**queued_before, "at": spent}
                self._applied(graph, rid, queued_before, new)
            else:
                self._applied(graph, rid, old, new)
        if queued is None and queued_before is not None:
            self._dequeued(graph, rid, queued_before, new)
        if written and queued_before is None:
            graph.before[rid] = old
        if written:
            graph.settled.pop(rid, None)
        if new is not None and old is not None and new != old:
            graph.history[rid] = [*graph.history[rid][-3:], old]
        if new is None:
            graph.held.pop(rid, None)
        else:
            graph.held[rid] = new
        if queued is None:
            graph.queued.pop(rid, None)
            graph.before.pop(rid, None)
        else:
            graph.queued[rid] = queued

    def _expected_stamp(self, graph: Graph, rid: str, old, clock_ms: int, restamp: bool) -> int:
        """Client rule 1: ``at = max(now, last + 1, priorRev + 1)``, now as corrected by the
        adopted skew (client rule 9); a re-stamp's prior is what was held before the
        queued write."""
        prior = graph.before.get(rid, old) if restamp else old
        return max(clock_ms - self.skew, self.last + 1, int(prior["at"] if prior else 0) + 1)

    def _stamped(self, graph: Graph, rid: str, old: dict | None, new: dict, clock_ms: int,
                 restamp: bool) -> None:  # fmt: skip
        """A local write (or a re-stamp after a clock repair): client rule 1's stamp, and
        GraphRecord's shape (a tombstone's data empty)."""
        sk = graph.sk
        problem = facts.record_problem(new)
        if problem is not None or new.get("id") != rid or new.get("by") != self.me.member_id:
            self.find("GraphRecord", f"wrote {rid} in {sk} malformed: {problem or new!r:.120}",
                      sk, [rid])  # fmt: skip
            return
        expected = self._expected_stamp(graph, rid, old, clock_ms, restamp)
        if new["at"] != expected:
            why = "re-stamped after a clock repair" if restamp else "stamped"
            self.find(
                "client rule 9" if restamp else "client rule 1",
                f"{why} {rid} in {sk} at {new['at']}; the model stamps {expected} (max of now "
                f"{clock_ms - self.skew}, last+1 {self.last + 1}, priorRev+1)",
                sk,
                [rid],
            )
        self.last = max(self.last, new["at"])

    def _applied(self, graph: Graph, rid: str, old: dict | None, new: dict) -> None:
        """A record taken from the relay: served to the device, passing client rule 2, and
        by client rule 3 only over a version not newer. A version it held before may come
        back when the relay refused a write for good (docs/model.md)."""
        sk = graph.sk
        match = None
        for item in reversed(graph.served_by_record.get(rid, ())):
            verdict = self.verdict(graph, item)
            if verdict[2] is not None and verdict[2] == new:
                match = (item, verdict)
                break
        if match is None:
            if new in graph.history.get(rid, ()) and _refused_for_good(graph, rid):
                return  # restored after the relay refused the write for good
            unknown = sorted(set(new) - set(facts.RECORD_MEMBERS))
            if unknown:
                self.find(
                    "client rule 2",
                    f"stored {rid} in {sk} with members {unknown} "
                    "(model: unknown members are signed and ignored; only the parsed record is "
                    "stored)",
                    sk,
                    [rid],
                )
                return
            self.find("client rule 2", f"holds a version of {rid} in {sk} (at {_at(new)}) that "
                      "no pull served it and it did not write", sk, [rid])  # fmt: skip
            return
        item, (decision, reason, _) = match
        if decision == REFUSE:
            self.find(
                "client rule 2",
                f"applied {rid} (rev {item.op.get('rev')}, seq {item.op.get('seq')}) in {sk}: "
                f"{reason} (model: refuse and report it, never apply it best-effort)",
                sk,
                [rid],
            )
        if old is not None and old.get("at", 0) > new["at"]:
            self.find(
                "client rule 3",
                f"replaced its {rid} at {old['at']} with the relay's older copy at {new['at']} in "
                f"{sk} (model: take the relay's copy only when local.at <= record.at)",
                sk,
                [rid],
            )

    def _refusal(self, graph: Graph, rid: str, refusal: tuple[float, str] | None) -> None:
        if refusal is None:
            graph.refused.pop(rid, None)
            return
        rev, reason = refusal
        if not isinstance(reason, str) or not reason:
            self.find("client rule 2", f"refused {rid} in {graph.sk} without a reason", graph.sk)
        for item in reversed(graph.served_by_record.get(rid, ())):
            if item.op.get("rev") == rev:
                decision, _, _ = self.verdict(graph, item)
                if decision == ACCEPT:
                    self.find(
                        "client rule 2",
                        f"refused {rid} (rev {rev}) in {graph.sk} as {reason!r}, but it opens, "
                        "parses, fits its schema and verifies under every roster the device "
                        "was given (model: accept it)",
                        graph.sk,
                        [rid],
                    )
                break
        graph.refused[rid] = (rev, reason)

    def _dequeued(self, graph: Graph, rid: str, queued: dict, held: dict | None) -> None:
        """A queued write leaves the queue only when the relay settled it (accepted it, it
        lost the rev comparison, or it was refused for good), or a newer relay copy won
        (client rule 3)."""
        superseded = held is not None and held != queued and held.get("at", 0) >= queued["at"]
        settled = rid in graph.settled and graph.settled[rid] != "rev-too-far-ahead"
        if self._importing is not None or superseded or settled:
            return
        if graph.settled.get(rid) == "rev-too-far-ahead":
            self.find(
                "client rule 9",
                f"dropped its write of {rid} in {graph.sk} refused as rev-too-far-ahead (model: "
                "adopt the relay's now, re-stamp it and push it again)",
                graph.sk,
                [rid],
            )
        else:
            self.find(
                "the queue",
                f"dropped its queued write of {rid} in {graph.sk} (at {queued['at']}) that the "
                "relay never settled (model: writes are held until settled)",
                graph.sk,
                [rid],
            )

    def _cursor_moved(self, graph: Graph, sub: Subscription, cursor: int | None) -> None:
        """A subscription's cursor moves only over ops the device decided, never past an
        op under an epoch it lacks (client rule 4), never past what the relay served it,
        except over its own batch's echo (client rule 8)."""
        before = graph.cursors.get(sub, 0)
        if cursor is None:
            graph.cursors.pop(sub, None)
            return
        graph.cursors[sub] = cursor
        if cursor <= before:
            return
        sk, unfiltered = graph.sk, sub[1:] == (UNFILTERED, UNFILTERED)
        bound = graph.bounds.get(sub, 0)
        if unfiltered and self._echo_skipped(graph, before, cursor):
            # per the relay's answer every seq passed is the device's own batch: an op
            # served earlier at one of them was another view (a malicious relay's to
            # answer for in the log check, not the cursor's)
            return
        if cursor > bound:
            self.find(
                "client rule 8" if unfiltered and graph.pushes else "Pull rules",
                f"moved its cursor of {sub[0]} from {before} to {cursor}, past what the relay "
                f"served it ({bound}) (model: echo skipping only when every op of the batch "
                "landed and nothing else was written between)",
                sk,
            )
        seqs = graph.served_seqs
        for seq in seqs[bisect.bisect_right(seqs, before) : bisect.bisect_right(seqs, cursor)]:
            items = [item for item in graph.served[seq] if item.sub == sub]
            if len(items) == 1:  # several ops at one seq: no cursor can say which it passed
                self._passed(graph, items[0])

    def _echo_skipped(self, graph: Graph, before: int, cursor: int) -> bool:
        return any(
            answer.get("cursor") == cursor
            and accepted == size
            and not answer.get("rejected")
            and cursor - size == before
            for _, size, accepted, answer in graph.pushes
        )

    def _passed(self, graph: Graph, item: Served) -> None:
        """The cursor passed one served op: it is decided, as client rules 2-4 and 6 say."""
        op, sk = item.op, graph.sk
        rid, rev = op.get("recordId"), op.get("rev")
        decision, reason, record = self.verdict(graph, item)
        held, refused = graph.held.get(rid), graph.refused.get(rid)
        if decision == UNDECIDED:
            rule = "client rule 6" if reason == "no roster" else "client rule 4"
            self.find(
                rule,
                f"moved its cursor past seq {op.get('seq')} ({rid}) in {sk} though {reason} "
                "(model: stop before it, keep the cursor, fetch and retry)",
                sk,
                [rid],
            )
            return
        held_rev = held.get("at", 0) if held else None
        if decision == ACCEPT:
            if held_rev is None or held_rev < rev:
                self.find(
                    "client rule 2",
                    f"passed {rid} (rev {rev}, seq {op.get('seq')}) in {sk} without applying it "
                    f"(holds {_at(held)}); it passes every check (model: apply it)",
                    sk,
                    [rid],
                )
            elif held_rev == rev and held != record and rid not in graph.queued:
                self.find(
                    "client rule 3",
                    f"kept its own {rid} at rev {rev} in {sk} over the relay's copy at the same "
                    "rev with other content (model: take the relay's copy when local.at <= "
                    "record.at)",
                    sk,
                    [rid],
                )
        elif (
            decision == REFUSE
            and (held_rev is None or held_rev < rev)
            and (refused is None or refused[0] < rev)
        ):
            self.find(
                "client rule 2",
                f"skipped {rid} (rev {rev}) in {sk} ({reason}) without reporting it (model: "
                "failing records are skipped and the reason reported)",
                sk,
                [rid],
            )

    def verdict(self, graph: Graph, item: Served) -> tuple[str, str, dict | None]:
        """Client rule 2 for one served op, with the keys the device holds and the rosters
        it could have used: from the last one it had when the op came (this boot) to the
        newest. ``(decision, why, the parsed record)``: accept, refuse, either (the rosters
        disagree) or undecided (no key for its epoch, or no roster)."""
        op, sk = item.op, graph.sk
        epoch = op.get("e", max(graph.keys, default=0))
        key = graph.keys.get(epoch)
        if key is None:
            return UNDECIDED, f"it holds no key for epoch {epoch}", None
        rosters = self._rosters(graph, item)
        cache_key = (sk, op.get("recordId"), op.get("rev"), op.get("c"), key,
                     tuple(t for t, _ in rosters))  # fmt: skip
        cached = self._verdicts.get(cache_key)
        if cached is not None:
            return cached
        decided = self._decide(graph, op, key, rosters)
        if len(self._verdicts) > 50_000:
            self._verdicts.clear()
        self._verdicts[cache_key] = decided
        return decided

    def _decide(self, graph, op, key, rosters) -> tuple[str, str, dict | None]:
        sk, rid = graph.sk, op.get("recordId")
        envelope, problem = facts.open_op(key, sk, op)
        problem = problem or facts.envelope_problem(envelope, rid)
        if problem is None and op.get("rev") != envelope["r"]["at"]:
            problem = ("shape", f"op rev {op.get('rev')} is not r.at {envelope['r']['at']}")
        if problem is None:
            problem = facts.schema_problem(envelope["r"], self.app.accepts)
        if problem is not None:
            return REFUSE, f"{problem[0]}: {problem[1]}", None
        record = facts.parsed(envelope["r"])
        if not self.app.verify_signatures:
            return ACCEPT, "", record
        if not rosters:
            return UNDECIDED, "no roster", record
        strict = [facts.authorship_problem(envelope, sk, r, boundary=False) for _, r in rosters]
        lenient = [facts.authorship_problem(envelope, sk, r, boundary=True) for _, r in rosters]
        if all(strict):
            return REFUSE, f"{strict[-1][0]}: {strict[-1][1]}", record
        if not any(lenient):
            return ACCEPT, "", record
        return EITHER, "the rosters it was given disagree", record

    def _rosters(self, graph: Graph, item: Served) -> list[tuple[int, dict]]:
        """The rosters the device could have judged ``item`` with: the newest it had
        received this boot when the op came, and every one received since."""
        window = [(t, r) for t, b, r in graph.rosters if b == item.boot and t > item.tick]
        earlier = [(t, r) for t, b, r in graph.rosters if b == item.boot and t < item.tick]
        return earlier[-1:] + window

    def _log_changed(self, graph: Graph, view: LogView | None) -> None:
        """Log verification status: an alarm needs a contradiction in what the device was
        served and is latched; a chain anchored mid-log is never ok; final heads are the
        chain over the entries served (log chain)."""
        before, graph.log_view = graph.log_view, view
        if view is None:
            return
        sk = graph.sk
        latched = before is not None and before.status == "alarm" and not self._wipe
        if latched and view.status != "alarm":
            self.find("Log verification status", f"left alarm for {view.status} in {sk} "
                      "(model: alarm is latched)", sk)  # fmt: skip
        if view.status == "ok" and view.anchored is not None:
            self.find("Log verification status", f"reports ok for {sk} with a chain anchored "
                      f"mid-log at {view.anchored} (model: never ok)", sk)  # fmt: skip
        if view.anchored is None:
            for boundary, head in sorted(view.heads.items()):
                if before is not None and before.heads.get(boundary) == head:
                    continue
                expected = graph.log.head_at(boundary)
                if expected is not None and expected != head:
                    self.find(
                        "Log chain",
                        f"computed head {head[:10]}... at boundary {boundary} of {sk}; the log "
                        f"it was served gives {expected[:10]}... (model: the chain after "
                        "folding every entry with seq <= B)",
                        sk,
                    )
        if view.status == "alarm" and (before is None or before.status != "alarm"):
            cause = self._alarm_cause(graph)
            if cause is None:
                self.find(
                    "Log verification status",
                    f"raised alarm on {sk} without a contradiction in what it was served "
                    "(model: alarm only on a contradiction, or a peer's head that differs at a "
                    "boundary)",
                    sk,
                )

    def _alarm_cause(self, graph: Graph) -> str | None:
        """A contradiction the device was served, if any: log check (1) up to the seq
        served, log check (2) against a believable checkpoint, or an answer that went back
        on the relay's own account."""
        if graph.log.contradictions:
            return graph.log.contradictions[-1]
        served = graph.cursors.get((graph.gid, UNFILTERED, UNFILTERED), 0)
        unserved = graph.log.unserved(served, graph.held, graph.refused)
        if unserved is not None:
            return unserved
        return self._checkpoint_differs(graph)

    def _checkpoint_differs(self, graph: Graph) -> str | None:
        epoch1 = graph.keys.get(1)
        roster = graph.rosters[-1][2] if graph.rosters else {}
        for record in graph.held.values():
            if record.get("kind") != facts.CHECKPOINT_KIND or record.get("deleted"):
                continue
            data = record.get("data", {})
            claimed = data.get("d")
            owner = roster.get(claimed, {}).get("memberId") if isinstance(claimed, str) else None
            if claimed == self.me.device_id or epoch1 is None or owner != record.get("by"):
                continue
            if record.get("id") != checkpoint_record_id(epoch1, claimed):
                continue
            head = graph.log.head_at(data.get("seq"))
            if head is not None and head != data.get("head"):
                return f"{claimed}'s checkpoint at {data.get('seq')} differs"
        return None

    def _check_wiped(self) -> None:
        for graph in self.graphs.values():
            if graph.held or graph.queued or graph.refused:
                self.find(
                    "Ceremonies",
                    f"imported a recovery bundle and still holds records of {graph.sk} (model: "
                    "importing first wipes the local record store)",
                    graph.sk,
                )


def _route(request) -> tuple[str | None, dict]:
    try:
        route, params = match(request.method, request.path)
    except Refuse:
        return None, {}
    return route.name, params


def _gid(path: str) -> str:
    return unquote(path.split("/")[2])


def _json(body: bytes) -> object:
    try:
        return json.loads(body)
    except ValueError:
        return None


def _error(response) -> str | None:
    body = _json(response.body)
    return body.get("error") if isinstance(body, dict) else None


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int(text: object, default: int) -> int:
    return int(text) if isinstance(text, str) and text.isdecimal() else default


def _signature(request) -> tuple:
    return (request.method, request.path, tuple(sorted(request.query.items())), request.body)


def _refused_for_good(graph: Graph, rid: str) -> bool:
    """The relay refused the device's last push of ``rid`` for a reason no repair fixes."""
    reason = graph.settled.get(rid)
    return isinstance(reason, str) and reason != "rev-too-far-ahead"


def _at(record: dict | None) -> str:
    return "nothing" if record is None else f"rev {record.get('at')}"


def _fingerprint(entry: dict) -> str | None:
    try:
        return device_fingerprint(entry["memberId"], entry["pubJwk"], entry["sigJwk"])
    except (SimkitError, KeyError, TypeError, ValueError):
        return None


def _self_sig_valid(entry: dict, fingerprint: str | None) -> bool:
    signature = entry.get("selfSig")
    if fingerprint is None or not isinstance(signature, str):
        return False
    try:
        return verify_bytes(entry["sigJwk"], self_attestation_bytes(fingerprint), signature)
    except (SimkitError, ValueError, TypeError):
        return False


def _verifies(sig_jwk: dict, sk: str, record: dict, signature: str) -> bool:
    try:
        return verify_record(sig_jwk, sk, record, signature)
    except (SimkitError, ValueError, TypeError):
        return False
