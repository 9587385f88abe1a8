"""Devices: set-once registration, the member's list, revocation (spec: Devices)."""

from simkit.wire.conform.check import check, expect
from simkit.wire.conform.context import Context


@check(171, "`fresh` reported")
def put_device_registers_it_and_reports_fresh(ctx: Context) -> None:
    a5 = ctx.who("alice", "a5")
    answer = ctx.call(a5, "PUT", "/devices/a5", json_body=ctx.device_body(a5)).expect(200)
    body = answer.json()
    expect(
        body.get("ok") is True and body.get("deviceId") == "a5" and body.get("fresh") is True,
        f"expected {{ok: true, deviceId: 'a5', fresh: true}}, got {answer.show()}",
    )
    ctx.registered(a5)  # known registered from here on
    ctx.call(a5, "GET", "/devices").expect(200)


@check(172, "idempotent; `fresh` reflects it")
def put_device_again_with_the_same_keys_is_idempotent_and_not_fresh(ctx: Context) -> None:
    a5 = ctx.member("alice", "a5")
    answer = ctx.call(a5, "PUT", "/devices/a5", json_body=ctx.device_body(a5)).expect(200)
    expect(answer.json().get("fresh") is False, f"expected fresh: false, got {answer.show()}")


@check(173, "409 device-key-conflict")
def put_device_with_different_keys_is_409_device_key_conflict_and_changes_nothing(ctx: Context):
    a5 = ctx.member("alice", "a5")
    other = ctx.device_body(a5, generation=1)
    ctx.call(a5, "PUT", "/devices/a5", json_body=other).expect(409, "device-key-conflict")
    roster = ctx.call(a5, "GET", "/graphs/u/devices").expect(200).field("devices")
    stored = [d for d in roster if d.get("deviceId") == "a5"]
    original = ctx.device_body(a5)["pubJwk"]
    expect(
        stored and {k: stored[0]["pubJwk"].get(k) for k in "xy"} == {k: original[k] for k in "xy"},
        f"a5's keys changed after a refused PUT: roster has {stored}",
    )


@check(228, "GET /devices | none | `{devices: [...]}`")
def get_devices_answers_a_list_of_devices(ctx: Context) -> None:
    devices = ctx.call(ctx.member("alice", "a1"), "GET", "/devices").expect(200).field("devices")
    expect(isinstance(devices, list), f"devices is not an array: {devices!r}")


@check(174, "its wraps are dropped; rotationRequired set on its graphs")
def revoke_marks_the_device_revoked_and_flags_its_graphs_for_rotation(ctx: Context) -> None:
    a1, a3 = ctx.member("alice", "a1"), ctx.member("alice", "a3")
    gid = ctx.fresh_pair(a1)
    wraps = ctx.init_keys(a1, gid)
    expect("a3" in wraps, f"a3 is not in {gid}'s roster")
    answer = ctx.call(a1, "POST", "/devices/a3/revoke").expect(200)
    expect(answer.json().get("ok") is True, f"expected ok: true, got {answer.show()}")
    answer.field("rotationOwedFor")
    ctx.call(a3, "GET", "/devices").expect(403, "device-revoked")
    keys = ctx.get_keys(a1, gid)
    expect(keys.get("rotationRequired") is True, f"rotationRequired not set on {gid}: {keys}")
    roster = ctx.call(a1, "GET", f"/graphs/{gid}/devices").expect(200).field("devices")
    entry = [d for d in roster if d.get("deviceId") == "a3"]
    expect(
        entry and entry[0].get("revokedAt") is not None,
        f"the roster must keep the revoked device, marked by revokedAt: {entry}",
    )
