"""The relay alone against a simple model of push, pull and the log.

The model is the spec's rules written as plainly as possible: one counter per
graph, the whole seq range reserved up front, last-write-wins keeping the first
of equal revs, quotas by recount. Hypothesis drives both with the same pushes,
pulls, clock moves and restarts and compares every answer and the store.

Reading pages is bounded (docs/client.md, "Paging"): a page that says ``more`` must
advance the cursor, and a read takes no more pages than its entries fill, so a relay
that never stops paging fails a test naming the rule instead of hanging it.
"""

import attrs
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)
from relay_helpers import MINUTE, Harness, op

from simkit.client.paging import Pages, PagingStalled
from simkit.relay import Relay
from tests.fuzz.paging_variants import ALL as PAGING_VARIANTS
from tests.fuzz.paging_variants import CreepingCursor

QUOTA_RECORDS, QUOTA_BYTES, SKEW = 6, 40, 5 * MINUTE
# storage key -> how each caller addresses it
CALLERS = {
    "u:alice": [(("alice", "a1"), "u"), (("alice", "a2"), "u")],
    "g:team": [(("alice", "a1"), "g:team"), (("bob", "b1"), "g:team")],
    "d:alice:bob": [(("alice", "a2"), "d:bob"), (("bob", "b1"), "d:alice")],
}


@attrs.define
class GraphModel:
    counter: int = 0
    rows: dict = attrs.Factory(dict)  # record ID -> (rev, seq, c, k)
    log: list = attrs.Factory(list)  # (seq, record ID, rev)

    def push(self, ops: list[dict], now: int) -> tuple[int, list[dict]]:
        accepted, rejected = 0, []
        for reserved, o in enumerate(ops, start=self.counter + 1):
            stored = self.rows.get(o["recordId"])
            new_rows = len(self.rows) + (stored is None)
            new_bytes = sum(len(r[2]) for r in self.rows.values()) + len(o["c"])
            new_bytes -= 0 if stored is None else len(stored[2])
            if o["rev"] > now + SKEW:
                rejected.append({"recordId": o["recordId"], "reason": "rev-too-far-ahead"})
            elif stored is not None and stored[0] >= o["rev"]:
                pass  # an LWW loser: nothing at all
            elif new_rows > QUOTA_RECORDS:
                rejected.append({"recordId": o["recordId"], "reason": "quota-records"})
            elif new_bytes > QUOTA_BYTES:
                rejected.append({"recordId": o["recordId"], "reason": "quota-bytes"})
            else:
                self.rows[o["recordId"]] = (o["rev"], reserved, o["c"], o.get("k"))
                self.log.append((reserved, o["recordId"], o["rev"]))
                accepted += 1
        self.counter += len(ops)
        return accepted, rejected

    def above(self, after: int, kinds: set | None) -> list[tuple]:
        rows = [(seq, rid) for rid, (_, seq, _, k) in self.rows.items() if seq > after
                and (kinds is None or k in kinds)]  # fmt: skip
        return sorted(rows)


ops_strategy = st.lists(
    st.fixed_dictionaries(
        {
            "recordId": st.sampled_from(["r0", "r1", "r2", "r3", "r4", "r5", "r6"]),
            "rev": st.one_of(st.integers(0, 6), st.sampled_from(["edge", "far"])),
            "c": st.text("ABC", min_size=1, max_size=12),
        },
        optional={"k": st.sampled_from(["a", "b"])},
    ),
    max_size=6,
)


def pages_for(route: str, gid: str, entries: int, limit: int) -> Pages:
    """Every page that says ``more`` is full, so ``entries`` fill at most this many."""
    return Pages(route, gid, limit=entries // limit + 1)


class RelayMachine(RuleBasedStateMachine):
    relay_class = Relay

    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(
            rate_limits={}, quota_records=QUOTA_RECORDS, quota_bytes=QUOTA_BYTES,
            relay_class=self.relay_class,
        )  # fmt: skip
        for seed, (member, device) in enumerate([("alice", "a1"), ("alice", "a2"), ("bob", "b1")]):
            self.h.register(member, device, seed)
        self.model = {key: GraphModel() for key in CALLERS}

    @rule(key=st.sampled_from(sorted(CALLERS)), caller=st.integers(0, 1), ops=ops_strategy)
    def push(self, key, caller, ops):
        who, gid = CALLERS[key][caller]
        now = self.h.clock.now
        sent = []
        for o in ops:
            rev = {"edge": now + SKEW, "far": now + SKEW + 1}.get(o["rev"], o["rev"])
            extra = {"k": o["k"]} if "k" in o else {}
            sent.append(op(o["recordId"], rev, c=o["c"], **extra))
        accepted, rejected = self.model[key].push(sent, now)
        answer = self.h.push(gid, sent, who).json()
        expected = {"accepted": accepted, "cursor": self.model[key].counter, "now": now, "epoch": 0}
        if rejected:
            expected["rejected"] = rejected
        assert answer == expected

    @rule(
        key=st.sampled_from(sorted(CALLERS)),
        caller=st.integers(0, 1),
        back=st.integers(0, 8),
        limit=st.integers(1, 4),
        kinds=st.sampled_from([None, "a", "b,a"]),
    )
    def pull_pages(self, key, caller, back, limit, kinds):
        """Pages concatenate to exactly the records above the cursor, then stop at the top."""
        who, gid = CALLERS[key][caller]
        model = self.model[key]
        after = max(0, model.counter - back)
        wanted = None if kinds is None else set(kinds.split(","))
        expected = model.above(after, wanted)
        pages = pages_for("pull", gid, len(expected), limit)
        got, cursor, more = [], after, True
        while more:
            query = {"after": str(cursor), "limit": str(limit)}
            if kinds is not None:
                query["kinds"] = kinds
            page = self.h.pull(gid, who, **query).json()
            assert len(page["ops"]) <= limit
            got += [(o["seq"], o["recordId"]) for o in page["ops"]]
            assert page["cursor"] >= cursor
            more = pages.another(cursor, page["cursor"], page["more"])
            cursor = page["cursor"]
        assert not pages.cut_short, f"more than {pages.limit} pages for {len(expected)} ops"
        assert got == expected
        assert cursor == max(after, model.counter)

    @rule(key=st.sampled_from(sorted(CALLERS)), limit=st.integers(1, 5))
    def read_log(self, key, limit):
        """The log is the accepted writes in seq order, served page by page."""
        who, gid = CALLERS[key][0]
        log = self.model[key].log
        pages = pages_for("log", gid, len(log), limit)
        entries, cursor, more = [], 0, True
        while more:
            query = {"after": str(cursor), "limit": str(limit)}
            page = self.h.call("GET", f"/graphs/{gid}/log", who, query=query).json()
            entries += [(e["seq"], e["recordId"], e["rev"]) for e in page["entries"]]
            more = pages.another(cursor, page["cursor"], page["more"])
            cursor = page["cursor"]
        assert not pages.cut_short, f"more than {pages.limit} pages for {len(log)} entries"
        assert entries == log
        assert (page["head"], page["oldest"]) == ((log[-1][0], log[0][0]) if log else (0, 0))

    @rule(ms=st.integers(0, 10 * MINUTE))
    def clock_moves(self, ms):
        self.h.clock.advance(ms)

    @rule()
    def restart(self):
        """A crash and restart: the relay comes back from its snapshot."""
        self.h.relay = self.relay_class.restore(self.h.host, self.h.clock, self.h.relay.snapshot(),
                                     rate_limits={}, quota_records=QUOTA_RECORDS,
                                     quota_bytes=QUOTA_BYTES)  # fmt: skip

    @invariant()
    def store_matches_model(self):
        for key, model in self.model.items():
            graph = self.h.relay.state.graphs.get(key)
            if graph is None:
                assert model.counter == 0
                continue
            seqs = [entry.seq for entry in graph.log]
            assert seqs == sorted(set(seqs)), "seqs strictly increase"
            assert [(e.seq, e.record_id, e.rev) for e in graph.log] == model.log
            rows = {rid: (r.rev, r.seq, r.c, r.k) for rid, r in graph.records.items()}
            assert rows == model.rows, "the stored row is the LWW winner"
            assert graph.seq == model.counter
            assert graph.record_bytes == sum(len(r.c) for r in graph.records.values())
            assert graph.blob_bytes == sum(len(b.data) for b in graph.blobs.values())


TestRelayModel = RelayMachine.TestCase


# -- a relay that never stops paging fails these tests promptly, never hangs them ------


def _against(relay_class) -> type[RelayMachine]:
    """The model machine against another relay class."""
    name = f"RelayMachine[{relay_class.__name__}]"
    return type(name, (RelayMachine,), {"relay_class": relay_class})


def _machine(relay_class) -> RelayMachine:
    """One machine against ``relay_class`` holding three ops in g:team."""
    machine = _against(relay_class)()
    ops = [{"recordId": f"r{i}", "rev": 1, "c": "A"} for i in range(3)]
    machine.push(key="g:team", caller=0, ops=ops)
    return machine


@pytest.mark.parametrize("variant", PAGING_VARIANTS, ids=lambda v: v.name)
@pytest.mark.parametrize("route", ["pull", "log"])
def test_the_model_stops_at_a_page_that_does_not_advance_the_cursor(variant, route):
    machine = _machine(variant.relay)
    with pytest.raises(
        PagingStalled,
        match=f"{route} g:team: the relay returned a page that did not advance the cursor",
    ):
        if route == "pull":
            machine.pull_pages(key="g:team", caller=0, back=8, limit=1, kinds=None)
        else:
            machine.read_log(key="g:team", limit=1)


def test_the_model_stops_a_pull_after_the_pages_its_ops_fill():
    machine = _machine(CreepingCursor)
    with pytest.raises(AssertionError, match="more than 4 pages for 3 ops"):
        machine.pull_pages(key="g:team", caller=0, back=8, limit=1, kinds=None)


@pytest.mark.parametrize("variant", PAGING_VARIANTS, ids=lambda v: v.name)
def test_the_model_machine_fails_promptly_on_a_relay_that_never_stops_paging(variant):
    """The state machine itself, as Hypothesis runs it (shrinking aside): it ends."""
    quick = settings(
        max_examples=100, database=None, derandomize=True, deadline=None,
        phases=[Phase.explicit, Phase.generate], report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )  # fmt: skip
    with pytest.raises((PagingStalled, AssertionError)):
        run_state_machine_as_test(_against(variant.relay), settings=quick)
