"""Push: the four per-op rules in order, seqs, limits and quotas (spec: Records)."""

import pytest
from relay_helpers import MINUTE, T0, Harness, error, op, state_bytes


def log_of(h, gid="u", who=("alice", "a1")):
    entries = h.call("GET", f"/graphs/{gid}/log", who).json()["entries"]
    return [(e["seq"], e["recordId"], e["rev"]) for e in entries]


def test_push_accepts_ops_and_answers_accepted_cursor_now_epoch(h):
    response = h.push("u", [op("r1", 1), op("r2", 2)])
    assert response.status == 200
    assert response.json() == {"accepted": 2, "cursor": 2, "now": T0, "epoch": 0}


def test_push_rule1_rev_too_far_ahead_rejected_and_continues(h):
    limit = T0 + 5 * MINUTE
    response = h.push("u", [op("r1", limit + 1), op("r2", limit), op("r3", 3)])
    assert response.json() == {
        "accepted": 2,
        "cursor": 3,
        "now": T0,
        "epoch": 0,
        "rejected": [{"recordId": "r1", "reason": "rev-too-far-ahead"}],
    }
    assert log_of(h) == [(2, "r2", limit), (3, "r3", 3)]


def test_push_rule2_stored_rev_at_least_op_rev_skips_silently(h):
    h.push("u", [op("r1", 5, c="Zmlyc3Q")])
    response = h.push("u", [op("r1", 5, c="c2Vjb25k"), op("r1", 4), op("r2", 1)])
    assert response.json() == {"accepted": 1, "cursor": 4, "now": T0, "epoch": 0}  # no rejected
    assert log_of(h) == [(1, "r1", 5), (4, "r2", 1)]  # the losers are not logged
    assert h.relay.state.graphs["u:alice"].records["r1"].c == "Zmlyc3Q"  # first of equal revs


def test_push_rule3_quota_records_rejected_and_continues():
    h = Harness(quota_records=2)
    h.register("alice", "a1")
    response = h.push("u", [op("r1", 1), op("r2", 1), op("r3", 1), op("r1", 2)])
    assert response.json()["accepted"] == 3  # r1's update adds no record
    assert response.json()["rejected"] == [{"recordId": "r3", "reason": "quota-records"}]


def test_push_rule3_quota_bytes_rejected_and_continues():
    h = Harness(quota_bytes=10)
    h.register("alice", "a1")
    response = h.push("u", [op("r1", 1, c="A" * 6), op("r2", 1, c="B" * 5), op("r1", 2, c="C")])
    assert response.json()["rejected"] == [{"recordId": "r2", "reason": "quota-bytes"}]
    assert h.push("u", [op("r2", 1, c="B" * 9)]).json()["accepted"] == 1  # r1 shrank to 1 byte
    assert h.relay.state.graphs["u:alice"].record_bytes == 10


def test_push_rule_order_skew_before_lww_before_quota():
    h = Harness(quota_records=1)
    h.register("alice", "a1")
    h.push("u", [op("r1", 10)])
    far = T0 + 5 * MINUTE + 1
    response = h.push("u", [op("r1", far), op("r1", 3), op("r2", far), op("r2", 1)])
    assert response.json()["rejected"] == [
        {"recordId": "r1", "reason": "rev-too-far-ahead"},  # push rule 1 before push rule 2
        {"recordId": "r2", "reason": "rev-too-far-ahead"},  # push rule 1 before push rule 3
        {"recordId": "r2", "reason": "quota-records"},
    ]


def test_push_rule4_upserts_and_logs_in_the_same_transaction(h):
    h.push("u", [op("r1", 1), op("r1", 2, c="bmV3")])
    assert log_of(h) == [(1, "r1", 1), (2, "r1", 2)]
    row = h.relay.state.graphs["u:alice"].records["r1"]
    assert (row.rev, row.seq, row.c) == (2, 2, "bmV3")


def test_push_seq_range_is_allocated_up_front_so_refused_ops_spend_numbers(h):
    far = T0 + 10 * MINUTE
    h.push("u", [op("r1", 5)])
    response = h.push("u", [op("r1", 4), op("r2", far), op("r3", 1)])
    assert response.json()["cursor"] == 4
    assert log_of(h) == [(1, "r1", 5), (4, "r3", 1)]  # 2 and 3 were spent
    assert h.push("u", [op("r4", 1)]).json()["cursor"] == 5


def test_push_seq_is_per_graph(h):
    h.push("u", [op("r1", 1), op("r2", 1)])
    assert h.push("g:team", [op("r1", 1)]).json()["cursor"] == 1


def test_push_empty_ops_is_accepted_and_changes_nothing_but_the_graphs_existence(h):
    assert h.push("u", []).json() == {"accepted": 0, "cursor": 0, "now": T0, "epoch": 0}


def test_push_reports_the_graphs_latest_epoch(h):
    h.put_keys("u", 1, ["a1", "a2"])
    assert h.push("u", [op("r1", 1)]).json()["epoch"] == 1


def test_push_of_more_than_200_ops_is_400_invalid(h):
    response = h.push("u", [op(f"r{i}", 1) for i in range(201)])
    assert (response.status, error(response)) == (400, "invalid")
    assert h.push("u", [op(f"r{i}", 1) for i in range(200)]).json()["accepted"] == 200


def test_push_ciphertext_over_700000_chars_is_400_invalid(h):
    assert error(h.push("u", [op("r1", 1, c="A" * 700_001)])) == "invalid"
    assert h.push("u", [op("r1", 1, c="A" * 700_000)]).json()["accepted"] == 1


def test_push_body_over_8_mib_is_413(h):
    ops = [op(f"r{i}", 1, c="A" * 700_000) for i in range(12)]
    response = h.push("u", ops)
    assert response.status == 413
    assert error(response) == "too-large"
    assert h.push("u", ops[:11]).json()["accepted"] == 11  # 7.7 MB is fine


BAD_OPS = {
    "missing-n": {"recordId": "r", "rev": 1, "c": "AA"},
    "unsafe-recordId": op("r:1", 1),
    "rev-string": op("r", "1"),
    "rev-bool": op("r", True),
    "rev-negative": op("r", -1),
    "rev-fraction": op("r", 1.5),
    "rev-above-safe-integer": op("r", 2**53),
    "rev-null": op("r", None),
    "e-negative": op("r", 1, e=-1),
    "e-string": op("r", 1, e="1"),
    "c-not-b64url": op("r", 1, c="a+b"),
    "c-empty": op("r", 1, c=""),
    "n-too-long": op("r", 1) | {"n": "A" * 65},
    "k-with-comma": op("r", 1, k="a,b"),
    "k-with-space": op("r", 1, k="a b"),
    "k-null": op("r", 1, k=None),
    "sh-too-long": op("r", 1, sh="s" * 129),
    "op-not-object": "r1",
}


@pytest.mark.parametrize("bad", BAD_OPS.values(), ids=BAD_OPS)
def test_push_op_schema_is_400_invalid_and_nothing_lands(h, bad):
    before = state_bytes(h.relay)
    response = h.push("u", [op("ok", 1), bad])
    assert (response.status, error(response)) == (400, "invalid")
    assert response.json()["message"].startswith("ops[1]")
    assert state_bytes(h.relay) == before


def test_versioning_3_push_drops_members_it_does_not_know(h):
    """A newer client's op and body members are dropped, never stored or served."""
    body = {"ops": [op("r1", 1, futureField=1)], "x": 1}
    assert h.call("POST", "/graphs/u/push", json_body=body).json()["accepted"] == 1
    assert "futureField" not in h.pull("u").json()["ops"][0]


@pytest.mark.parametrize("body", [{}, {"ops": {}}, []])
def test_push_body_schema_is_400_invalid(h, body):
    assert error(h.call("POST", "/graphs/u/push", json_body=body)) == "invalid"


def test_push_rev_written_as_an_integral_float_is_that_integer(h):
    body = b'{"ops":[{"recordId":"r1","rev":1e3,"n":"AA","c":"AA"}]}'
    assert h.call("POST", "/graphs/u/push", body=body).json()["accepted"] == 1
    assert h.relay.state.graphs["u:alice"].records["r1"].rev == 1000


def test_push_k_and_sh_are_stored_and_served_as_given(h):
    h.push("u", [op("r1", 1, e=2, k="skm.checkpoint", sh="Xy-9"), op("r2", 1)])
    ops = h.pull("u").json()["ops"]
    assert ops[0] == {"recordId": "r1", "rev": 1, "e": 2, "n": op("r1", 1)["n"], "c": "Y2lwaGVy",
                      "k": "skm.checkpoint", "sh": "Xy-9", "seq": 1}  # fmt: skip
    assert set(ops[1]) == {"recordId", "rev", "n", "c", "seq"}


def test_push_quotas_are_incremental_never_a_scan(h):
    class NoScan(dict):
        def _scan(self, *_):
            raise AssertionError("push scanned the graph's rows")

        __iter__ = values = items = keys = _scan

    h.push("u", [op("r1", 1, c="AAAA"), op("r2", 1)])
    graph = h.relay.state.graphs["u:alice"]
    graph.records = NoScan(graph.records)
    assert h.push("u", [op("r1", 2, c="AA"), op("r3", 1)]).json()["accepted"] == 2
    assert graph.record_bytes == len("AA") + 2 * len(op("r", 1)["c"])


def test_push_needs_write_on_a_group_403_not_permitted(h):
    h.host.set_capabilities("bob", "team", ["rotate"])
    response = h.push("g:team", [op("r1", 1)], ("bob", "b1"))
    assert response.status == 403
    assert response.json() == {
        "error": "not-permitted",
        "message": "write is needed for this request",
        "need": "write",
    }


def test_push_pokes_its_graph_once(h):
    h.push("g:team", [op("r1", 1), op("r2", 1)])
    assert [(e.kind, e.graph) for e in h.events] == [("poke", "g:team")]


def test_push_records_the_pusher_for_the_roster_only_on_an_accepted_write(h):
    h.push("g:team", [op("r1", T0 + 6 * MINUTE)], ("bob", "b1"))
    assert h.relay.state.graphs["g:team"].pushers == []
    h.push("g:team", [op("r1", 1)], ("bob", "b1"))
    assert h.relay.state.graphs["g:team"].pushers == ["bob"]
