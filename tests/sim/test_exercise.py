"""A declared change is followed, counted and judged by its consequences; an undeclared
one is counted by the methods it overrides; a change that never made a difference gives
no verdict (docs/variants.md, "How often the change ran")."""

import json
from collections import Counter

from simkit.fuzz.actions import Link, Revoke
from simkit.fuzz.params import WorldParams
from simkit.fuzz.reproducer import Reproducer, replay
from simkit.model.requests import jwk
from simkit.relay import Relay, Request, StaticHost
from simkit.relay.events import Poke
from simkit.sim.exercise import NEVER, Exercise, counted, counting, overridden, running_class
from simkit.sim.oracles import RelayOracle
from simkit.sim.trace import Trace
from simkit.sim.variant import Variant

T0 = 1_700_000_000_000
ALICE = {"x-member": "alice", "x-device": "a1"}
AHEAD = 3_600_000  # an hour ahead of the relay's clock: push rule 1 refuses it


class AcceptsAnyRev(Relay):
    def _too_far_ahead(self, rev, now):
        return False


def requests(rev_ahead: int):
    body = {"pubJwk": jwk("a1", 0, "pub"), "sigJwk": jwk("a1", 0, "sig")}
    ops = [{"recordId": "r1", "rev": T0 + rev_ahead, "n": "AAAA", "c": "QUJD"}]
    yield Request("PUT", "/devices/a1", None, ALICE, json.dumps(body).encode())
    yield Request("POST", "/graphs/u/push", None, ALICE, json.dumps({"ops": ops}).encode())
    yield Request("GET", "/graphs/u/pull", None, ALICE)
    yield Request("GET", "/graphs/u/log", None, ALICE)


def oracle_of(relay_class: type[Relay], changes=()) -> tuple[Relay, RelayOracle]:
    host = StaticHost(["alice"])
    relay = relay_class(host, lambda: T0)
    variant = Variant("v", "a change", relay=relay_class, changes=changes)
    oracle = RelayOracle(relay, host, {}, Trace(lambda: 0.0), variant)
    relay.on_event = lambda event: oracle.poked(event.graph) if isinstance(event, Poke) else None
    return relay, oracle


def test_the_relay_model_follows_a_declared_change_and_judges_what_comes_after_by_it():
    """Push rule 1 declared: the far-ahead op the relay accepted is one departure; the
    model takes the relay's store as what happened, so the pull and the log that serve
    that op agree with it (before issue 36: every later answer on the graph differed)."""
    relay, oracle = oracle_of(AcceptsAnyRev, changes=("push rule 1",))
    for request in requests(AHEAD):
        oracle.answer(relay, request)
    assert oracle.findings == []
    assert oracle.departures == Counter({"push rule 1": 1})
    assert oracle.store_findings(relay) == []


def test_an_undeclared_departure_is_still_a_finding():
    relay, oracle = oracle_of(AcceptsAnyRev)
    for request in requests(AHEAD):
        oracle.answer(relay, request)
    assert oracle.departures == Counter()
    assert "push rule 1" in oracle.findings[0].detail


def test_a_departure_only_in_what_a_write_stored_is_named_after_that_write_at_once():
    """A grant that overwrites answers as a grant must: only the store shows it. The
    write's outcome is judged at once and named after the write's rule, so a change
    that declares that rule is followed, not reported at the next read of the keys."""

    class Overwrites(Relay):
        def _grant_wrap(self, tx, graph, epoch, device_id, wrapped):
            tx.set(graph.wraps.setdefault(epoch, {}), device_id, wrapped)
            return True

    relay, oracle = oracle_of(Overwrites, changes=("keys: grant",))
    body = {"pubJwk": jwk("a1", 0, "pub"), "sigJwk": jwk("a1", 0, "sig")}
    wrap = {"epoch": 1, "wraps": [{"deviceId": "a1", "wrapped": "QUJD"}]}
    again = {"epoch": 1, "wraps": [{"deviceId": "a1", "wrapped": "REVG"}]}
    for path, payload in (
        ("/devices/a1", body),
        ("/graphs/u/keys", wrap),
        ("/graphs/u/keys", again),
    ):
        method = "PUT" if path.startswith("/devices") else "POST"
        oracle.answer(relay, Request(method, path, None, ALICE, json.dumps(payload).encode()))
    oracle.answer(relay, Request("GET", "/graphs/u/keys", None, ALICE))
    assert oracle.findings == []
    assert oracle.departures == Counter({"keys: grant": 1})


def test_a_store_the_model_cannot_read_ends_the_judging_of_that_graph_only():
    relay, oracle = oracle_of(AcceptsAnyRev, changes=("push rule 1",))
    register, push, pull, log = requests(AHEAD)
    oracle.answer(relay, register)
    read = oracle._store
    oracle._store = lambda relay: ({"key": "u:alice"}, None)  # a graph without its parts
    oracle.answer(relay, push)
    oracle._store = read
    assert list(oracle.unjudged) == ["u:alice"] and "cannot read" in oracle.unjudged["u:alice"]
    relay.state.graphs["u:alice"].seq = 99  # drift in the graph it stopped judging: silent
    for request in (pull, log):
        oracle.answer(relay, request)
    assert oracle.findings == [] and oracle.store_findings(relay) == []
    other = Request("GET", "/devices", None, ALICE)  # the rest is still judged
    oracle.check.model.devices.clear()
    oracle.answer(relay, other)
    assert oracle.findings, "the devices route is still judged"


def test_overridden_methods_are_counted_in_the_thread_that_runs_the_world():
    class Twice(Relay):
        def _too_far_ahead(self, rev, now):
            return super()._too_far_ahead(rev, now)

        @classmethod
        def made(cls):
            return cls

    assert set(overridden(Twice, Relay)) == {"_too_far_ahead", "made"}
    assert counted(Relay, Relay) is Relay  # the protocol as specified counts nothing
    cls = counted(Twice, Relay)
    relay = cls(StaticHost(["alice"]), lambda: T0)
    assert running_class(relay) is Twice and isinstance(relay, Twice)
    calls: Counter = Counter()
    relay._too_far_ahead(1, 0)  # outside a world: not counted
    with counting(calls):
        relay._too_far_ahead(1, 0)
        cls.made()
    name = Twice.__qualname__
    assert calls == Counter({f"{name}._too_far_ahead": 1, f"{name}.made": 1})


def test_a_change_is_exercised_by_a_departure_if_it_declares_rules_else_by_a_call():
    declared = Exercise.of_world(("push rule 1",), True, Counter(), Counter({"A.m": 3}), {}, 0)
    assert declared.verdict == NEVER  # ran, but never departed: it never mattered
    departed = Exercise.of_world(("push rule 1",), True, Counter({"push rule 1": 1}), {}, {}, 0)
    assert departed.verdict is None
    assert Exercise.of_world((), True, Counter(), Counter({"A.m": 1}), {}, 0).verdict is None
    assert Exercise.of_world((), True, Counter(), Counter(), {}, 0).verdict == NEVER
    assert Exercise.of_world((), False, Counter(), Counter(), {}, 0).verdict is None  # honest
    total = Exercise()
    for world in (departed, departed, declared):
        total.merge(world)
    assert (total.worlds, total.departures["push rule 1"], total.examples["push rule 1"]) == (
        3, 2, 2,
    )  # fmt: skip
    assert Exercise.from_json(total.to_json()) == total


def test_a_rotation_is_owed_by_what_the_revoked_device_held_not_by_the_relays_flag():
    """A relay that forgets to flag rotationRequired: nobody rotates, and the revoked
    device's key still opens what is written next. rotation-owed judges it from the
    wraps the device held and the keys it kept; the same steps hold on the honest relay."""
    steps = (Link(member="bob", device="b6"), Revoke(by="b6", device="b1"))
    repro = Reproducer("honest", WorldParams(seed=11), steps,
                       variant="simkit.bench.changes:no_rotation_owed")  # fmt: skip
    broken = replay(repro)
    assert {v.invariant for v in broken.violations} == {"rotation-owed"}
    exercise = broken.world.exercise()
    assert exercise.departures["devices: revoke"] >= 1 and exercise.verdict is None
    honest = replay(Reproducer("honest", WorldParams(seed=11), steps))
    assert honest.violations == () and honest.world.exercise().changed is False
