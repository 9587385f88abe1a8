"""Pull (pages, filters, cursors) and the append-only log (spec: Records)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from relay_helpers import T0, Harness, error, op, state_bytes

from simkit.protocol.http import json_list_response, json_response
from simkit.relay.state import Record


def ids(response):
    return [(o["recordId"], o["seq"]) for o in response.json()["ops"]]


def test_pull_returns_ops_above_after_in_ascending_seq(h):
    h.push("u", [op("r1", 1), op("r2", 1), op("r3", 1)])
    response = h.pull("u", after="1")
    assert ids(response) == [("r2", 2), ("r3", 3)]
    assert response.json() | {"ops": None} == {"ops": None, "cursor": 3, "more": False, "epoch": 0}


def test_pull_defaults_are_after_0_and_limit_500(h):
    for start in range(0, 600, 200):
        h.push("u", [op(f"r{i}", 1) for i in range(start, start + 200)])
    body = h.pull("u").json()
    assert (len(body["ops"]), body["ops"][0]["seq"], body["more"], body["cursor"]) == (
        500,
        1,
        True,
        500,
    )


def test_pull_pages_with_limit_more_and_cursor(h):
    h.push("u", [op(f"r{i}", 1) for i in range(5)])
    first = h.pull("u", limit="2").json()
    assert ([o["seq"] for o in first["ops"]], first["more"], first["cursor"]) == ([1, 2], True, 2)
    last = h.pull("u", after="4", limit="2").json()
    assert ([o["seq"] for o in last["ops"]], last["more"], last["cursor"]) == ([5], False, 5)


def test_pull_limit_above_500_is_served_as_500(h):
    for start in range(0, 600, 200):
        h.push("u", [op(f"r{i}", 1) for i in range(start, start + 200)])
    assert len(h.pull("u", limit="100000").json()["ops"]) == 500


@pytest.mark.parametrize(
    "query",
    [{"limit": "0"}, {"limit": "-1"}, {"limit": "01"}, {"limit": "1.5"}, {"limit": ""},
     {"after": "x"}, {"after": "+1"}, {"after": "9007199254740992"}, {"kinds": ""},
     {"kinds": "a,,b"}, {"shards": "a b"}, {"kinds": "a,"}],
)  # fmt: skip
def test_pull_malformed_query_is_400_invalid(h, query):
    assert error(h.call("GET", "/graphs/u/pull", query=query)) == "invalid"


def test_pull_serves_only_the_latest_version_of_each_record(h):
    h.push("u", [op("r1", 1), op("r2", 1), op("r1", 2)])
    assert ids(h.pull("u")) == [("r2", 2), ("r1", 3)]
    assert ids(h.pull("u", after="2")) == [("r1", 3)]


def test_pull_filters_on_kinds_and_shards(h):
    h.push("u", [op("r1", 1, k="a", sh="s1"), op("r2", 1, k="b", sh="s1"),
                 op("r3", 1, k="a", sh="s2"), op("r4", 1)])  # fmt: skip
    assert ids(h.pull("u", kinds="a")) == [("r1", 1), ("r3", 3)]
    assert ids(h.pull("u", kinds="b,a")) == [("r1", 1), ("r2", 2), ("r3", 3)]
    assert ids(h.pull("u", shards="s1")) == [("r1", 1), ("r2", 2)]
    assert ids(h.pull("u", kinds="a", shards="s2")) == [("r3", 3)]


def test_pull_filtered_pull_that_exhausts_matches_moves_cursor_to_high_water_mark(h):
    h.push("u", [op("r1", 1, k="a"), op("r2", 1, k="b"), op("r3", 1, k="b")])
    body = h.pull("u", kinds="a").json()
    assert (ids(h.pull("u", kinds="a")), body["cursor"], body["more"]) == ([("r1", 1)], 3, False)
    assert h.pull("u", kinds="zzz").json()["cursor"] == 3


def test_pull_filtered_pull_with_more_matches_stops_at_the_last_match(h):
    h.push("u", [op("r1", 1, k="a"), op("r2", 1, k="b"), op("r3", 1, k="a")])
    body = h.pull("u", kinds="a", limit="1").json()
    assert (body["cursor"], body["more"]) == (1, True)


def test_pull_exhausted_cursor_covers_spent_and_superseded_seqs(h):
    h.push("u", [op("r1", 1), op("r2", 1), op("r2", 2), op("r3", T0 * 2)])  # seq 4 is refused
    body = h.pull("u").json()
    assert (ids(h.pull("u")), body["cursor"]) == ([("r1", 1), ("r2", 3)], 4)


def test_pull_cursor_never_moves_below_after(h):
    h.push("u", [op("r1", 1)])
    assert h.pull("u", after="50").json() == {"ops": [], "cursor": 50, "more": False, "epoch": 0}


def test_pull_reports_the_graphs_epoch(h):
    h.put_keys("u", 1, ["a1", "a2"])
    assert h.pull("u").json()["epoch"] == 1


def test_pull_of_a_graph_never_written_creates_nothing(h):
    before = state_bytes(h.relay)
    assert h.pull("g:team").json() == {"ops": [], "cursor": 0, "more": False, "epoch": 0}
    assert h.call("GET", "/graphs/g:team/log").status == 200
    assert h.call("GET", "/graphs/g:team/keys").status == 200
    assert state_bytes(h.relay) == before


# --- log ---------------------------------------------------------------------------


def log(h, **query):
    return h.call("GET", "/graphs/u/log", query=query).json()


def test_log_is_one_entry_per_accepted_write_never_a_loser_or_refused_write(h):
    h.push("u", [op("r1", 5), op("r1", 5), op("r1", 4), op("r2", T0 * 2), op("r1", 6)])
    assert log(h) == {
        "entries": [{"seq": 1, "recordId": "r1", "rev": 5}, {"seq": 5, "recordId": "r1", "rev": 6}],
        "cursor": 5,
        "more": False,
        "head": 5,
        "oldest": 1,
    }


def test_log_of_an_empty_graph_has_head_and_oldest_0(h):
    assert log(h) == {"entries": [], "cursor": 0, "more": False, "head": 0, "oldest": 0}


def test_log_is_never_filtered_even_when_records_carry_kinds(h):
    h.push("u", [op("r1", 1, k="a"), op("r2", 1, k="b")])
    assert [e["recordId"] for e in log(h)["entries"]] == ["r1", "r2"]
    assert error(h.call("GET", "/graphs/u/log", query={"kinds": "a"})) == "invalid"


def test_log_keeps_superseded_entries_and_is_never_rewritten(h):
    h.push("u", [op("r1", 1), op("r2", 1)])
    first = log(h)["entries"]
    h.push("u", [op("r1", 2), op("r2", 2)])
    entries = log(h)["entries"]
    assert entries[:2] == first
    assert [(e["seq"], e["rev"]) for e in entries] == [(1, 1), (2, 1), (3, 2), (4, 2)]


def test_log_pages_with_after_limit_more_and_cursor(h):
    h.push("u", [op(f"r{i}", 1) for i in range(5)])
    page = log(h, after="1", limit="2")
    assert ([e["seq"] for e in page["entries"]], page["more"], page["cursor"]) == ([2, 3], True, 3)
    assert (page["head"], page["oldest"]) == (5, 1)
    tail = log(h, after="3", limit="5")
    assert ([e["seq"] for e in tail["entries"]], tail["more"], tail["cursor"]) == ([4, 5], False, 5)


def test_log_limit_is_capped_by_max_pull_limit():
    h = Harness(max_pull_limit=3)
    h.register("alice", "a1")
    h.push("u", [op(f"r{i}", 1) for i in range(5)])
    assert len(h.call("GET", "/graphs/u/log", query={"limit": "10"}).json()["entries"]) == 3
    assert len(h.pull("u").json()["ops"]) == 3


def test_log_pruned_by_the_relay_keeps_the_newest_entries_with_oldest_the_lowest_kept():
    """Log verification status: 'log pruned past the device'; Log rules: '`oldest` is the
    lowest' seq in the log. A relay that keeps the newest entries (``log_keep``) answers
    only them, while a pull still serves every record, however old its entry."""
    h = Harness(log_keep=2)
    h.register("alice", "a1")
    h.push("u", [op(f"r{i}", 1) for i in range(4)])
    h.push("u", [op("r0", 2)])
    whole = log(h)
    assert [e["seq"] for e in whole["entries"]] == [4, 5]
    assert (whole["oldest"], whole["head"], whole["cursor"], whole["more"]) == (4, 5, 5, False)
    assert [e["seq"] for e in log(h, after="4")["entries"]] == [5]
    assert ids(h.pull("u")) == [("r1", 2), ("r2", 3), ("r3", 4), ("r0", 5)]


_ROW = st.builds(
    Record,
    st.text(min_size=1, max_size=8),
    st.integers(0, 2**53),
    st.text(max_size=12),
    st.text(max_size=24),
    st.none() | st.integers(1, 9),
    st.none() | st.text(max_size=6),
    st.none() | st.text(max_size=6),
    st.integers(1, 2**40),
)


@given(st.lists(_ROW, max_size=5), st.dictionaries(st.text(max_size=6), st.integers(), max_size=3))
def test_pages_of_rows_encoded_once_are_byte_identical_to_encoding_the_whole_answer(rows, rest):
    rest = {k: v for k, v in rest.items() if k != "ops"}
    whole = json_response(200, {"ops": [row.wire() for row in rows], **rest})
    for _ in range(2):  # the second page comes from each row's kept encoding
        page = json_list_response(200, "ops", [row.wire_text() for row in rows], rest)
        assert page == whole


def test_a_rows_kept_encoding_changes_neither_equality_nor_snapshots(h):
    h.push("u", [op("r1", 1), op("r2", 1)])
    before = state_bytes(h.relay)
    h.pull("u")  # every row served, so every row now keeps its encoding
    assert state_bytes(h.relay) == before
    rows = h.relay.state.graphs["u:alice"].records
    assert rows["r1"] == Record.from_wire(rows["r1"].wire()) and "_text" not in repr(rows["r1"])
