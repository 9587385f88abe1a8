"""Keys: epochs, rotation rules 1-4 and 6, grants, the roster and key gaps (spec: Keys).

Each check mints keys on a pairwise graph of its own (``d:peerN``), whose eligible
devices are alice's active devices: at least a1 and a2.
"""

from simkit.wire.conform.check import check, expect
from simkit.wire.conform.context import Context, Who, unmentioned


def _alice(ctx: Context) -> tuple[Who, Who, str]:
    a1, a2 = ctx.member("alice", "a1"), ctx.member("alice", "a2")
    return a1, a2, ctx.fresh_pair(a1)


def _latest(ctx: Context, who: Who, gid: str) -> int:
    return ctx.get_keys(who, gid)["latestEpoch"]


def _held(ctx: Context, who: Who, gid: str) -> dict[int, str]:
    """The wraps ``who``'s device holds: epoch -> wrapped."""
    return {w["epoch"]: w["wrapped"] for w in ctx.get_keys(who, gid)["wraps"]}


@check(158, "wraps cover every eligible device, or the rest are named in `excluding`")
def keys_init_at_epoch_1_covering_every_eligible_device(ctx: Context) -> None:
    a1, _, gid = _alice(ctx)
    expect(_latest(ctx, a1, gid) == 0, "a graph without keys has latestEpoch 0")
    wraps = {d: f"w1-{d}" for d in ctx.eligible(a1, gid)}
    answer = ctx.put_keys(a1, gid, 1, wraps).expect(200).json()
    expect(answer.get("ok") is True and answer.get("latestEpoch") == 1,
           f"expected {{ok: true, latestEpoch: 1}}, got {answer}")  # fmt: skip
    keys = ctx.get_keys(a1, gid)
    expect(keys["latestEpoch"] == 1 and keys["wraps"] == [{"epoch": 1, "wrapped": "w1-a1"}],
           f"GET keys serves a1's own wrap for epoch 1: {keys}")  # fmt: skip


@check(158, "or the rest are named in `excluding`")
def keys_new_epoch_may_exclude_eligible_devices_on_purpose(ctx: Context) -> None:
    a1, a2, gid = _alice(ctx)
    rest = [d for d in ctx.eligible(a1, gid) if d != "a1"]
    ctx.put_keys(a1, gid, 1, {"a1": "w1-a1"}, excluding=rest).expect(200)
    expect(_held(ctx, a2, gid) == {}, "an excluded device holds no wrap")


@check(300, "`epoch` must equal latest + 1, else `409 epoch-gap`")
def keys_epoch_above_latest_plus_1_is_409_epoch_gap(ctx: Context) -> None:
    a1, _, gid = _alice(ctx)
    wraps = {d: f"w2-{d}" for d in ctx.eligible(a1, gid)}
    ctx.put_keys(a1, gid, 2, wraps).expect(409, "epoch-gap")
    ctx.init_keys(a1, gid, 1)
    ctx.put_keys(a1, gid, 3, wraps).expect(409, "epoch-gap")
    expect(_latest(ctx, a1, gid) == 1, "a refused key put changed latestEpoch")


@check(302, "else `400 incomplete-rotation` naming the missing device IDs")
def keys_incomplete_rotation_is_400_naming_the_missing_devices(ctx: Context) -> None:
    a1, _, gid = _alice(ctx)
    missing = [d for d in ctx.eligible(a1, gid) if d != "a1"]
    answer = ctx.put_keys(a1, gid, 1, {"a1": "w1-a1"}).expect(400, "incomplete-rotation")
    expect(not unmentioned(answer, missing), f"the body names {missing}: {answer.show()}")
    expect(_latest(ctx, a1, gid) == 0, "a refused rotation minted an epoch")


@check(303, "may not be both wrapped to and excluded")
def keys_excluding_a_wrapped_device_is_400_invalid_exclusion(ctx: Context) -> None:
    a1, _, gid = _alice(ctx)
    wraps = {d: f"w1-{d}" for d in ctx.eligible(a1, gid)}
    ctx.put_keys(a1, gid, 1, wraps, excluding=["a2"]).expect(400, "invalid-exclusion")


@check(303, "may not be excluded if not eligible")
def keys_excluding_an_ineligible_device_is_400_invalid_exclusion(ctx: Context) -> None:
    a1, _, gid = _alice(ctx)
    ctx.member("carol", "c1")
    wraps = {d: f"w1-{d}" for d in ctx.eligible(a1, gid)}
    ctx.put_keys(a1, gid, 1, wraps, excluding=["c1"]).expect(400, "invalid-exclusion")


@check(305, "else `400 not-a-member-device`")
def keys_wrap_to_a_device_of_a_non_member_or_a_revoked_device_is_400(ctx: Context) -> None:
    a1, _, gid = _alice(ctx)
    ctx.member("carol", "c1")
    revoked = ctx.revoked().device
    wraps = {d: f"w1-{d}" for d in ctx.eligible(a1, gid)}
    for stranger in ("c1", revoked):
        answer = ctx.put_keys(a1, gid, 1, wraps | {stranger: "w"})
        answer.expect(400, "not-a-member-device")
    expect(_latest(ctx, a1, gid) == 0, "a refused rotation minted an epoch")


@check(159, "old epochs are kept")
def keys_rotation_mints_latest_plus_1_and_keeps_old_epochs(ctx: Context) -> None:
    a1, _, gid = _alice(ctx)
    ctx.init_keys(a1, gid, 1)
    ctx.init_keys(a1, gid, 2)
    expect(_held(ctx, a1, gid) == {1: "w1-a1", 2: "w2-a1"}, "a1 holds wraps for epochs 1 and 2")
    expect(_latest(ctx, a1, gid) == 2, "latestEpoch is 2")


@check(160, "a concurrent second create of epoch 1 is answered 200 and treated as a grant")
def keys_second_create_of_epoch_1_is_200_and_a_grant_that_never_overwrites(ctx: Context):
    a1, a2, gid = _alice(ctx)
    ctx.init_keys(a1, gid, 1)
    again = {d: f"other-{d}" for d in ctx.eligible(a2, gid)}
    answer = ctx.put_keys(a2, gid, 1, again).expect(200).json()
    expect(answer.get("latestEpoch") == 1, f"still epoch 1: {answer}")
    expect(_held(ctx, a1, gid) == {1: "w1-a1"}, "existing wraps are never overwritten")


@check(307, "fills wraps for devices lacking that epoch")
def keys_grant_fills_a_gap_and_never_overwrites(ctx: Context) -> None:
    a1, a2, gid = _alice(ctx)
    rest = [d for d in ctx.eligible(a1, gid) if d != "a1"]
    ctx.put_keys(a1, gid, 1, {"a1": "w1-a1"}, excluding=rest).expect(200)
    ctx.put_keys(a1, gid, 1, {"a2": "granted"}).expect(200)
    ctx.put_keys(a1, gid, 1, {"a2": "again", "a1": "again"}).expect(200)
    expect(_held(ctx, a2, gid) == {1: "granted"}, "the grant filled a2's gap, once")
    expect(_held(ctx, a1, gid) == {1: "w1-a1"}, "a grant never overwrites a held wrap")


@check(307, "wrap targets must still satisfy rule 6")  # the spec's words: rotation rule 6
def keys_grant_to_a_non_member_device_is_400_not_a_member_device(ctx: Context) -> None:
    a1, _, gid = _alice(ctx)
    ctx.member("carol", "c1")
    ctx.init_keys(a1, gid, 1)
    ctx.put_keys(a1, gid, 1, {"c1": "w"}).expect(400, "not-a-member-device")


@check(292, "(wraps for the calling device only)")
def keys_get_serves_only_the_calling_devices_wraps(ctx: Context) -> None:
    a1, a2, gid = _alice(ctx)
    ctx.init_keys(a1, gid, 1)
    expect(_held(ctx, a1, gid) == {1: "w1-a1"} and _held(ctx, a2, gid) == {1: "w1-a2"},
           "each device is served its own wrap and no other")  # fmt: skip


@check(312, "keygaps lists devices holding no wrap for some epoch")
def keygaps_lists_missing_epochs_with_public_keys_from_the_roster(ctx: Context) -> None:
    a1, a2, gid = _alice(ctx)
    rest = [d for d in ctx.eligible(a1, gid) if d != "a1"]
    ctx.put_keys(a1, gid, 1, {"a1": "w1-a1"}, excluding=rest).expect(200)
    answer = ctx.call(a1, "GET", f"/graphs/{gid}/keygaps").expect(200)
    expect(answer.field("latestEpoch") == 1, f"keygaps' latestEpoch is 1: {answer.show()}")
    gaps = {g["deviceId"]: g for g in answer.field("gaps")}
    expect(set(gaps) == set(rest), f"the gaps are {rest}, got {sorted(gaps)}")
    registered = ctx.device_body(a2)
    gap = gaps["a2"]
    expect(gap.get("memberId") == "alice" and gap.get("epochs") == [1]
           and all(gap["pubJwk"].get(k) == registered["pubJwk"][k] for k in "xy")
           and all(gap["sigJwk"].get(k) == registered["sigJwk"][k] for k in "xy"),
           f"a2's gap carries its registered keys and epochs [1]: {gap}")  # fmt: skip


@check(313, "DELETE keys/:epoch discards only the calling device's own wrap")
def keys_delete_discards_only_the_callers_wrap_which_reappears_in_keygaps(ctx: Context):
    a1, a2, gid = _alice(ctx)
    ctx.init_keys(a1, gid, 1)
    answer = ctx.call(a2, "DELETE", f"/graphs/{gid}/keys/1").expect(200).json()
    expect(answer.get("ok") is True and "discarded" in answer,
           f"expected {{ok: true, discarded}}, got {answer}")  # fmt: skip
    expect(_held(ctx, a2, gid) == {} and _held(ctx, a1, gid) == {1: "w1-a1"},
           "only a2's own wrap is gone")  # fmt: skip
    gaps = ctx.call(a1, "GET", f"/graphs/{gid}/keygaps").expect(200).field("gaps")
    expect([g["deviceId"] for g in gaps] == ["a2"], f"a2 reappears in keygaps: {gaps}")


@check(106, "The roster includes revoked devices")
def roster_serves_current_members_devices_revoked_ones_included(ctx: Context) -> None:
    a1, _, gid = _alice(ctx)
    revoked = ctx.revoked().device
    roster = ctx.call(a1, "GET", f"/graphs/{gid}/devices").expect(200).field("devices")
    entries = {d["deviceId"]: d for d in roster}
    expect({"a1", "a2", revoked} <= set(entries), f"alice's devices are all listed: {roster}")
    expect(entries[revoked].get("revokedAt") is not None and entries["a1"]["revokedAt"] is None,
           "revokedAt marks the revoked device only")  # fmt: skip
    fields = {"deviceId", "memberId", "pubJwk", "sigJwk", "revokedAt"}
    expect(fields <= set(entries["a1"]), f"a roster entry has {sorted(fields)}: {entries['a1']}")
