"""Limits: what a relay may never accept (spec: Limits, "stricter, never looser").

Over-limit requests must be refused; a relay may refuse below the spec's values
too, except a push body up to 8 MiB, which the push route must accept.
"""

import json

from simkit.wire.conform.check import check, expect
from simkit.wire.conform.context import Context, Who, op

MiB = 1024 * 1024
DAY_MS = 24 * 60 * 60_000


def _push_body(size: int) -> bytes:
    """A valid push of one small op, padded with JSON whitespace to exactly ``size`` bytes."""
    body = json.dumps({"ops": [op("padded", 1)]}).encode()
    return body[:-1] + b" " * (size - len(body)) + b"}"


def _carol(ctx: Context) -> tuple[Who, str]:
    carol = ctx.member("carol", "c1")
    return carol, ctx.fresh_pair(carol)


def _raw_push(ctx: Context, who: Who, gid: str, body: bytes):
    headers = {"content-type": "application/json"}
    return ctx.call(who, "POST", f"/graphs/{gid}/push", body=body, headers=headers)


@check(450, "| maxOpsPerPush | 200 | records per push |")
def push_of_more_than_200_ops_is_refused_and_nothing_lands(ctx: Context) -> None:
    carol, gid = _carol(ctx)
    ctx.push(carol, gid, [op(f"r{i}", 1) for i in range(201)]).expect_refused()
    expect(not ctx.pull_all(carol, gid), "ops of a refused push landed")


@check(255, "accepts bodies up to at least the push byte budget (8 MiB)")
def push_body_of_8_mib_is_accepted(ctx: Context) -> None:
    carol, gid = _carol(ctx)
    _raw_push(ctx, carol, gid, _push_body(8 * MiB)).expect(200)


@check(451, "| maxPushBytes | 8 MiB | bytes per push; over it is 413 |")
def push_body_over_8_mib_is_413(ctx: Context) -> None:
    carol, gid = _carol(ctx)
    _raw_push(ctx, carol, gid, _push_body(8 * MiB + 1)).expect(413)
    expect(not ctx.pull_all(carol, gid), "a push over 8 MiB landed")


@check(449, "| maxCiphertextChars | 700,000 | one sealed record on the wire |")
def ciphertext_over_700000_chars_never_lands(ctx: Context) -> None:
    """Refused as a whole (4xx) or as one op (``rejected``): either way it is not stored."""
    carol, gid = _carol(ctx)
    answer = ctx.push(carol, gid, [op("huge", 1, c="Q" * 700_001)])
    if answer.status == 200:
        expect(answer.json().get("rejected"), f"accepted without rejection: {answer.show()}")
    else:
        answer.expect_refused()
    expect(not ctx.pull_all(carol, gid), "a ciphertext of 700,001 characters was stored")


@check(453, "| maxBlobBytes | 25 MiB | one blob |")
def blob_over_25_mib_is_413_and_not_stored(ctx: Context) -> None:
    carol = ctx.member("carol", "c1")
    ctx.upload(carol, "u", "huge", b"\x00" * (25 * MiB + 1)).expect(413)
    ctx.call(carol, "GET", "/graphs/u/blobs/huge").expect_refused()


@check(455, "| ephemeral blob ttl | at most 30 days |")
def ephemeral_ttl_over_30_days_is_refused(ctx: Context) -> None:
    carol = ctx.member("carol", "c1")
    ttl = str(30 * DAY_MS + 1)
    ctx.upload(carol, "u", "long", b"data", policy="ephemeral", ttl=ttl).expect_refused()
    ctx.call(carol, "GET", "/graphs/u/blobs/long").expect_refused()
