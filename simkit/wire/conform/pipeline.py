"""Authentication and the request pipeline (spec: Authentication, items 1, 2 and 4)."""

from simkit.realtime import wall_clock
from simkit.wire.conform.check import Failed, Skipped, check, expect
from simkit.wire.conform.context import NONCE, Context, Who, op

KEYS_BODY = {"epoch": 1, "wraps": []}
BLOB = {"body": b"blob", "headers": {"x-blob-nonce": NONCE}}
HAMMER_LIMIT = 3_000  # requests a rate-limit check sends before it gives up finding a 429


def routes(device: str, gid: str = "u") -> list[tuple[str, str, dict]]:
    """One request per route of the fifteen, each well-formed: (method, path, options)."""
    graph = f"/graphs/{gid}"
    return [
        ("PUT", f"/devices/{device}", {"json_body": {}}),
        ("GET", "/devices", {}),
        ("POST", f"/devices/{device}/revoke", {}),
        ("POST", f"{graph}/push", {"json_body": {"ops": [op("r1", 1)]}}),
        ("GET", f"{graph}/pull", {}),
        ("GET", f"{graph}/log", {}),
        ("GET", f"{graph}/keys", {}),
        ("GET", f"{graph}/devices", {}),
        ("GET", f"{graph}/keygaps", {}),
        ("POST", f"{graph}/keys", {"json_body": KEYS_BODY}),
        ("DELETE", f"{graph}/keys/1", {}),
        ("POST", f"{graph}/blobs/b1", BLOB),
        ("GET", f"{graph}/blobs/b1", {}),
        ("POST", f"{graph}/blobs/b1/ack", {}),
        ("DELETE", f"{graph}/blobs/b1", {}),
    ]


def _every_route(ctx: Context, who: Who | None, status: int, code: str | None, skip_put: bool):
    for method, path, options in routes(who.device if who else "a1"):
        if skip_put and method == "PUT":
            continue
        ctx.call(who, method, path, **options).expect(status, code)


@check(365, "Every route requires authentication")
def every_route_requires_authentication_401(ctx: Context) -> None:
    _every_route(ctx, None, 401, None, skip_put=False)


@check(423, "authentication gave no identity")
def a_credential_the_host_does_not_know_is_401(ctx: Context) -> None:
    stranger = Who("alice", "a1", "conform-no-such-token")
    for method, path, options in routes("a1"):
        ctx.call(stranger, method, path, **options).expect(401)


@check(374, "member ID and device ID are safe IDs")
def unsafe_member_id_is_403_malformed_identity(ctx: Context) -> None:
    who = ctx.who("mal:lory", "m1")
    ctx.call(who, "GET", "/devices").expect(403, "malformed-identity")
    ctx.call(who, "PUT", "/devices/m1", json_body=ctx.device_body(who)).expect(
        403, "malformed-identity"
    )


@check(375, "device registered to this member")
def unregistered_device_is_403_device_not_registered_on_every_route_but_put(ctx: Context):
    _every_route(ctx, ctx.who("alice", "a4"), 403, "device-not-registered", skip_put=True)


@check(366, "registered to the named member")
def another_members_device_is_403_device_not_registered(ctx: Context) -> None:
    ctx.member("alice", "a1")
    ctx.call(ctx.who("bob", "a1"), "GET", "/devices").expect(403, "device-not-registered")


@check(376, "revoked | 403 `device-revoked`")
def revoked_device_is_403_device_revoked_on_every_route_but_put(ctx: Context) -> None:
    _every_route(ctx, ctx.revoked(), 403, "device-revoked", skip_put=True)


@check(377, "caller is not a member of the group | 403")
def caller_not_in_the_group_is_403(ctx: Context) -> None:
    carol = ctx.member("carol", "c1")
    ctx.call(carol, "GET", "/graphs/g:team/pull").expect(403)
    ctx.push(carol, "g:team", [op("r1", 1)]).expect(403)
    expect(not ctx.pull_all(ctx.member("bob", "b1"), "g:team"), "carol's refused push landed")


@check(378, "unknown member | 404")
def pairwise_graph_with_an_unknown_member_is_404(ctx: Context) -> None:
    alice = ctx.member("alice", "a1")
    ctx.call(alice, "GET", "/graphs/d:zed/pull").expect(404)
    ctx.push(alice, "d:zed", [op("r1", 1)]).expect(404)


@check(221, "Every body is validated against a schema; failure is 400 `invalid`")
def body_that_fails_its_schema_is_400_invalid(ctx: Context) -> None:
    alice = ctx.member("alice", "a1")
    gid = ctx.fresh_pair(alice)
    bad = [
        ("PUT", "/devices/a1", b"{not json"),
        ("PUT", "/devices/a1", b'{"pubJwk": 1}'),
        ("POST", f"/graphs/{gid}/push", b'{"ops": {}}'),
        ("POST", f"/graphs/{gid}/push", b'{"ops": [{"recordId": "r1"}]}'),
        ("POST", f"/graphs/{gid}/push", b"[]"),
        ("POST", f"/graphs/{gid}/keys", b'{"epoch": "one", "wraps": []}'),
        ("POST", f"/graphs/{gid}/keys", b'{"wraps": []}'),
    ]
    for method, path, body in bad:
        headers = {"content-type": "application/json"}
        ctx.call(alice, method, path, body=body, headers=headers).expect(400, "invalid")
    expect(not ctx.pull_all(alice, gid), "an invalid push landed")


@check(368, "Request pipeline order and results")
def earliest_failing_pipeline_step_answers(ctx: Context) -> None:
    """Each request fails every step from some point on; the first failing step answers."""
    bad_body = {"body": b"{not json", "headers": {"content-type": "application/json"}}
    alice, carol = ctx.member("alice", "a1"), ctx.member("carol", "c1")
    unregistered, revoked = ctx.who("alice", "a4"), ctx.revoked()
    cases = [
        (None, "g:team", 401, None),
        (unregistered, "g:team", 403, "device-not-registered"),
        (revoked, "g:team", 403, "device-revoked"),
        (carol, "g:team", 403, None),
        (alice, "d:zed", 404, None),
        (alice, "u", 400, "invalid"),
    ]
    for who, gid, status, code in cases:
        ctx.call(who, "POST", f"/graphs/{gid}/push", **bad_body).expect(status, code)
    try:
        malformed = ctx.who("mal:lory", "m1")
    except Skipped:
        return
    ctx.call(malformed, "POST", "/graphs/d:zed/push", **bad_body).expect(403, "malformed-identity")


@check(372, "per-member, per-bucket rate limit | over the limit | 429")
def rate_limit_429_comes_before_every_other_step(ctx: Context) -> None:
    """rita (who does nothing else) reads until the relay answers 429; then requests
    that would fail a later step (not a group member, an unknown query parameter,
    a body on a bodiless route) must be answered 429 as well."""
    rita = ctx.member("rita", "r1")
    started = wall_clock()  # a wall-time bound on the hammering
    for _ in range(HAMMER_LIMIT):
        if ctx.call(rita, "GET", "/devices", raw=True).status == 429:
            break
    else:
        took = wall_clock() - started
        raise Skipped(f"no 429 after {HAMMER_LIMIT} reads in {took:.1f} s (rate values "
                      "are not shown by the spec)")  # fmt: skip
    later_failures = [
        ("GET", "/graphs/g:team/pull", {}),
        ("GET", "/graphs/u/pull", {"query": {"bogus": "1"}}),
        ("GET", "/devices", {"body": b"unexpected"}),
    ]
    for method, path, options in later_failures:
        # The bucket may refill between requests; the 429 must win while it is empty.
        answers = [ctx.call(rita, method, path, raw=True, **options) for _ in range(20)]
        if not any(a.status == 429 for a in answers):
            raise Failed(f"{method} {path} as {rita}: never 429 while reads were limited; "
                         f"got {answers[-1].show()}")  # fmt: skip
