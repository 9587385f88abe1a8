"""Protocol variants: each rule is one overridable method (docs/relay.md, Variants).

Later issues fuzz variants like these; here each override point is shown to
change exactly its rule, so a variant is a three-line subclass.
"""

from relay_helpers import Clock, Harness, op

from simkit.relay import Relay, StaticHost
from simkit.relay.state import LogEntry


def harness_for(relay_class: type[Relay]) -> Harness:
    h = Harness()
    h.relay = relay_class(h.host, h.clock, on_event=h.events.append)
    h.register("alice", "a1")
    h.register("bob", "b1", 3)
    return h


def log_of(h) -> list[tuple]:
    return [(e["seq"], e["recordId"], e["rev"])
            for e in h.call("GET", "/graphs/u/log").json()["entries"]]  # fmt: skip


def test_variant_keep_the_last_of_two_equal_revs():
    class LastOfEquals(Relay):
        def _wins(self, stored_rev, op_rev):
            return op_rev >= stored_rev

    h = harness_for(LastOfEquals)
    h.push("u", [op("r1", 5, c="Zmlyc3Q"), op("r1", 5, c="bGFzdA")])
    assert h.relay.state.graphs["u:alice"].records["r1"].c == "bGFzdA"


def test_variant_seq_as_max_seq_plus_1():
    class MaxPlusOne(Relay):
        def _next_seq(self, graph, reserved):
            return (graph.log[-1].seq if graph.log else 0) + 1

    h = harness_for(MaxPlusOne)
    h.push("u", [op("r1", 5), op("r1", 4), op("r2", 1)])
    assert log_of(h) == [(1, "r1", 5), (2, "r2", 1)]  # the reference gives seq 3 to r2


def test_variant_log_an_lww_loser():
    class LogsLosers(Relay):
        def _lose(self, call, graph, op, reserved):
            call.tx.append(graph.log, LogEntry(reserved, op.record_id, op.rev))

    h = harness_for(LogsLosers)
    h.push("u", [op("r1", 5), op("r1", 4)])
    assert log_of(h) == [(1, "r1", 5), (2, "r1", 4)]
    assert [o["seq"] for o in h.pull("u").json()["ops"]] == [1]


def test_variant_overwrite_an_existing_wrap_on_a_grant():
    class Overwrites(Relay):
        def _grant_wrap(self, tx, graph, epoch, device_id, wrapped):
            tx.set(graph.wraps.setdefault(epoch, {}), device_id, wrapped)
            return True

    h = harness_for(Overwrites)
    h.put_keys("u", 1, ["a1"])
    h.call("POST", "/graphs/u/keys", json_body={"epoch": 1, "wraps": [
        {"deviceId": "a1", "wrapped": "replaced"}]})  # fmt: skip
    assert h.call("GET", "/graphs/u/keys").json()["wraps"] == [{"epoch": 1, "wrapped": "replaced"}]


def test_variant_classes_restore_like_the_reference():
    class LastOfEquals(Relay):
        def _wins(self, stored_rev, op_rev):
            return op_rev >= stored_rev

    relay = LastOfEquals.restore(StaticHost([]), Clock(), Relay(StaticHost([]), Clock()).snapshot())
    assert isinstance(relay, LastOfEquals)
