"""The relay alone against a simple model of push, pull and the log.

The model is the spec's rules written as plainly as possible: one counter per
graph, the whole seq range reserved up front, last-write-wins keeping the first
of equal revs, quotas by recount. Hypothesis drives both with the same pushes,
pulls, clock moves and restarts and compares every answer and the store.
"""

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from relay_helpers import MINUTE, Harness, op

from simkit.relay import Relay

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


class RelayMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(rate_limits={}, quota_records=QUOTA_RECORDS, quota_bytes=QUOTA_BYTES)
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
        got, cursor = [], after
        while True:
            query = {"after": str(cursor), "limit": str(limit)}
            if kinds is not None:
                query["kinds"] = kinds
            page = self.h.pull(gid, who, **query).json()
            assert len(page["ops"]) <= limit
            got += [(o["seq"], o["recordId"]) for o in page["ops"]]
            assert page["cursor"] >= cursor
            cursor = page["cursor"]
            if not page["more"]:
                break
        assert got == model.above(after, wanted)
        assert cursor == max(after, model.counter)

    @rule(key=st.sampled_from(sorted(CALLERS)), limit=st.integers(1, 5))
    def read_log(self, key, limit):
        """The log is the accepted writes in seq order, served page by page."""
        who, gid = CALLERS[key][0]
        entries, cursor, more = [], 0, True
        while more:
            query = {"after": str(cursor), "limit": str(limit)}
            page = self.h.call("GET", f"/graphs/{gid}/log", who, query=query).json()
            entries += [(e["seq"], e["recordId"], e["rev"]) for e in page["entries"]]
            cursor, more = page["cursor"], page["more"]
        log = self.model[key].log
        assert entries == log
        assert (page["head"], page["oldest"]) == ((log[-1][0], log[0][0]) if log else (0, 0))

    @rule(ms=st.integers(0, 10 * MINUTE))
    def clock_moves(self, ms):
        self.h.clock.advance(ms)

    @rule()
    def restart(self):
        """A crash and restart: the relay comes back from its snapshot."""
        self.h.relay = Relay.restore(self.h.host, self.h.clock, self.h.relay.snapshot(),
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
