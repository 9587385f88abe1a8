"""Oracles that follow a world in lockstep: the spec's executable models, fed every
exchange as it happens, keeping what disagreed and where (the ``*-model`` invariants
read it).

``RelayOracle`` holds the honest relay against ``simkit.model``: every request the
world's relay answers, every sweep and restart. ``DeviceOracle`` holds every honest
device against ``simkit.model.device``.
"""

import functools
import json
from collections import Counter

import attrs
import trio

from simkit.client import Device
from simkit.client.store import GONE
from simkit.model import ModelCheck
from simkit.model.catalogue import how_to_declare
from simkit.model.device import App, Changes, DeviceModel, Identity, LogView, Pin
from simkit.model.device.says import SAID
from simkit.model.rules import declared
from simkit.protocol.keyring import Keyring
from simkit.relay import Relay, Request, Response
from simkit.sim.variant import Variant


@attrs.frozen
class Disagreement:
    """What a model found: where in the trace, what differed, who asked, the records
    their request named and the graph it is about."""

    trace_seq: int
    detail: str
    devices: tuple[str, ...] = ()
    records: tuple[str, ...] = ()
    graph: str | None = None  # the storage key it is about, when the model names one


class RelayOracle:
    """The relay model following one relay, keeping every ``Disagreement``.

    A disagreement only in rules the relay's version declares it changes is a
    departure: counted (``departures``), traced, and followed: the model takes the
    changed relay's store for what the request touched, so later answers are judged
    against the changed protocol's history, not the spec's (docs/variants.md). Where it
    cannot read that store, it stops judging that graph (``unjudged``) and says why."""

    def __init__(self, relay: Relay, host, settings: dict, trace, variant: Variant) -> None:
        self.check: ModelCheck | None = ModelCheck(
            host, relay.clock(), model=variant.relay_model, **settings
        )
        self.findings: list[Disagreement] = []
        self.retired: str | None = None  # why it stopped following the relay
        self.changes = variant.changes
        self.changed = variant.relay is not Relay  # a finding says how to declare the rule
        self.departures: Counter[str] = Counter()  # declared rule -> departures
        self.unjudged: dict[str, str] = {}  # graph it stopped judging -> why
        self.on_departure = lambda: None  # told of each departure (the world's coverage)
        self._trace = trace
        self._poked: list[str] = []  # the graphs poked since the last exchange or sweep

    def poked(self, graph: str) -> None:
        """The relay emitted a poke for ``graph`` (its event hook, as it happens)."""
        self._poked.append(graph)

    def answer(self, relay: Relay, request: Request) -> Response:
        """The relay's answer to one request, checked against the model's."""
        if self.check is None:
            return relay.handle(request)
        now = relay.clock()
        self._poked.clear()
        response = relay.handle(request)
        findings = self.check.observe(request, now, response) + self._pokes()
        if self.check.model.touched in self.unjudged:
            return response
        stored = None
        if self.changes and request.method != "GET":  # a write's outcome, judged at once
            stored = self._store(relay)
            findings += self.check.stored(*stored)
        if findings and not self._found(findings, request):
            self._follow(stored or self._store(relay), request)
        return response

    def _store(self, relay: Relay) -> tuple[dict | None, dict | None]:
        """What the last request touched in the relay's store, as ``ModelCheck.stored``
        takes it: the graph (None when it has none), or the whole store."""
        key = self.check.model.touched
        if key is None:
            return None, relay.snapshot()
        graph = relay.state.graphs.get(key)
        return (None if graph is None else graph.data()), None

    def swept(self, now: int, forgotten: int) -> None:
        """One external job swept at ``now`` and the relay forgot ``forgotten`` blobs."""
        if self.check is not None:
            self._found(self.check.sweep(now, forgotten) + self._pokes())

    def swept_if_due(self, now: int, result: int | None) -> None:
        """The built-in sweeper woke at ``now`` and the relay answered ``result``."""
        if self.check is not None:
            self._found(self.check.sweep_if_due(now, result) + self._pokes())

    def _pokes(self) -> list[str]:
        """The graphs the last exchange or sweep wrote and did not poke, but those the
        model no longer judges (then forgets the pokes seen)."""
        found = self.check.pokes({*self._poked, *self.unjudged})
        self._poked.clear()
        return found

    def restarted(self, relay: Relay, version: Variant) -> None:
        """The relay restarted from its store, running ``version`` (a release may have
        moved it to another): from now on that version's model judges it."""
        if self.check is not None:
            self.check.restart(relay.clock(), version.relay_model)
        self.changes, self.changed = version.changes, version.relay is not Relay

    def store_findings(self, relay: Relay) -> list[str]:
        """The relay's whole store against the model's (none once retired), but in
        rules the variant changes (departures) and graphs the model stopped judging."""
        found = [] if self.check is None else self.check.store(relay)
        found = [f for f in found if not any(f" {key} " in f for key in self.unjudged)]
        kept, departed = self._split(found)
        self._departed(departed)
        if self.changed:
            return [f"{finding} ({how_to_declare(finding.rules)})" for finding in kept]
        return kept

    def retire(self, why: str) -> bool:
        """The relay's state changed behind the model's back (a colluding relay serving
        a revoked device): stop checking it. Whether it was following until now."""
        if self.check is None:
            return False
        self.check, self.retired = None, why
        return True

    def _split(self, findings: list[str]) -> tuple[list[str], list[str]]:
        """(findings in no declared rule, the declared rules the others name)."""
        kept, departed = [], []
        for finding in findings:
            rules = declared(finding.rules, self.changes)
            if rules:
                departed.extend(rules)
            else:
                kept.append(finding)
        return kept, departed

    def _departed(self, rules: list[str], request: Request | None = None) -> None:
        """One departure per declared rule an exchange (or a check) disagreed in."""
        for rule in dict.fromkeys(rules):
            self.departures[rule] += 1
            where = {} if request is None else {"request": f"{request.method} {request.path}"}
            self._trace.emit("check", "relay", what="departure", rule=rule, **where)
            self.on_departure()

    def _found(self, findings: list[str], request: Request | None = None) -> bool:
        """Keep the findings in rules no version declares; count the others as a
        departure. Whether any was kept."""
        kept, declared = self._split(findings)
        self._departed(declared, request)
        who, records = (), ()
        if request is not None and kept:
            who = tuple(filter(None, [request.headers.get("x-device")]))
            records = records_named(request)
        for finding in kept:
            if self.changed:
                finding = f"{finding} ({how_to_declare(finding.rules)})"
            if request is not None:
                finding = f"{request.method} {request.path} by {', '.join(who)}: {finding}"
            self.findings.append(Disagreement(len(self._trace), finding, who, records))
        return bool(kept)

    def _follow(self, stored: tuple[dict | None, dict | None], request: Request) -> None:
        """After a departure: the changed relay's store (what the request touched,
        ``_store``) is the model's from now on; a store it cannot read ends the judging
        of that graph (the whole relay, for a request that names none)."""
        key = self.check.model.touched
        try:
            self.check.follow(*stored)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            why = (
                f"after a departure in {request.method} {request.path} the model cannot "
                f"read what the changed relay stored ({type(exc).__name__}: {exc})"
            )
            what = f"graph {key}" if key is not None else "the relay"
            self._trace.emit("check", "relay", what="unjudged", of=what, why=why)
            if key is None:
                self.retire(why)
            self.unjudged[key or "the relay"] = why


def records_named(request: Request) -> tuple[str, ...]:
    """The record IDs a push names (for a finding's evidence), else none."""
    try:
        ops = json.loads(request.body)["ops"] if request.path.endswith("/push") else []
        return tuple(dict.fromkeys(op["recordId"] for op in ops if isinstance(op, dict)))
    except (ValueError, KeyError, TypeError):
        return ()


class DeviceOracle:
    """The device model (``simkit.model.device``) following every honest device of a
    world in lockstep: each request it sends and answer it receives (from its link),
    each commit of its durable state (its store's observer), its crashes and restarts,
    the bundles and invites it imports, the writes its application was told are done.
    A stolen device, once the thief runs it, is no longer followed."""

    def __init__(self, world) -> None:
        self.world = world
        self.models: dict[str, DeviceModel] = {}
        self.findings: list[Disagreement] = []
        self.stopped = False  # the run ended: what a test does to a device afterwards is not judged

    # -- devices ----------------------------------------------------------------------------

    def attach(self, slot) -> None:
        """Follow ``slot``'s device from now on (a new device, or one restarted)."""
        device = slot.device
        model = self.models.get(slot.device_id)
        if model is None:
            config = self.world.config
            app = App(
                config.registry.accepts,
                config.verify_signatures,
                config.send_metadata,
                config.approval_mode,
                config.log_verification,
                config.poll_interval_s,
                max(config.push_debounce_s, config.poke_debounce_s),
                config.recheck_s,
            )
            identity = Identity(
                device.member_id, device.device_id, device.keys.wrap_key, device.keys.sig_jwk
            )
            version = self.world.parties.version_of(slot.device_id)
            model = self.models[slot.device_id] = version.device_model(
                identity, app, version.changes
            )
            model.on_finding = functools.partial(self._kept, slot.device_id)
            model.on_departure = functools.partial(self._departed, slot.device_id)
        else:
            version = self.world.parties.version_of(slot.device_id)
            model.restarted(version.device_model, version.changes)
        device.store.on_commit = functools.partial(self.committed, slot)

    def _following(self, slot) -> DeviceModel | None:
        if slot is None or slot.stolen or slot.device is None or self.stopped:
            return None
        return self.models.get(slot.device_id)

    def looping(self, device_id: str) -> None:
        """``device_id``'s run loop starts: from now on its quiet spells are judged."""
        model = self._following(self.world.slots.get(device_id))
        if model is not None:
            model.looping(self.world.now())

    def quiet_until(self, now: float) -> None:
        """The run ends: each followed device's quiet spell, judged up to ``now``."""
        for device_id in sorted(self.models):
            model = self._following(self.world.slots.get(device_id))
            if model is not None:
                model.quiet_until(now)

    def crashed(self, device_id: str) -> None:
        model = self.models.get(device_id)
        if model is not None:
            model.crashed()

    def stamped(self, device_id: str):
        """What a non-conforming client using ``device_id``'s credential calls right
        after stamping (``World.foreign.client``): it stamps with the device's stamp,
        which moves on, before any await lets the device stamp its own writes."""
        slot = self.world.slots[device_id]

        def stamped() -> None:
            model = self._following(slot)
            if model is not None:
                model.foreign_stamp(slot.device.store.get("meta", "last", 0))

        return stamped

    # -- what the link sees -----------------------------------------------------------------

    def _model(self, device_id: str) -> DeviceModel | None:
        if self.world.foreign.running():  # a non-conforming client's request: not the device's
            return None
        return self._following(self.world.slots.get(device_id))

    def sent(self, device_id: str, request) -> None:
        model = self._model(device_id)
        if model is not None:
            clock = self.world.slots[device_id].device.clock.now_ms
            model.sent(trio.lowlevel.current_task(), request, self.world.now(), clock)

    def received(self, device_id: str, request, response) -> None:
        model = self._model(device_id)
        if model is not None:
            clock = self.world.slots[device_id].device.clock.now_ms
            task = trio.lowlevel.current_task()
            model.received(task, request, response, self.world.now(), clock)

    def lost(self, device_id: str, request) -> None:
        model = self._model(device_id)
        if model is not None:
            model.lost(trio.lowlevel.current_task(), request, self.world.now())

    # -- what the device keeps --------------------------------------------------------------

    def committed(self, slot, rows: dict) -> None:
        """One commit of ``slot``'s device store (its ``on_commit``)."""
        model = self._following(slot)
        if model is not None:
            model.committed(_changes(slot.device, rows), slot.device.clock.now_ms)

    def app_write(self, device_id: str, write) -> dict:
        """Do the application's ``write`` on the device, telling its model that the commit
        it makes is the application's (not a re-stamp the relay's refusal asked for)."""
        slot = self.world.slots[device_id]
        model = self._following(slot)
        if model is None:
            return write.apply(slot.device)
        model.app_writing = True
        try:
            record = write.apply(slot.device)
        finally:
            model.app_writing = False
        model.app_wrote(slot.device.storage_key(write.graph_id), record["id"], record["at"])
        return record

    def sync_now(self, device_id: str) -> None:
        """A user presses "sync now" on ``device_id`` (an input, as a human's decision is)."""
        model = self._following(self.world.slots.get(device_id))
        if model is not None:
            model.sync_now()

    def importing(self, slot, keyrings: dict, wipe: bool) -> None:
        model = self._following(slot)
        if model is not None:
            model.importing({sk: ring.keys for sk, ring in keyrings.items()}, wipe)

    def imported(self, slot) -> None:
        model = self._following(slot)
        if model is not None:
            model.imported()

    def heard(self, device, event) -> None:
        """An event ``device`` emitted: the end of a sync run, or one the model judges as
        it is said (a device a restart replaced is no longer followed)."""
        if event.kind != "sync.done" and event.kind not in SAID:
            return
        slot = self.world.slots.get(device.device_id)
        if slot is None or slot.device is not device:
            return
        if event.kind == "sync.done":
            self.ran(slot, event)
        else:
            self.said(slot, event)

    def ran(self, slot, event) -> None:
        """``slot``'s device ended a sync run (its ``sync.done`` event, as it happens).
        ``status.lastError`` is the device's ``last_error``: read alone, not by building
        the whole status at every run's end."""
        model = self._following(slot)
        if model is not None:
            device, task = slot.device, trio.lowlevel.current_task()
            status = device.linking, device.graph_status(event.graph).to_json()
            model.ran(event.graph, event.fields.get("error"), device.last_error, task, status)

    def said(self, slot, event) -> None:
        """``slot``'s device emitted an event the model judges as it is said (not one a
        forger using its credential caused)."""
        model = self._model(slot.device_id)
        if model is not None:
            model.said(event.kind, event.graph, event.fields, trio.lowlevel.current_task())

    def _departed(self, device_id: str, rule: str) -> None:
        """A departure in a rule the device's version declares: traced, not reported."""
        self.world.trace.emit("check", device_id, what="departure", rule=rule)
        self.world.departed()

    def _kept(self, device_id: str, finding) -> None:
        """A model's finding, kept in the world's list where it was seen (saying how to
        declare its rule when the device runs a change)."""
        text = f"{finding.rule}: {finding.detail}"
        if self.world.parties.version_of(device_id).device is not Device:
            text = f"{text} ({how_to_declare(finding.rules)})"
        self.findings.append(
            Disagreement(
                len(self.world.trace),
                text,
                (device_id,),
                finding.records,
                finding.graph,
            )
        )


def _changes(device, rows: dict) -> Changes:
    """One commit of a device's store, in the spec's nouns (docs/client.md names the
    tables): held records, the queue, refusals, cursors, keyrings, the relay's epoch,
    pins and log verification."""
    changes = Changes()
    for (table, key), value in rows.items():
        gone = value is GONE
        kind, _, sk = table.partition(":")
        if kind == "records":
            changes.held[sk, key] = None if gone else value
        elif kind == "queue":
            changes.queued[sk, key] = None if gone else value["r"]
        elif kind == "refused":
            changes.refused[sk, key] = None if gone else (value["rev"], value["reason"])
        elif table == "subs":
            changes.views[_subscription(key)] = not gone
        elif table == "cursor":
            changes.cursors[_subscription(key)] = None if gone else value
        elif table == "keyring":
            changes.keyrings[key] = {} if gone else Keyring.from_wire(value).keys
        elif table == "graphs":
            changes.followed[key] = not gone
            if not gone:
                changes.relay_epochs[value["sk"]] = value.get("latest", 0)
        elif table == "pin":
            changes.pins[key] = None if gone else Pin(value.state, value.via, value.fingerprint)
        elif table == "log":
            changes.logs[key] = None if gone else _log_view(value)
    return changes


@functools.lru_cache(maxsize=1024)
def _subscription(key: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """A subscription from its cursor key (``graph`` or ``graph|k=a,b|s=c``)."""
    graph_id, *filters = key.split("|")
    parts = dict(f.split("=", 1) for f in filters)
    return (
        graph_id,
        tuple(filter(None, parts.get("k", "").split(","))),
        tuple(filter(None, parts.get("s", "").split(","))),
    )


def _log_view(state) -> LogView:
    heads = {int(boundary): head for boundary, head in state.heads.items()}
    return LogView(state.state, state.anchored_from, heads)
