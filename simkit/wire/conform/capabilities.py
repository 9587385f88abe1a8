"""Capabilities: `write` and `rotate` in shared graphs only (spec: Authentication, item 5).

In group ``cap`` of the conformance directory erin holds no capability, frank holds
``write`` only, and alice is not listed (the directory answers null: everything).
"""

from simkit.wire.conform.check import check, expect
from simkit.wire.conform.context import Context, op


def _not_permitted(answer, need: str) -> None:
    answer.expect(403, "not-permitted")
    expect(answer.json().get("need") == need, f"need: {need!r} expected, got {answer.show()}")


@check(385, "| `write` | POST push, POST blobs/:id, DELETE blobs/:id |")
def write_gates_push_blob_upload_and_blob_delete(ctx: Context) -> None:
    alice, erin = ctx.member("alice", "a1"), ctx.member("erin", "e1")
    ctx.upload(alice, "g:cap", "shared", b"data").expect(200)
    _not_permitted(ctx.push(erin, "g:cap", [op("e1", 1)]), "write")
    _not_permitted(ctx.upload(erin, "g:cap", "mine", b"data"), "write")
    _not_permitted(ctx.call(erin, "DELETE", "/graphs/g:cap/blobs/shared"), "write")
    ctx.call(erin, "GET", "/graphs/g:cap/pull").expect(200)
    ctx.call(erin, "GET", "/graphs/g:cap/blobs/shared").expect(200)
    rows = [o["recordId"] for o in ctx.pull_all(alice, "g:cap")]
    expect("e1" not in rows, "a push refused for lack of write landed")


@check(386, "| `rotate` | POST keys where epoch > latest |")
def rotate_gates_a_new_epoch_but_not_a_grant(ctx: Context) -> None:
    alice, frank = ctx.member("alice", "a1"), ctx.member("frank", "f1")
    ctx.member("erin", "e1")
    latest = ctx.get_keys(alice, "g:cap")["latestEpoch"]
    eligible = ctx.eligible(alice, "g:cap")
    wraps = {d: f"w{latest + 1}-{d}" for d in eligible}
    _not_permitted(ctx.put_keys(frank, "g:cap", latest + 1, wraps), "rotate")
    ctx.put_keys(frank, "g:cap", latest + 2, wraps).expect(409, "epoch-gap")  # rotation rule 1
    rest = [d for d in eligible if d != "a1"]
    ctx.put_keys(alice, "g:cap", latest + 1, {"a1": "w-a1"}, excluding=rest).expect(200)
    ctx.put_keys(frank, "g:cap", latest + 1, {"f1": "granted"}).expect(200)  # line 390
    held = ctx.get_keys(frank, "g:cap")["wraps"]
    expect({"epoch": latest + 1, "wrapped": "granted"} in held,
           f"frank's grant to f1 (no rotate needed) was stored: {held}")  # fmt: skip


@check(388, "Personal (`u`) and pairwise (`d:`) graphs are never asked and always allowed")
def personal_and_pairwise_graphs_never_ask_for_capabilities(ctx: Context) -> None:
    erin = ctx.member("erin", "e1")
    for gid in ("u", ctx.fresh_pair(erin)):
        ctx.push(erin, gid, [op("mine", 1)]).expect(200)
        ctx.upload(erin, gid, "mine", b"data").expect(200)
        ctx.call(erin, "DELETE", f"/graphs/{gid}/blobs/mine").expect(200)
        ctx.init_keys(erin, gid, ctx.get_keys(erin, gid)["latestEpoch"] + 1)


@check(389, "answers null for the group, everything is allowed")
def a_member_the_directory_lists_no_capabilities_for_may_do_everything(ctx: Context) -> None:
    alice = ctx.member("alice", "a1")
    ctx.push(alice, "g:cap", [op("a-cap", 1)]).expect(200)
    ctx.init_keys(alice, "g:cap", ctx.get_keys(alice, "g:cap")["latestEpoch"] + 1)


@check(389, "If it answers a list, the needed capability must be in it")
def a_capability_list_grants_what_it_lists_and_nothing_else(ctx: Context) -> None:
    frank = ctx.member("frank", "f1")
    answer = ctx.push(frank, "g:cap", [op("f-cap", 1)]).expect(200).json()
    expect(answer.get("accepted") not in (0, [], None), f"frank may write: {answer}")
    latest = ctx.get_keys(frank, "g:cap")["latestEpoch"]
    wraps = {d: "w" for d in ctx.eligible(frank, "g:cap")}
    _not_permitted(ctx.put_keys(frank, "g:cap", latest + 1, wraps), "rotate")
