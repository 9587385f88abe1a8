"""Blobs: raw ciphertext under the retain, transport and ephemeral policies (spec: Blobs)."""

from simkit.wire.conform.check import check, expect
from simkit.wire.conform.context import NONCE, Context

DATA = bytes(range(256)) * 4  # every byte value, raw on the wire


@check(182, "policy `retain` (default) | retain")
def blob_upload_retains_by_default_and_serves_raw_bytes_with_the_nonce(ctx: Context) -> None:
    alice = ctx.member("alice", "a1")
    ctx.upload(alice, "u", "keep", DATA).expect(200)
    answer = ctx.call(alice, "GET", "/graphs/u/blobs/keep").expect(200)
    expect(answer.body == DATA, f"the blob's bytes come back as uploaded ({len(answer.body)})")
    expect(answer.headers.get("x-blob-nonce") == NONCE,
           f"x-blob-nonce is served: {answer.headers}")  # fmt: skip


@check(325, "a retry answered `duplicate: true`, never an edit")
def blob_reupload_is_answered_duplicate_and_never_edits(ctx: Context) -> None:
    alice = ctx.member("alice", "a1")
    ctx.upload(alice, "u", "once", DATA).expect(200)
    answer = ctx.upload(alice, "u", "once", b"other bytes").expect(200).json()
    expect(answer.get("duplicate") is True, f"expected duplicate: true, got {answer}")
    served = ctx.call(alice, "GET", "/graphs/u/blobs/once").expect(200).body
    expect(served == DATA, "a re-upload changed the stored blob")


@check(185, "retain | DELETE | caller holds `write` | deleted")
def blob_delete_forgets_a_retained_blob(ctx: Context) -> None:
    alice = ctx.member("alice", "a1")
    ctx.upload(alice, "u", "gone", DATA).expect(200)
    answer = ctx.call(alice, "DELETE", "/graphs/u/blobs/gone").expect(200).json()
    expect(answer.get("ok") is True, f"expected {{ok: true}}, got {answer}")
    ctx.call(alice, "GET", "/graphs/u/blobs/gone").expect_refused()


@check(186, "every current member has acked")
def blob_transport_is_forgotten_once_every_current_member_acked(ctx: Context) -> None:
    """On d:bob both alice and bob are current members; alice uploaded (one receipt)."""
    alice, bob = ctx.member("alice", "a1"), ctx.member("bob", "b1")
    ctx.upload(alice, "d:bob", "hand", DATA, policy="transport").expect(200)
    first = ctx.call(alice, "POST", "/graphs/d:bob/blobs/hand/ack").expect(200).json()
    expect(first.get("ok") is True and first.get("forgotten") is False,
           f"the uploader's ack forgets nothing while bob has not acked: {first}")  # fmt: skip
    ctx.call(bob, "GET", "/graphs/d:alice/blobs/hand").expect(200)
    last = ctx.call(bob, "POST", "/graphs/d:alice/blobs/hand/ack").expect(200).json()
    expect(last.get("forgotten") is True, f"the last member's ack forgets it: {last}")
    ctx.call(alice, "GET", "/graphs/d:bob/blobs/hand").expect_refused()


@check(187, "ephemeral | time | ttl has passed | forgotten (deleted)")
def blob_ephemeral_is_not_served_after_its_ttl(ctx: Context) -> None:
    alice = ctx.member("alice", "a1")
    ctx.upload(alice, "u", "brief", DATA, policy="ephemeral", ttl="1").expect(200)
    ctx.target.wait(50)
    ctx.call(alice, "GET", "/graphs/u/blobs/brief").expect_refused()


@check(324, "`policy` is `retain` (default), `transport` or `ephemeral`")
def blob_unknown_policy_is_refused_and_stores_nothing(ctx: Context) -> None:
    alice = ctx.member("alice", "a1")
    ctx.upload(alice, "u", "odd", DATA, policy="forever").expect_refused()
    ctx.call(alice, "GET", "/graphs/u/blobs/odd").expect_refused()
