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

from collections import Counter, defaultdict
from collections.abc import Callable

import attrs

from simkit.errors import SimkitError
from simkit.model.catalogue import rule_id
from simkit.model.device.cadence import CadenceRules
from simkit.model.device.graph import ROSTERS_KEPT, Graph, PushRun, PushSent
from simkit.model.device.keys import KeyRules, fingerprint
from simkit.model.device.logcheck import LogRules
from simkit.model.device.pushes import PushRules
from simkit.model.device.receive import ReceiveRules
from simkit.model.device.rereads import ReReadRules
from simkit.model.device.says import SaysRules
from simkit.model.device.timing import TimingRules
from simkit.model.device.views import App, Changes, Finding, Identity, Pin
from simkit.model.device.wire import as_int, error_code, is_count, parsed, route_of, signature_of
from simkit.model.device.writes import WriteRules
from simkit.model.rules import declared
from simkit.protocol.ids import graph_id_for, storage_key
from simkit.protocol.messages import answer_problems

Clock = Callable[[], int]  # reads the device's own clock, in ms

SYNC_ROUTES = ("push", "pull", "log", "get_keys", "keygaps", "roster", "put_keys", "discard")
CHECKED = {"pull": "pull", "log": "log", "get_keys": "keys", "roster": "devices",
           "keygaps": "keygaps", "push": "push"}  # fmt: skip
"""The routes whose answer the spec's tables fix (simkit.protocol.messages.ROUTES)."""


def _malformed(route: str | None, response) -> str | None:
    """What the spec's tables refuse in a 200 answer the device reads (None: nothing):
    an answer a relay that lies malformed, which tells the device nothing."""
    if response.status != 200 or route not in CHECKED:
        return None
    answer = parsed(response.body)
    return answer_problems(CHECKED[route], answer) if answer is not None else "not JSON"


@attrs.frozen
class _Sent:
    """Enough of a request to route it again."""

    method: str
    path: str


class DeviceModel(
    ReceiveRules,
    PushRules,
    KeyRules,
    WriteRules,
    LogRules,
    TimingRules,
    CadenceRules,
    SaysRules,
    ReReadRules,
):
    """``DeviceModel(identity, app)``: feed it the device's inputs in the order they
    happen; ``findings`` grows with every disagreement. ``changes`` names spec rules
    a variant changes on purpose: their checks are not made (docs/variants.md)."""

    def __init__(self, identity: Identity, app: App, changes: tuple[str, ...] = ()) -> None:
        self.me, self.app = identity, app
        self.changes = tuple(changes)
        self.departures: Counter[str] = Counter()  # declared rule -> departures
        self.findings: list[Finding] = []
        self.on_finding: Callable[[Finding], object] | None = None  # told of each at once
        self.on_departure: Callable[[str], object] | None = None  # likewise
        self.graphs: dict[str, Graph] = {}
        self.pins: dict[str, Pin] = {}
        self.triples: dict[str, set[str | None]] = defaultdict(set)  # device -> fingerprints
        self.tick = 0
        self.boot = 0
        self.last = 0  # the previous stamp (client rule 1)
        self._foreign_last = 0  # a stamp another client took, durable at the next commit
        self.skew = 0  # own clock - relay now, once adopted (client rule 9)
        self._staged: list = []  # answers processed at the device's next commit
        self._tasks: dict[object, tuple] = {}  # task -> what its next request must be
        self._failures: dict[object, tuple] = {}  # task -> the request that last failed
        self._failed_at: dict[object, int] = {}  # task -> when (tick)
        self._importing: dict[str, dict[int, bytes]] | None = None
        self._wipe = False
        self.app_writing = False  # the commit under way is an application write (an input)
        self._pushes: dict[object, PushSent] = {}
        self._pushing: dict[tuple, PushRun] = {}  # (task, graph) -> its push run so far
        self._verdicts: dict[tuple, tuple[str, str]] = {}
        self._opened: dict[str, bytes | None] = {}  # wrap -> the key it holds (keys.py)
        self._sks: dict[str, str | None] = {}  # graph ID -> storage key
        self._run_began = 0  # the tick the device's current sync run began after
        self._waiting: set[str] = set()  # graphs behind with writes queued as it began
        self._timing_init()
        self._cadence_init()
        self._says_init()
        self._rereads_init()

    # -- bookkeeping ---------------------------------------------------------------------

    def graph(self, sk: str) -> Graph:
        found = self.graphs.get(sk)
        if found is None:
            found = self.graphs[sk] = Graph(sk, graph_id_for(sk, self.me.member_id))
        return found

    def _sk(self, graph_id: str) -> str | None:
        if graph_id not in self._sks:
            try:
                self._sks[graph_id] = storage_key(graph_id, self.me.member_id)
            except SimkitError:
                self._sks[graph_id] = None
        return self._sks[graph_id]

    def find(self, rule: str | tuple[str, ...], detail: str, graph: str | None = None,
             records=()) -> None:  # fmt: skip
        """Keep a disagreement in ``rule`` (a catalogue ID, or several), unless the
        variant changes one of them on purpose: then it is a departure, counted (the
        other invariants judge what the change does)."""
        rules = tuple(rule_id(r) for r in ((rule,) if isinstance(rule, str) else rule))
        departed = declared(rules, self.changes)
        if departed:
            self.departures[departed[0]] += 1
            if self.on_departure is not None:
                self.on_departure(departed[0])
            return
        rule = ", ".join(rules)  # the sentence's opening
        finding = Finding(rule, f"{self.me.device_id} {detail}", graph, tuple(records), rules)
        self.findings.append(finding)
        if self.on_finding is not None:
            self.on_finding(finding)

    # -- requests --------------------------------------------------------------------------

    def sent(self, task: object, request, now: float, clock: Clock | None = None) -> None:
        """The device sent ``request`` at virtual time ``now`` (seconds); ``clock`` reads
        its own clock in ms (read only when a rule needs it)."""
        self.tick += 1
        self._cadence_sent(task, now)
        self._timing_sent(task, signature_of(request), f"{request.method} {request.path}", now)
        self._retry_rules(task, request, now)
        failed = self._failures.get(task)
        if failed is not None and failed != signature_of(request):
            del self._failures[task]
            self._gave_up(failed, self._failed_at.pop(task, 0))
        route, params = route_of(request)
        if route in ("get_keys", "pull") and (graph := self.graphs.get(self._sk(params["gid"]))):
            self._keys_fetched(task, graph, route)
            if route == "get_keys":
                graph.keys_asked = self.tick
        failed = self._failures.get(task)
        if route is None or (failed is not None and failed == signature_of(request)):
            return  # a retry sends again what was judged when it was first sent
        sk = self._sk(params["gid"]) if "gid" in params else None
        if sk is not None and route in ("push", "pull"):
            graph = self.graph(sk)
            if route == "pull":
                graph.pulled = self.tick
                self._pull_sent(graph, request)
            elif request.body != graph.push_body:  # a new push, not a retry of the last
                graph.pushed, graph.push_body = (graph.pushed[1], self.tick), request.body
        if route == "keygaps" and sk is not None and clock is not None:
            self._rereads_sent(sk, clock())
        if route == "push" and sk is not None:
            self._push_sent(task, sk, request)
        elif route == "put_keys" and sk is not None:
            self._keys_posted(sk, request)
        elif route == "discard" and sk is not None:
            self._discarded(sk, params["epoch"])

    def _keys_fetched(self, task: object, graph: Graph, route: str) -> None:
        """Client rule 4: stopped before an op under an epoch it lacks, the device fetches
        keys before it pulls the graph again."""
        owed, graph.keys_owed = graph.keys_owed, None
        if route == "get_keys" or owed is None or owed[0] is not task:
            return
        self.find(
            "client rule 4",
            f"was served an op of {graph.sk} under epoch {owed[1]}, which it lacks, and "
            "pulled again without fetching keys (model: stop, fetch keys, retry)",
            graph.sk,
        )

    def _gave_up(self, failed: tuple, at: int) -> None:
        """A task moved on from a sync request the relay never answered: Log
        verification status says ``ok`` goes back to ``unverified`` when the relay
        cannot be reached (an application's blob request is not a sync run's)."""
        method, path = failed[0], failed[1]
        route, params = route_of(_Sent(method, path))
        sk = self._sk(params["gid"]) if route in SYNC_ROUTES and "gid" in params else None
        graph = self.graphs.get(sk)
        view = graph.log_view if graph is not None and graph.log_view_at < at else None
        if view is not None and view.status == "ok":
            self.find(
                "log status",
                f"kept log status ok for {sk} though the relay could not be reached "
                f"({method} {path} gave up) (model: ok -> unverified)",
                sk,
            )

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
            if signature_of(request) != what:
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
        elif kind == "pull" and route_of(request) != ("pull", {"gid": what}) and not at:
            self.find(
                "client rule 11",
                f"after a push to {what} refused 403 not-permitted, sent {request.method} "
                f"{request.path} (model: hold the writes and continue with the pull)",
                graph=self._sk(what),
            )

    # -- answers ---------------------------------------------------------------------------

    def received(self, task: object, request, response, now: float, clock: Clock) -> None:
        """The device received ``response`` to ``request``; ``clock`` reads its own clock
        in ms (read only when a rule needs it: reading it for every answer is slow)."""
        self.tick += 1
        status = response.status
        route, params = route_of(request)
        wrong = _malformed(route, response)
        if status == 429 or status >= 500 or wrong:
            self._failed(task, request, now, wrong or f"status {status}")
        else:
            self._failures.pop(task, None)
            self._timing_answered(task, signature_of(request), status)
            self._cadence_done(task, now, failed=False)
        if wrong:  # it tells the device nothing: a server failure, its push still in flight
            return
        sk = self._sk(params["gid"]) if route is not None and "gid" in params else None
        if status != 200:
            self._says_trouble(task, route, sk, status)
        if route in ("push", "put_keys"):  # only their refusals are read (a parse per answer)
            self._says_answered(route, sk, status, error_code(response) if status != 200 else None)
        retried = status == 429 or status >= 500  # the push stays in flight
        push = (self._pushes.get if retried else self._pushes.pop)(task, None)
        push = push if route == "push" else None
        if sk is not None and status != 200:
            self.graph(sk).keys_owed = None  # the run may stop here: keys wait for the next
        if route is None or sk is None or status != 200:
            if push is not None and status == 403 and error_code(response) == "not-permitted":
                # owed unless it pulled the graph after its push before this one
                graph = self.graph(sk) if sk is not None else None
                run = self._pushing.get((task, sk))
                previous = run.previous if run else graph.pushed[0] if graph else 0
                pulled = graph is not None and graph.pulled > previous
                self._tasks[task] = ("pull", params["gid"], pulled)
            return
        answer = parsed(response.body)
        if not isinstance(answer, dict):
            return
        graph = self.graph(sk)
        # client rule 5 names the epoch of push and pull answers; a keys answer is the
        # fetch it asks for (a keygaps or POST keys answer is neither: docs/model.md)
        epoch = answer.get("latestEpoch") if route == "get_keys" else answer.get("epoch")
        if route in ("push", "pull", "get_keys") and is_count(epoch):
            graph.relay_epoch = max(graph.relay_epoch, epoch)
        # every answer that states the relay's epoch tells the device which epochs exist:
        # a post of one of them is a grant, not a new epoch (client rule 14)
        shown = answer.get("latestEpoch") if route in ("get_keys", "keygaps", "put_keys") else epoch
        if route in ("push", "pull", "get_keys", "keygaps", "put_keys") and is_count(shown):
            graph.shown_epoch = max(graph.shown_epoch, shown)
        if route == "pull":
            self._pulled(graph, request, answer, clock())
            ops = answer.get("ops") if isinstance(answer.get("ops"), list) else []
            lacking = {op["e"] for op in ops if isinstance(op, dict) and is_count(op.get("e"))}
            # lacking: neither kept nor served to it in a wrap it opens (a keys answer to
            # another of its tasks, a rotation's read-back, may have handed it the key
            # before it reached the op, and before it committed it: F31)
            lacking -= set(graph.keys) | {epoch for epoch, keys in graph.opened.items() if keys}
            if lacking:
                graph.keys_owed = (task, min(lacking))
        elif route == "push" and push is not None:
            self._staged.append(("push", sk, push, answer, clock()))
        elif route == "get_keys":
            self._keys_answered(graph, answer)
            self._rereads_keys(sk, answer)
            graph.keys_owed = None  # keys were read after the op (by any of its tasks: F31)
        elif route in ("roster", "keygaps"):
            entries = answer.get("devices", answer.get("gaps"))
            if isinstance(entries, list):
                found = {e["deviceId"]: e for e in entries if isinstance(e, dict)
                         and isinstance(e.get("deviceId"), str)}  # fmt: skip
                for device_id, entry in found.items():
                    self.triples[device_id].add(fingerprint(entry))
                if route == "roster":
                    kept = graph.rosters[-ROSTERS_KEPT + 1 :]
                    graph.rosters = [*kept, (self.tick, self.boot, found)]
                    graph.roster_clocks = {t: graph.roster_clocks[t] for t, _, _ in kept}
                    graph.roster_clocks[self.tick] = clock()
                else:
                    graph.keygaps = found
        elif route == "log":
            after = as_int(request.query.get("after"), 0)
            graph.log.read(after, answer, self.tick, graph.top_served)

    def lost(self, task: object, request, now: float) -> None:
        """The request or its answer was lost on the network: client rule 10 retries it."""
        self.tick += 1
        self._failed(task, request, now, "a lost request")

    def _failed(self, task: object, request, now: float, why: str) -> None:
        """A request's first failure owes a retry; a retry that fails again may be the
        last attempt (the spec bounds the attempts without fixing how many)."""
        signature = signature_of(request)
        self._timing_failed(task, signature, now)
        self._cadence_done(task, now, failed=True)
        if self._failures.get(task) != signature:
            self._tasks[task] = ("retry", signature, (now, why))
        self._failures[task] = signature
        self._failed_at[task] = self.tick
        route, params = route_of(request)
        self._says_trouble(task, route, self._sk(params["gid"]) if "gid" in params else None, None)
        if "gid" in params and (sk := self._sk(params["gid"])) in self.graphs:
            self.graphs[sk].keys_owed = None  # the run may stop here: keys wait for the next
        if route == "discard" and (sk := self._sk(params["gid"])) is not None:
            # the relay could not be reached: the rest of this keys answer's discards may
            # wait for the next run (client rule 10 bounds the attempts)
            self.graph(sk).discards_cut = True

    # -- the application, crashes, imports -------------------------------------------------

    def foreign_stamp(self, at: int) -> None:
        """A non-conforming client stamped with the device's high-water mark: it holds
        from the device's next commit, and is gone with a crash before one (so the
        device may stamp ``at`` again; found by the fuzzer)."""
        self._foreign_last = max(self._foreign_last, at)

    def crashed(self) -> None:
        """What the device had received but not committed is gone with its process."""
        self._foreign_last = 0
        self._staged.clear()
        self._tasks.clear()
        self._pushing.clear()
        self._failures.clear()
        self._failed_at.clear()
        self._pushes.clear()
        self._waiting.clear()  # a boot's first run asks for keys anyway
        self._timing_crashed()
        self._cadence_crashed()
        self._says_crashed()
        self._rereads_reset()
        for graph in self.graphs.values():
            graph.unopenable.clear()
            graph.restamps.clear()
            graph.keys_owed = None

    def restarted(self, model: type["DeviceModel"] | None = None, changes=None) -> None:
        """The device booted again from its persisted state; ``model`` and ``changes``:
        into another version (a release), which that version's model judges from here
        on, knowing all this one knew (the state a device keeps is the same)."""
        self.boot += 1
        if model is not None:
            self.__class__ = model
            self.changes = tuple(changes)

    def importing(self, keyrings: dict[str, dict[int, bytes]], wipe: bool) -> None:
        """A recovery bundle (``wipe``: importing first wipes the local record store) or an
        invite is being imported: until ``imported``, its keys may be adopted."""
        self._importing = keyrings
        self._wipe = wipe
        self._rereads_reset()

    def imported(self) -> None:
        if self._wipe:
            self._check_wiped()
            for graph in self.graphs.values():  # its log state went too, and what it believed
                graph.claims_from = self.tick  # (log check (2): ``LogRules._believable``)
        self._importing, self._wipe = None, False

    def ran(self, graph_id: str, error: str | None, last_error: object, task=None,
            status: tuple[object, dict] | None = None) -> None:  # fmt: skip
        """A sync run of ``graph_id`` ended (``sync.done``); ``error``: why it stopped
        early, as the event says; ``last_error``: ``status.lastError`` then. Client
        status fields name ``status.lastError``: a text (or nothing yet), and after a
        run that ended in an error, the text of an error."""
        self._ran_behind(graph_id, error)
        self._timing_ran(task)
        self._cadence_ran(graph_id)
        self._says_ran(graph_id, error, last_error, task)
        if status is not None:
            self._status_judged(graph_id, *status)
        if (error is None and last_error is None) or (isinstance(last_error, str) and last_error):
            return
        self.find(
            "events rule 5",
            f"ended a sync run of {graph_id} (error: {error}) with status.lastError "
            f"{last_error!r} (model: a text saying what went wrong)",
            self._sk(graph_id),
        )

    # -- commits ---------------------------------------------------------------------------

    def committed(self, changes: Changes, clock: Clock) -> None:
        """One commit of the device's durable state; ``clock`` reads its own clock in ms."""
        self.tick += 1
        self.last, self._foreign_last = max(self.last, self._foreign_last), 0
        staged, self._staged = self._staged, []
        for kind, *args in staged:
            if kind == "push":
                self._push_answered(*args)
        if not changes:
            return  # a commit that rewrote only what it held already
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
        self._says_followed(changes)
        for device_id, pin in changes.pins.items():
            self._pinned(device_id, pin)
        touched = {key for part in (changes.held, changes.queued, changes.refused) for key in part}
        order = {k: self.graph(k[0]).restamps.get(k[1], -1) for k in touched}
        clock_ms = clock() if touched else 0
        for sk, rid in sorted(touched, key=order.__getitem__):
            # an application write between a refusal and its re-stamp is not the re-stamp
            restamp = not self.app_writing and self.graph(sk).restamps.pop(rid, None) is not None
            self._record_changed(sk, rid, changes, clock_ms, restamp)
        for sub, cursor in changes.cursors.items():
            sk = self._sk(sub[0])
            if sk is not None:
                self._cursor_moved(self.graph(sk), sub, cursor)
        for sk, view in changes.logs.items():
            self._log_changed(self.graph(sk), view)

    def _check_wiped(self) -> None:
        for graph in self.graphs.values():
            if graph.held or graph.queued or graph.refused:
                self.find(
                    "ceremony: recover",
                    f"imported a recovery bundle and still holds records of {graph.sk} (model: "
                    "importing first wipes the local record store)",
                    graph.sk,
                )
