"""Sealing, opening, signing and verifying records and blobs (spec: Cryptographic
constructions fixed by the interface; Signature rule)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simkit.errors import CryptoError, KeyFormatError
from simkit.protocol import (
    DeviceKeys,
    SeededEntropy,
    ShapeError,
    b64url_decode,
    b64url_encode,
    canonical_json,
    check_envelope,
    open_blob,
    open_record,
    parse_json,
    record_signing_bytes,
    seal_blob,
    seal_record,
    sign_record,
    verify_record,
)
from tests.strategies import json_values

DEVICE = DeviceKeys.generate(SeededEntropy("records"))
KEY = SeededEntropy("records-key").token_bytes(32)
ids = st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True)
records = st.fixed_dictionaries(
    {
        "id": ids,
        "kind": st.sampled_from(["note", "task"]),
        "data": st.dictionaries(st.text(max_size=5), json_values, max_size=4),
        "at": st.integers(min_value=0, max_value=2**53 - 2),  # at + 1 stays a safe integer
        "by": ids,
    }
)


def _sealed(record, storage_key="g:team"):
    envelope = {
        "v": 1,
        "r": record,
        "d": "dev",
        "s": sign_record(DEVICE.sign_key, storage_key, record),
    }
    n, c = seal_record(KEY, storage_key, envelope, entropy=SeededEntropy(1))
    return envelope, n, c


def test_signing_bytes_are_label_storage_key_and_canonical_record():
    record = {"b": 1, "a": "x"}
    assert record_signing_bytes("u:alice", record) == b'skm-record-v1\nu:alice\n{"a":"x","b":1}'


@given(records)
def test_sealed_record_round_trips_and_verifies(record):
    envelope, n, c = _sealed(record)
    opened = open_record(KEY, "g:team", record["id"], n, c)
    as_javascript_sees_it = parse_json(canonical_json(envelope))  # NaN and infinities become null
    assert opened == as_javascript_sees_it
    assert check_envelope(opened, record["id"]) == as_javascript_sees_it["r"]
    assert verify_record(DEVICE.sig_jwk, "g:team", opened["r"], opened["s"])


@given(records, st.sampled_from(["storage_key", "record_id", "nonce", "ciphertext"]), st.data())
def test_opening_fails_when_slot_graph_nonce_or_any_ciphertext_byte_changes(record, change, data):
    _, n, c = _sealed(record)
    storage_key, record_id = "g:team", record["id"]
    if change == "storage_key":
        storage_key = "g:other"
    elif change == "record_id":
        record_id = record_id + "x" if len(record_id) < 64 else "other"
    elif change == "nonce":
        raw = bytearray(b64url_decode(n))
        raw[data.draw(st.integers(0, 11))] ^= 1 << data.draw(st.integers(0, 7))
        n = b64url_encode(bytes(raw))
    else:
        raw = bytearray(b64url_decode(c))
        raw[data.draw(st.integers(0, len(raw) - 1))] ^= 1 << data.draw(st.integers(0, 7))
        c = b64url_encode(bytes(raw))
    with pytest.raises(CryptoError):
        open_record(KEY, storage_key, record_id, n, c)


@given(records, st.data())
def test_verification_fails_when_any_byte_of_record_or_signature_changes(record, data):
    signature = sign_record(DEVICE.sign_key, "g:team", record)
    if data.draw(st.booleans()):
        raw = bytearray(b64url_decode(signature))
        raw[data.draw(st.integers(0, 63))] ^= 1 << data.draw(st.integers(0, 7))
        assert not verify_record(DEVICE.sig_jwk, "g:team", record, b64url_encode(bytes(raw)))
    else:
        changed = dict(record, at=record["at"] + 1)
        assert not verify_record(DEVICE.sig_jwk, "g:team", changed, signature)


def test_unknown_record_members_are_covered_by_the_signature():
    record = {"id": "r", "kind": "note", "data": {}, "at": 1, "by": "alice", "extra": 1}
    signature = sign_record(DEVICE.sign_key, "g:team", record)
    stripped = {k: v for k, v in record.items() if k != "extra"}
    assert verify_record(DEVICE.sig_jwk, "g:team", record, signature)
    assert not verify_record(DEVICE.sig_jwk, "g:team", stripped, signature)


def test_signature_is_64_raw_bytes_not_der():
    assert len(b64url_decode(sign_record(DEVICE.sign_key, "u:a", {"x": 1}))) == 64


def test_malformed_signature_is_invalid_not_an_error():
    assert not verify_record(DEVICE.sig_jwk, "u:a", {"x": 1}, "not+base64")
    assert not verify_record(DEVICE.sig_jwk, "u:a", {"x": 1}, b64url_encode(b"short"))


@pytest.mark.parametrize(
    ("envelope", "rule"),
    [
        ({"v": 2, "r": {}}, "v must be 1"),
        ({"v": True, "r": {}}, "v must be 1"),
        ({"v": 1, "r": []}, "r must be a record"),
        (
            {"v": 1, "r": {"id": "other", "kind": "k", "data": {}, "at": 1, "by": "a"}},
            "does not name its slot",
        ),
        ({"v": 1, "r": {"id": "r", "kind": "", "data": {}, "at": 1, "by": "a"}}, "kind"),
        (
            {"v": 1, "r": {"id": "r", "kind": "k", "data": [], "at": 1, "by": "a"}},
            "data must be an object",
        ),
        ({"v": 1, "r": {"id": "r", "kind": "k", "data": {}, "at": "1", "by": "a"}}, "at must be"),
        ({"v": 1, "r": {"id": "r", "kind": "k", "data": {}, "at": 1, "by": "a:b"}}, "by must be"),
        (
            {
                "v": 1,
                "r": {"id": "r", "kind": "k", "data": {}, "at": 1, "by": "a", "deleted": False},
            },
            "deleted",
        ),
        (
            {
                "v": 1,
                "r": {
                    "id": "r",
                    "kind": "k",
                    "data": {"x": 1},
                    "at": 1,
                    "by": "a",
                    "deleted": True,
                },
            },
            "tombstone",
        ),
        (
            {"v": 1, "r": {"id": "r", "kind": "k", "data": {}, "at": 1, "by": "a"}, "s": 5},
            "s must be a string",
        ),
    ],
)
def test_envelope_shape_violations_are_named(envelope, rule):
    with pytest.raises(ShapeError, match=rule):
        check_envelope(envelope, "r")


def test_ciphertext_that_is_not_json_is_a_shape_error():
    from simkit.protocol.primitives import aes_gcm_seal
    from simkit.protocol.records import record_aad

    nonce = bytes(12)
    c = aes_gcm_seal(KEY, nonce, b"not json", record_aad("u:a", "r"))
    with pytest.raises(ShapeError, match="not JSON"):
        open_record(KEY, "u:a", "r", b64url_encode(nonce), b64url_encode(c))


def test_wrong_key_size_is_a_clear_error():
    with pytest.raises(KeyFormatError, match="32 bytes"):
        seal_record(b"short", "u:a", {"v": 1, "r": {"id": "r"}})


@given(st.binary(max_size=2000))
def test_blob_round_trips_and_is_bound_to_its_graph_and_id(data):
    nonce, ciphertext = seal_blob(KEY, "u:a", "b1", data, entropy=SeededEntropy(2))
    assert open_blob(KEY, "u:a", "b1", nonce, ciphertext) == data
    with pytest.raises(CryptoError):
        open_blob(KEY, "u:a", "b2", nonce, ciphertext)
    with pytest.raises(CryptoError):
        open_blob(KEY, "u:b", "b1", nonce, ciphertext)
