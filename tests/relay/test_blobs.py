"""Blobs: raw bodies, policies, receipts and the sweeper (spec: Blobs)."""

import pytest
from relay_helpers import MINUTE, T0, Harness, error, state_bytes

from simkit.relay import BlobForgotten

NONCE = {"x-blob-nonce": "bm9uY2Vub25jZTEy"}
DAY = 24 * 60 * MINUTE


def upload(h, gid="g:team", blob="b1", data=b"\x00ciphertext", who=("alice", "a1"), **query):
    return h.call("POST", f"/graphs/{gid}/blobs/{blob}", who, body=data, query=query, headers=NONCE)


def test_blob_upload_retains_by_default_and_serves_raw_bytes_with_nonce(h):
    response = upload(h)
    assert response.json() == {"ok": True, "duplicate": False, "size": 11, "policy": "retain",
                               "expiresAt": None}  # fmt: skip
    download = h.call("GET", "/graphs/g:team/blobs/b1", ("bob", "b1"))
    assert download.status == 200
    assert download.body == b"\x00ciphertext"
    assert download.headers == {"content-type": "application/octet-stream", **NONCE}


def test_blob_reupload_is_a_retry_answered_duplicate_never_an_edit(h):
    upload(h)
    before = state_bytes(h.relay)
    response = upload(h, data=b"different", policy="transport")
    assert response.json() == {"ok": True, "duplicate": True, "size": 11, "policy": "retain",
                               "expiresAt": None}  # fmt: skip
    assert state_bytes(h.relay) == before


@pytest.mark.parametrize("nonce", [None, "", "bm9u=", "a+b/", "A" * 65, "AAAAB"])
def test_blob_nonce_header_must_be_base64url_400_invalid(h, nonce):
    headers = {} if nonce is None else {"x-blob-nonce": nonce}
    response = h.call("POST", "/graphs/u/blobs/b1", body=b"x", headers=headers)
    assert (response.status, error(response)) == (400, "invalid")


def test_blob_over_25_mib_is_413():
    h = Harness()
    h.register("alice", "a1")
    response = upload(h, "u", data=bytes(25 * 1024 * 1024 + 1))
    assert (response.status, error(response)) == (413, "too-large")
    assert upload(h, "u", data=bytes(25 * 1024 * 1024)).status == 200


def test_blob_quota_on_blob_bytes_is_413_quota_blob_bytes():
    h = Harness(quota_blob_bytes=10)
    h.register("alice", "a1")
    assert upload(h, "u", "b1", bytes(6)).status == 200
    response = upload(h, "u", "b2", bytes(5))
    assert (response.status, error(response)) == (413, "quota-blob-bytes")
    h.call("DELETE", "/graphs/u/blobs/b1")
    assert upload(h, "u", "b2", bytes(5)).status == 200


@pytest.mark.parametrize(
    "query",
    [{"policy": "keep"}, {"policy": "ephemeral"}, {"policy": "ephemeral", "ttl": "0"},
     {"policy": "ephemeral", "ttl": str(30 * DAY + 1)}, {"ttl": "5"},
     {"policy": "transport", "ttl": "5"}, {"other": "1"}],
)  # fmt: skip
def test_blob_policy_and_ttl_rules_are_400_invalid(h, query):
    response = upload(h, **query)
    assert (response.status, error(response)) == (400, "invalid")


def test_blob_unsafe_id_is_400_invalid(h):
    assert error(upload(h, blob="a%3Ab")) == "invalid"


def test_blob_ephemeral_expires_after_ttl_and_is_swept(h):
    response = upload(h, policy="ephemeral", ttl=str(30 * DAY))
    assert response.json()["expiresAt"] == T0 + 30 * DAY
    h.clock.advance(30 * DAY - 1)
    assert h.relay.sweep() == 0
    assert h.call("GET", "/graphs/g:team/blobs/b1").status == 200
    h.clock.advance(1)
    assert h.call("GET", "/graphs/g:team/blobs/b1").status == 404  # gone before the sweep
    h.events.clear()
    assert h.relay.sweep() == 1
    assert h.events == [BlobForgotten("g:team", "b1", "expired"), *h.events[1:]]
    assert h.kinds() == ["blob.forgotten", "poke"]
    assert h.relay.state.graphs["g:team"].blob_bytes == 0


def test_blob_transport_uploader_counts_as_one_receipt_and_last_ack_forgets(h):
    upload(h, policy="transport")
    assert h.call("POST", "/graphs/g:team/blobs/b1/ack").json() == {"ok": True, "forgotten": False}
    response = h.call("POST", "/graphs/g:team/blobs/b1/ack", ("bob", "b1"))
    assert response.json() == {"ok": True, "forgotten": True}
    assert h.call("GET", "/graphs/g:team/blobs/b1").status == 404


def test_blob_transport_sweeper_rechecks_against_the_current_member_set(h):
    h.host.join("team", "carol")
    upload(h, policy="transport")
    h.call("POST", "/graphs/g:team/blobs/b1/ack", ("bob", "b1"))
    assert h.relay.sweep() == 0  # carol has not acked
    h.host.leave("team", "carol")
    assert h.relay.sweep() == 1
    assert "b1" not in h.relay.state.graphs["g:team"].blobs


def test_blob_ack_of_a_retained_blob_changes_nothing(h):
    upload(h)
    before = state_bytes(h.relay)
    assert h.call("POST", "/graphs/g:team/blobs/b1/ack").json() == {"ok": True, "forgotten": False}
    assert state_bytes(h.relay) == before


def test_blob_delete_removes_and_reports_forgotten(h):
    upload(h)
    h.events.clear()
    assert h.call("DELETE", "/graphs/g:team/blobs/b1").json() == {"ok": True}
    assert h.events[0] == BlobForgotten("g:team", "b1", "deleted")
    assert h.relay.state.graphs["g:team"].blob_bytes == 0


@pytest.mark.parametrize(("method", "suffix"), [("GET", ""), ("DELETE", ""), ("POST", "/ack")])
def test_blob_missing_is_404_not_found(h, method, suffix):
    response = h.call(method, f"/graphs/u/blobs/nope{suffix}")
    assert (response.status, error(response)) == (404, "not-found")


def test_blob_upload_and_delete_need_write_but_read_and_ack_do_not(h):
    upload(h, policy="transport")
    h.host.set_capabilities("bob", "team", [])
    for response in [upload(h, blob="b2", who=("bob", "b1")),
                     h.call("DELETE", "/graphs/g:team/blobs/b1", ("bob", "b1"))]:  # fmt: skip
        assert (response.status, response.json()["need"]) == (403, "write")
    assert h.call("GET", "/graphs/g:team/blobs/b1", ("bob", "b1")).status == 200
    assert h.call("POST", "/graphs/g:team/blobs/b1/ack", ("bob", "b1")).json()["forgotten"] is True


def test_sweep_schedule_is_driven_by_the_caller():
    h = Harness()
    assert h.relay.next_sweep_at == T0 + MINUTE
    assert h.relay.sweep_if_due() is None
    h.clock.advance(MINUTE)
    assert h.relay.sweep_if_due() == 0
    assert h.relay.next_sweep_at == T0 + 2 * MINUTE


def test_sweep_interval_0_disables_the_built_in_sweeper():
    h = Harness(sweep_interval_ms=0)
    h.clock.advance(10 * DAY)
    assert (h.relay.next_sweep_at, h.relay.sweep_if_due()) == (None, None)
    assert h.relay.sweep() == 0  # an external job still can
