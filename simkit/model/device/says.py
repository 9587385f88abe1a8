"""What a device says, judged against what it was given: its events (Events, client-side
events), its status fields (Client status, Linking status) and the reason it gives for a
refused record (client rule 2).

Each is a claim about the world: ``keys.unopenable`` names a wrap that did not open,
``device.pending`` a device with no pin, ``device.conflict`` an approved device whose
published keys changed, ``policy.readonly`` a refusal with ``not-permitted``,
``keys.behind`` writes held behind an epoch, ``linking.unenforced`` the ``observe``
mode. The status a device shows at the end of each sync run is what it holds: ``waiting``
exactly while a graph it follows has keys on the relay and none on the device, ``behind``
exactly while the relay's epoch it noted is above the newest key it holds, ``readonly``
exactly while a push to the graph was refused ``not-permitted`` and none landed since (a
key post so refused is reported, but holds no write), the log status ``off`` exactly
when no unfiltered subscription exists or the app does not verify logs. docs/model.md,
"What it judges".
"""

from simkit.model.device import facts

SAID = (
    "keys.unopenable",
    "device.pending",
    "device.conflict",
    "policy.readonly",
    "keys.behind",
    "linking.unenforced",
    "retry",
    "sync.stopped",
)
"""The client-side events the model judges as they are said (``retry``: client rule 10)."""

READS = ("pull", "log", "get_keys", "keygaps", "roster")  # a sync run's reads of a graph
WAITING = "waiting: a graph it follows has keys on the relay and it holds none"
LINKED = "ok: it holds a key of every graph it follows that has one"
READONLY = "a push was refused not-permitted and none landed since"
ON = "not off: it follows the graph unfiltered and verifies the log"
OFF = "off: only filtered subscriptions, or log verification off"
WRITABLE = "no push was refused not-permitted since one landed"


class SaysRules:
    """Events, status fields and refusal reasons (mixed into ``DeviceModel``)."""

    def _says_init(self) -> None:
        self.followed: set[str] = set()  # graph IDs the device follows, as committed
        self.views: set[tuple] = set()  # its subscriptions (graph ID, kinds, shards)
        self._not_permitted: dict[str, bool] = {}  # sk -> a push refused since one landed
        self._refused: dict[str, bool] = {}  # sk -> its last push or key post: not-permitted
        self._unenforced = -1  # the boot that said linking.unenforced
        # completeness, judged as each graph's sync run ends (``_says_ran``):
        self._held_unkeyed: set[str] = set()  # sk: writes queued, no key, at its last run end
        self._behind_said: set[str] = set()  # sk: keys.behind said since its last run end
        self._troubled: set[str] = set()  # sk: a request of it failed or was refused since
        self._unsurfaced: dict[tuple, int] = {}  # (task, sk) -> a 4xx this run must surface

    def _says_answered(self, route: str | None, sk: str | None, status: int, code) -> None:
        """A push that lands lifts ``readonly``; a push refused ``not-permitted`` sets it;
        that or a key post so refused is what ``policy.readonly`` reports."""
        if sk is None:
            return
        refused = status != 200 and code == "not-permitted"  # 403 from an honest relay
        self._refused[sk] = refused
        if route == "push" and (refused or status == 200):
            self._not_permitted[sk] = refused

    def said(self, kind: str, graph_id: str | None, fields: dict, task=None) -> None:
        """The device emitted ``kind`` about ``graph_id`` (None: about itself), in ``task``."""
        if kind == "retry":
            self._retrying(task)
            return
        if kind == "sync.stopped":
            if fields.get("reason") == "run-budget":
                self._cadence_cut(graph_id)
            return
        sk = self._sk(graph_id) if graph_id is not None else None
        graph = self.graphs.get(sk) if sk is not None else None
        if kind == "linking.unenforced":
            self._said_unenforced()
        elif kind == "policy.readonly" and not self._refused.get(sk, False):
            self.find(
                "events rule 4",
                f"said policy.readonly for {sk}, whose last push or key post was not refused "
                "not-permitted (model: a write refused not-permitted, the queue held)",
                sk,
            )
        elif kind == "keys.unopenable":
            epoch = fields.get("epoch")
            if graph is None or epoch not in graph.served_unopenable:
                self.find(
                    "events rule 4",
                    f"said keys.unopenable for epoch {epoch} of {sk}, whose wrap "
                    "it was served opens (or was never served)",
                    sk,
                )
        elif kind in ("device.pending", "device.conflict"):
            self._said_pin(kind, fields.get("device"))
        elif kind == "keys.behind":
            self._said_behind(graph, sk)
            if sk is not None:
                self._behind_said.add(sk)

    def _says_trouble(self, task: object, route, sk: str | None, status: int | None) -> None:
        """A request of ``sk`` failed (``status`` None: lost) or was answered ``status``:
        a run it is in owes no completeness. A 4xx other than 429 to a read must be
        surfaced (client rule 10), but a log route an older relay lacks (404: the log
        status says it, Versioning rule 3); a refused write has its own answer (a reason,
        ``policy.readonly``, a key post made again on a newer roster: client rule 13)."""
        if sk is None:
            return
        self._troubled.add(sk)
        read = route in READS and not (route == "log" and status == 404)
        if read and status is not None and 400 <= status < 500 and status != 429:
            self._unsurfaced[task, sk] = status
            if len(self._unsurfaced) > 64:  # a ceremony's task that never ends a run
                del self._unsurfaced[next(iter(self._unsurfaced))]

    def _says_ran(self, graph_id: str, error: str | None, last_error: object, task) -> None:
        """Completeness as a run of ``graph_id`` ends: a device holding writes and no key of
        the graph across a whole run without trouble says ``keys.behind`` in it (Events
        rule 4); a 4xx answer in the run is surfaced in ``status.lastError``, a text naming
        the graph (client rule 10: "other 4xx are not retried and are surfaced")."""
        sk = self._sk(graph_id)
        if sk is None:
            return
        graph = self.graphs.get(sk)
        held = graph is not None and bool(graph.queued) and not graph.keys
        quiet = error is None and sk not in self._troubled
        if held and quiet and sk in self._held_unkeyed and sk not in self._behind_said:
            self.find(
                "events rule 4",
                f"ended a sync run of {sk} holding {len(graph.queued)} writes and no key "
                "without saying keys.behind (model: said while writes are held behind an "
                "epoch)",
                sk,
            )
        (self._held_unkeyed.add if held else self._held_unkeyed.discard)(sk)
        self._behind_said.discard(sk)
        self._troubled.discard(sk)
        status = self._unsurfaced.pop((task, sk), None)
        if status is not None and not (isinstance(last_error, str) and graph_id in last_error):
            self.find(
                "client rule 10",
                f"ended a sync run of {graph_id} in which a request was answered {status} with "
                f"status.lastError {last_error!r} (model: other 4xx are surfaced: a text "
                "naming the graph, docs/client.md)",
                sk,
            )

    def _said_unenforced(self) -> None:
        if self.app.approval_mode != "observe":
            self.find(
                "events rule 4",
                f"said linking.unenforced in {self.app.approval_mode} mode "
                "(model: only when the gate runs in observe mode)",
            )
        elif self._unenforced == self.boot:
            self.find(
                "events rule 4", "said linking.unenforced twice in one boot (model: once per boot)"
            )
        self._unenforced = self.boot

    def _said_pin(self, kind: str, device_id: object) -> None:
        pin = self.pins.get(device_id) if isinstance(device_id, str) else None
        if kind == "device.pending" and pin is not None:
            self.find(
                "events rule 4",
                f"said device.pending for {device_id}, pinned {pin.state} "
                "(model: a device with no pin and no proof awaits approval)",
            )
        elif kind == "device.conflict":
            seen = self.triples.get(device_id, set())
            changed = pin is not None and any(fp != pin.fingerprint for fp in seen)
            if pin is None or pin.state != "conflicted" or not changed:
                state = pin.state if pin else "no pin"
                self.find(
                    "events rule 4",
                    f"said device.conflict for {device_id} ({state}, handed "
                    f"{'other keys' if changed else 'only the keys it pinned'}) (model: an "
                    "approved device whose published keys changed is pinned "
                    "conflicted)",
                )

    def _said_behind(self, graph, sk: str | None) -> None:
        held = max(graph.keys, default=0) if graph is not None else 0
        if graph is None or not graph.queued or (held and graph.noted_epoch <= held):
            epoch = graph.noted_epoch if graph is not None else 0
            self.find(
                "events rule 4",
                f"said keys.behind for {sk} holding epoch {held or 'none'} of "
                f"{epoch}, with {len(graph.queued) if graph else 0} writes queued "
                "(model: behind an epoch, holding writes)",
                sk,
            )

    def _says_followed(self, changes) -> None:
        for graph_id, followed in changes.followed.items():
            (self.followed.add if followed else self.followed.discard)(graph_id)
        for view, subscribed in changes.views.items():
            (self.views.add if subscribed else self.views.discard)(view)

    def _status_judged(self, graph_id: str, linking: object, shown: dict) -> None:
        """The status the device shows as a sync run of ``graph_id`` ends."""
        sk = self._sk(graph_id)
        if sk is None:
            return
        graph = self.graph(sk)
        waiting = any(
            (g := self.graphs.get(self._sk(gid))) is not None and g.noted_epoch > 0 and not g.keys
            for gid in self.followed
        )
        if linking != ("waiting" if waiting else "ok"):
            why = WAITING if waiting else LINKED
            self.find("linking status", f"showed status.linking {linking!r} (model: {why})", sk)
        behind = graph.noted_epoch > max(graph.keys, default=0)
        if shown.get("behind") != behind:
            self.find(
                "events rule 5",
                f"showed {sk} behind={shown.get('behind')} holding epoch "
                f"{max(graph.keys, default=0)} of {graph.noted_epoch} (model: behind "
                "exactly while the relay's epoch is above its newest key)",
                sk,
            )
        whole = self.app.log_verification and (graph_id, (), ()) in self.views
        state = (shown.get("log") or {}).get("state")
        if (state == "off") == whole:
            self.find(
                "log status",
                f"showed log status {state!r} for {sk} (model: {ON if whole else OFF})",
                sk,
            )
        anchored = graph.log_view.anchored if whole and graph.log_view is not None else None
        shown_from = (shown.get("log") or {}).get("from")
        if whole and shown_from != anchored:
            expected = "no from" if anchored is None else f"from {anchored}"
            self.find(
                "events rule 5",
                f"showed the log of {sk} with from={shown_from} (model: {expected}: "
                "status.graphs[g].log with from when its chain is anchored)",
                sk,
            )
        readonly = self._not_permitted.get(sk, False)
        if shown.get("readonly") != readonly:
            self.find(
                "events rule 5",
                f"showed {sk} readonly={shown.get('readonly')} (model: "
                f"{READONLY if readonly else WRITABLE})",
                sk,
            )

    def _says_crashed(self) -> None:
        self._held_unkeyed.clear()  # a boot's first run starts the count again
        self._behind_said.clear()
        self._troubled.clear()
        self._unsurfaced.clear()
        self._refused.clear()
        self._not_permitted.clear()  # a boot holds no refusal until the relay says one again

    def _reason_true(self, graph, item, rid: str, reason: str) -> None:
        """Client rule 2: the reason reported for a refused record is a fault it has."""
        key = graph.keys.get(item.op.get("e", max(graph.keys, default=0)))
        if key is None:
            return
        rosters = [roster for _, roster in self._rosters(graph, item)]
        faults = facts.faults(key, graph.sk, item.op, self.app, rosters)
        if faults and reason not in faults:
            self.find(
                "client rule 2",
                f"refused {rid} (rev {item.op.get('rev')}) in {graph.sk} as {reason!r}; its "
                f"fault is {' or '.join(sorted(faults))} (model: the reason reported is the "
                "record's own)",
                graph.sk,
                [rid],
            )
