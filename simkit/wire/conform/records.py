"""Records: push with its four per-op rules and seq reservation, pull, the log
(spec: Endpoints, Records). Each check writes to a pairwise graph of its own."""

from simkit.wire.conform.check import Skipped, check, expect
from simkit.wire.conform.context import Context, Who, op

SKEW_MS = 5 * 60_000
MARGIN_MS = 60_000  # how far from the skew limit a rev stays when the clock runs on its own
MAX_QUOTA_TO_REACH = 5_000  # records a quota check will push to reach a quota


def _bob(ctx: Context) -> tuple[Who, str]:
    bob = ctx.member("bob", "b1")
    return bob, ctx.fresh_pair(bob)


def _seqs(ctx: Context, who: Who, gid: str) -> dict[str, int]:
    return {o["recordId"]: o["seq"] for o in ctx.pull_all(who, gid)}


def _rejected(answer: dict) -> list[dict]:
    rejected = answer.get("rejected", [])
    expect(isinstance(rejected, list), f"rejected is not an array: {rejected!r}")
    return rejected


def _names(entry: object, record_id: str, reason: str | None = None) -> bool:
    """A ``rejected`` entry names the record (and the reason); its fields are not shown."""
    values = entry.values() if isinstance(entry, dict) else ()
    return record_id in values and (reason is None or reason in values)


@check(238, "`{accepted, cursor, now, epoch, rejected?}`")
def push_answers_accepted_cursor_and_now(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    answer = ctx.push(bob, gid, [op("r1", 1)]).expect(200)
    for name in ("accepted", "cursor", "now"):
        answer.field(name)
    epoch = answer.json().get("epoch", 0)  # optional on the wire (spec line 253)
    expect(epoch == 0, f"a graph without keys has epoch 0, got {epoch!r}")
    expect("rejected" not in answer.json() or answer.field("rejected") == [],
           f"nothing was rejected, yet: {answer.show()}")  # fmt: skip


@check(244, "reject the op with reason `rev-too-far-ahead` and continue")
def push_rule_1_rev_too_far_ahead_is_rejected_and_the_push_continues(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    now = ctx.now(bob, gid)
    ahead, fine = now + SKEW_MS + MARGIN_MS, now + SKEW_MS - MARGIN_MS
    answer = ctx.pushed(bob, gid, [op("far", ahead), op("near", fine)])
    rejected = _rejected(answer)
    expect(
        len(rejected) == 1 and _names(rejected[0], "far", "rev-too-far-ahead"),
        f"expected one rejection naming 'far' and 'rev-too-far-ahead', got {rejected}",
    )
    expect(set(_seqs(ctx, bob, gid)) == {"near"}, "only the op within the skew may land")


@check(454, "how far ahead of the relay's clock a rev may be", needs=("clock",))
def push_rule_1_limit_is_exactly_five_minutes_ahead(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    now = ctx.now(bob, gid)
    answer = ctx.pushed(bob, gid, [op("edge", now + SKEW_MS), op("over", now + SKEW_MS + 1)])
    rejected = _rejected(answer)
    expect(
        len(rejected) == 1 and _names(rejected[0], "over", "rev-too-far-ahead"),
        f"rev = now + 5 min lands, rev = now + 5 min + 1 ms is rejected; got {rejected}",
    )


@check(245, "skip the op silently (not rejected, not logged, not accepted)")
def push_rule_2_stored_rev_at_least_op_rev_skips_silently(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    ctx.pushed(bob, gid, [op("r1", 10, c="Zmlyc3Q")])
    head = ctx.log(bob, gid)["head"]
    answer = ctx.pushed(bob, gid, [op("r1", 10, c="ZXF1YWw"), op("r1", 5, c="b2xkZXI")])
    expect(not _rejected(answer), f"a lost rev comparison is not a rejection: {answer}")
    (row,) = ctx.pull_all(bob, gid)
    expect(row["rev"] == 10 and row["c"] == "Zmlyc3Q",
           f"the first of two equal revs stays stored, got {row}")  # fmt: skip
    expect(ctx.log(bob, gid)["head"] == head, "a last-write-wins loser was logged")


@check(246, "If a quota would be exceeded, reject that op with a reason and continue",
       needs=("quotas",))  # fmt: skip
def push_rule_3_record_quota_rejects_the_op_and_the_push_continues(ctx: Context) -> None:
    quota = ctx.target.quotas["records"]
    if quota > MAX_QUOTA_TO_REACH:
        raise Skipped(f"the record quota ({quota}) is more than {MAX_QUOTA_TO_REACH} records")
    bob, gid = _bob(ctx)
    ctx.pushed(bob, gid, [op(f"r{i}", 1) for i in range(quota)])
    answer = ctx.pushed(bob, gid, [op("extra", 1), op("r0", 2)])
    rejected = _rejected(answer)
    expect(
        len(rejected) == 1 and _names(rejected[0], "extra")
        and "rev-too-far-ahead" not in rejected[0].values(),
        f"a record over the quota is rejected with a quota reason, got {rejected}",
    )  # fmt: skip
    rows = {o["recordId"]: o["rev"] for o in ctx.pull_all(bob, gid)}
    expect(rows.get("r0") == 2 and "extra" not in rows, "an overwrite within quota lands")


@check(246, "If a quota would be exceeded, reject that op with a reason and continue",
       needs=("quotas",))  # fmt: skip
def push_rule_3_byte_quota_rejects_the_op_and_the_push_continues(ctx: Context) -> None:
    quota, size = ctx.target.quotas["bytes"], 700_000
    if quota > MAX_QUOTA_TO_REACH * size:
        raise Skipped(f"the byte quota ({quota}) takes more than {MAX_QUOTA_TO_REACH} records")
    bob, gid = _bob(ctx)
    big = [op(f"b{i}", 1, c="Q" * size) for i in range(quota // size + 1)]
    answer = ctx.pushed(bob, gid, [*big[:-1], op("small", 1)])
    expect(not _rejected(answer), f"the quota is not yet reached: {_rejected(answer)}")
    rejected = []
    for one in [big[-1], op("fits", 2, c="QQ")]:
        rejected += _rejected(ctx.pushed(bob, gid, [one]))
    expect(
        len(rejected) == 1 and _names(rejected[0], big[-1]["recordId"]),
        f"the op over the byte quota is rejected with a reason, got {rejected}",
    )


@check(247, "upsert the record and assign the next `seq` from a per-graph counter")
def push_rule_4_accepted_ops_get_ascending_seqs_and_log_entries(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    ctx.pushed(bob, gid, [op("a", 1), op("b", 2)])
    seqs = _seqs(ctx, bob, gid)
    expect(0 < seqs["a"] < seqs["b"], f"seqs follow op order: {seqs}")
    entries = ctx.log(bob, gid)["entries"]
    logged = [(e["seq"], e["recordId"], e["rev"]) for e in entries]
    expect(logged == [(seqs["a"], "a", 1), (seqs["b"], "b", 2)],
           f"one log entry per accepted write: {logged}")  # fmt: skip


@check(247, "append a log entry in the same transaction")
def push_with_an_invalid_op_is_400_invalid_and_nothing_lands(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    cursor = ctx.pushed(bob, gid, [])["cursor"]
    ctx.push(bob, gid, [op("ok", 1), {"recordId": "bad", "rev": "one"}]).expect(400, "invalid")
    expect(not ctx.pull_all(bob, gid), "an op of a refused push landed")
    expect(ctx.pushed(bob, gid, [])["cursor"] == cursor, "a refused push moved the counter")


@check(251, "A push is not all-or-nothing")
def push_is_not_all_or_nothing_each_op_is_judged_alone(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    now = ctx.now(bob, gid)
    ctx.pushed(bob, gid, [op("old", 50)])
    answer = ctx.pushed(bob, gid, [
        op("a", 1), op("far", now + SKEW_MS + MARGIN_MS), op("old", 40), op("b", 1),
    ])  # fmt: skip
    expect(len(_rejected(answer)) == 1, f"only 'far' is rejected: {_rejected(answer)}")
    rows = {o["recordId"]: o["rev"] for o in ctx.pull_all(bob, gid)}
    expect(rows == {"old": 50, "a": 1, "b": 1}, f"each op is applied or refused alone: {rows}")


@check(254, "a refused op spends one number, so seqs are not contiguous")
def push_reserves_its_seq_range_up_front_so_refused_ops_spend_numbers(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    now = ctx.now(bob, gid)
    ctx.pushed(bob, gid, [op("x", 9)])
    far = now + SKEW_MS + MARGIN_MS
    answer = ctx.pushed(bob, gid, [op("a", 1), op("far", far), op("x", 1), op("b", 1)])
    seqs = _seqs(ctx, bob, gid)
    expect(seqs["b"] - seqs["a"] == 3,
           f"op i of a push owns number first + i, landed or not: {seqs}")  # fmt: skip
    expect(answer["cursor"] >= seqs["b"], f"cursor {answer['cursor']} is below a seq it spent")
    ctx.pushed(bob, gid, [op("c", 1)])
    expect(_seqs(ctx, bob, gid)["c"] == seqs["b"] + 1, "the next push continues the counter")


@check(247, "from a per-graph counter")
def push_seq_counters_are_per_graph(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    other = ctx.fresh_pair(bob)
    ctx.pushed(bob, gid, [op("a", 1)])
    ctx.pushed(bob, other, [op(f"o{i}", 1) for i in range(5)])
    ctx.pushed(bob, gid, [op("b", 1)])
    seqs = _seqs(ctx, bob, gid)
    expect(seqs["b"] == seqs["a"] + 1, f"another graph's pushes spent this graph's seqs: {seqs}")


@check(253, "`epoch` (on push and pull answers) is the graph's current key generation")
def push_and_pull_answer_the_graphs_latest_epoch(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    ctx.init_keys(bob, gid)
    pushed = ctx.pushed(bob, gid, [op("a", 1)])
    pulled = ctx.pull(bob, gid)
    if "epoch" not in pushed and "epoch" not in pulled:
        raise Skipped("the relay sends no epoch (optional on the wire)")
    expect(pushed.get("epoch", 1) == 1 and pulled.get("epoch", 1) == 1,
           f"epoch 1 after the first key put, got push {pushed.get('epoch')}, "
           f"pull {pulled.get('epoch')}")  # fmt: skip


@check(256, "`k` and `sh` are stored as given")
def push_k_and_sh_are_stored_and_served_as_given(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    ctx.pushed(bob, gid, [op("a", 1, k="note", sh="s-1"), op("b", 1)])
    rows = {o["recordId"]: o for o in ctx.pull_all(bob, gid)}
    expect((rows["a"].get("k"), rows["a"].get("sh")) == ("note", "s-1"),
           f"k and sh served as pushed: {rows['a']}")  # fmt: skip
    expect("k" not in rows["b"] and "sh" not in rows["b"], f"no k or sh was sent: {rows['b']}")


@check(261, "Returns ops with `seq > after`, ascending, at most `limit`")
def pull_pages_ascending_above_after_with_limit_more_and_cursor(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    ctx.pushed(bob, gid, [op(f"r{i}", 1) for i in range(5)])
    seqs = sorted(_seqs(ctx, bob, gid).values())
    page = ctx.pull(bob, gid, after=str(seqs[0]), limit="2")
    expect([o["seq"] for o in page["ops"]] == seqs[1:3] and page["more"] is True,
           f"after={seqs[0]} limit=2 serves {seqs[1:3]} with more, got {page}")  # fmt: skip
    rest = ctx.pull(bob, gid, after=str(page["cursor"]), limit="10")
    expect([o["seq"] for o in rest["ops"]] == seqs[3:] and rest["more"] is False,
           f"the next page from the cursor serves {seqs[3:]}, got {rest}")  # fmt: skip


@check(247, "upsert the record")
def pull_serves_each_record_once_at_its_latest_write(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    ctx.pushed(bob, gid, [op("a", 1), op("b", 1)])
    ctx.pushed(bob, gid, [op("a", 2)])
    rows = [(o["recordId"], o["rev"]) for o in ctx.pull_all(bob, gid)]
    expect(rows == [("b", 1), ("a", 2)], f"one row per record, in seq order: {rows}")


@check(262, "`kinds` and `shards` filter on the stored `k` and `sh`")
def pull_kinds_and_shards_filter_on_k_and_sh(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    ctx.pushed(bob, gid, [op("n1", 1, k="note", sh="s1"), op("t1", 1, k="task", sh="s2"),
                          op("none", 1)])  # fmt: skip
    for query, wanted in [({"kinds": "note"}, ["n1"]), ({"shards": "s2"}, ["t1"])]:
        got = [o["recordId"] for o in ctx.pull(bob, gid, **query)["ops"]]
        expect(got == wanted, f"pull {query} serves {wanted}, got {got}")


@check(263, "A filtered pull that exhausts its matches advances `cursor`")
def pull_filtered_pull_that_exhausts_its_matches_moves_the_cursor_to_the_high_water_mark(ctx):
    bob, gid = _bob(ctx)
    answer = ctx.pushed(bob, gid, [op("n1", 1, k="note"), op("t1", 1, k="task"),
                                   op("t2", 1, k="task")])  # fmt: skip
    page = ctx.pull(bob, gid, kinds="note")
    high = max(_seqs(ctx, bob, gid).values())
    expect(page["more"] is False and page["cursor"] >= high,
           f"cursor moves to the high-water mark (>= {high}, push cursor {answer['cursor']}), "
           f"got {page}")  # fmt: skip


@check(452, "records per pull page")
def pull_limit_above_500_is_served_at_most_500(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    ctx.pushed(bob, gid, [op(f"r{i}", 1) for i in range(501)])
    page = ctx.pull(bob, gid, limit="1000")
    expect(
        len(page["ops"]) <= 500 and page["more"] is True,
        f"at most 500 ops and more: true, got {len(page['ops'])} ops, more {page['more']}",
    )


@check(268, "`head` is the highest seq in the log; `oldest` is the lowest")
def log_is_one_entry_per_accepted_write_never_filtered_with_head_and_oldest(ctx: Context):
    bob, gid = _bob(ctx)
    now = ctx.now(bob, gid)
    ctx.pushed(bob, gid, [op("a", 5, k="note"), op("b", 1, k="task"), op("c", 1)])
    ctx.pushed(bob, gid, [op("a", 6, k="note"), op("a", 2), op("d", now + SKEW_MS + MARGIN_MS)])
    seqs = _seqs(ctx, bob, gid)
    log = ctx.log(bob, gid)
    logged = [(e["recordId"], e["rev"]) for e in log["entries"]]
    expect(logged == [("a", 5), ("b", 1), ("c", 1), ("a", 6)],
           f"accepted writes only, every kind, in seq order: {logged}")  # fmt: skip
    order = [e["seq"] for e in log["entries"]]
    expect(order == sorted(order) and order[-1] == seqs["a"], f"log seqs: {order}")
    expect(
        (log["head"], log["oldest"]) == (order[-1], order[0]),
        f"head {order[-1]}, oldest {order[0]}; got {log['head']}, {log['oldest']}",
    )


@check(240, "GET /graphs/:gid/log?after=&limit=")
def log_pages_with_after_limit_more_and_cursor(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    ctx.pushed(bob, gid, [op(f"r{i}", 1) for i in range(5)])
    every = [e["seq"] for e in ctx.log(bob, gid)["entries"]]
    page = ctx.log(bob, gid, after=str(every[0]), limit="2")
    expect([e["seq"] for e in page["entries"]] == every[1:3] and page["more"] is True,
           f"after={every[0]} limit=2 serves {every[1:3]} with more, got {page}")  # fmt: skip
    rest = ctx.log(bob, gid, after=str(page["cursor"]))
    expect([e["seq"] for e in rest["entries"]] == every[3:] and rest["more"] is False,
           f"the next page serves {every[3:]}, got {rest}")  # fmt: skip


@check(269, "never rewrites an entry")
def log_is_never_rewritten_and_keeps_each_records_edit_history(ctx: Context) -> None:
    bob, gid = _bob(ctx)
    ctx.pushed(bob, gid, [op("a", 1), op("b", 1)])
    before = ctx.log(bob, gid)["entries"]
    ctx.pushed(bob, gid, [op("a", 2), op("b", 2)])
    ctx.pushed(bob, gid, [op("a", 1)])
    after = ctx.log(bob, gid)["entries"]
    expect(after[: len(before)] == before, f"the log was rewritten: {before} -> {after}")
    history = [e["rev"] for e in after if e["recordId"] == "a"]
    expect(history == [1, 2], f"the log keeps a record's edits, and only those: a's revs {history}")
