"""Interop with an independent implementation: Node's built-in WebCrypto.

Every construction a relay and its clients must agree on is computed on one side
and checked on the other, in both directions.
"""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from simkit.protocol import (
    DeviceKeys,
    Keyring,
    SeededEntropy,
    b64url_decode,
    b64url_encode,
    canonical_json,
    check_envelope,
    derived_tag,
    device_fingerprint,
    jwk_thumbprint,
    log_genesis,
    log_step,
    make_invite,
    open_blob,
    open_invite,
    open_record,
    pairing_code,
    private_jwk,
    seal_blob,
    seal_record,
    sign_record,
    unwrap_graph_key,
    verify_record,
    wrap_graph_key,
)
from simkit.protocol.canonical import canonical_json_text
from simkit.protocol.keyring import open_with_code
from simkit.protocol.primitives import hkdf_sha256
from tests.strategies import json_values

ENTROPY = SeededEntropy("interop")
DEVICE = DeviceKeys.generate(ENTROPY.fork("device"))
GRAPH_KEY = ENTROPY.fork("graph").token_bytes(32)
RECORD = {
    "id": "rec_1",
    "kind": "note",
    "data": {
        "title": "caf\u00e9 \U0001f600",
        "n": 1.5,
        "big": 1e21,
        "tiny": 5e-7,
        "list": [0, -0.0],
    },
    "at": 1_700_000_000_123,
    "by": "alice",
    "futureField": {"z": 1, "a": 2},
}


@settings(max_examples=2500)
@given(json_values)
def test_canonical_json_equals_javascript_for_generated_values(webcrypto, value):
    assert canonical_json_text(value) == webcrypto.call("canonical", value=value)["text"]


@given(st.integers(min_value=-(2**53), max_value=2**53) | st.floats())
def test_canonical_json_numbers_equal_javascript(webcrypto, number):
    assert canonical_json(number).decode() == webcrypto.call("canonical", value=number)["text"]


def test_record_sealed_and_signed_in_node_opens_and_verifies_in_simkit(webcrypto):
    sealed = webcrypto.call(
        "sealSign",
        graphKey=b64url_encode(GRAPH_KEY),
        storageKey="g:team",
        record=RECORD,
        deviceId="dev-1",
        sigPrivJwk=private_jwk(DEVICE.sign_key, "sign"),
    )
    envelope = open_record(GRAPH_KEY, "g:team", "rec_1", sealed["n"], sealed["c"])
    record = check_envelope(envelope, "rec_1")
    assert record == RECORD
    assert envelope["d"] == "dev-1"
    assert verify_record(DEVICE.sig_jwk, "g:team", record, envelope["s"])
    assert not verify_record(DEVICE.sig_jwk, "g:other", record, envelope["s"])


def test_record_sealed_and_signed_in_simkit_opens_and_verifies_in_node(webcrypto):
    envelope = {
        "v": 1,
        "r": RECORD,
        "d": "dev-1",
        "s": sign_record(DEVICE.sign_key, "g:team", RECORD),
    }
    n, c = seal_record(GRAPH_KEY, "g:team", envelope, entropy=ENTROPY)
    answer = webcrypto.call(
        "openVerify",
        graphKey=b64url_encode(GRAPH_KEY),
        storageKey="g:team",
        recordId="rec_1",
        n=n,
        c=c,
        sigPubJwk=DEVICE.sig_jwk,
    )
    assert answer["verified"] is True
    assert answer["envelope"] == canonical_json_text(envelope)


def test_graph_key_wrapped_in_node_unwraps_in_simkit(webcrypto):
    wrapped = webcrypto.call("wrap", graphKey=b64url_encode(GRAPH_KEY), pubJwk=DEVICE.pub_jwk)[
        "wrapped"
    ]
    assert unwrap_graph_key(wrapped, DEVICE.wrap_key) == GRAPH_KEY


def test_graph_key_wrapped_in_simkit_unwraps_in_node(webcrypto):
    wrapped = wrap_graph_key(GRAPH_KEY, DEVICE.pub_jwk, entropy=ENTROPY)
    answer = webcrypto.call("unwrap", wrapped=wrapped, privJwk=private_jwk(DEVICE.wrap_key, "wrap"))
    assert b64url_decode(answer["graphKey"]) == GRAPH_KEY


def test_device_identity_thumbprints_fingerprint_pairing_code_and_self_sig_match_node(webcrypto):
    answer = webcrypto.call(
        "identity",
        memberId="alice",
        pubJwk=DEVICE.pub_jwk,
        sigJwk=DEVICE.sig_jwk,
        selfSig=DEVICE.self_sig("alice"),
    )
    assert answer["thumbPub"] == jwk_thumbprint(DEVICE.pub_jwk)
    assert answer["thumbSig"] == jwk_thumbprint(DEVICE.sig_jwk)
    fingerprint = device_fingerprint("alice", DEVICE.pub_jwk, DEVICE.sig_jwk)
    assert answer["fingerprint"] == fingerprint
    assert answer["pairingCode"] == pairing_code(fingerprint)
    assert answer["selfSigOk"] is True


@given(st.text(min_size=1, max_size=20), st.text(max_size=40))
def test_derived_tag_matches_node(webcrypto, label, data):
    answer = webcrypto.call("derivedTag", key=b64url_encode(GRAPH_KEY), label=label, data=data)
    assert derived_tag(GRAPH_KEY, label, data) == answer["tag"]


@given(
    st.lists(
        st.tuples(
            st.integers(min_value=1, max_value=2**53),
            st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True),
            st.integers(min_value=0, max_value=2**53)
            | st.floats(min_value=0, allow_infinity=False),
        ),
        max_size=5,
    )
)
def test_log_chain_matches_node(webcrypto, entries):
    wire = [{"seq": s, "recordId": r, "rev": v} for s, r, v in entries]
    heads = webcrypto.call("logChain", storageKey="d:alice:bob", entries=wire)["heads"]
    ours = [log_genesis("d:alice:bob")]
    for seq, record_id, rev in entries:
        ours.append(log_step(ours[-1], seq, record_id, rev))
    assert ours == heads


def test_invite_sealed_in_simkit_opens_in_node_and_the_reverse(webcrypto):
    ring = Keyring({1: GRAPH_KEY, 2: bytes(range(32))})
    invite, box = make_invite("g:team", ring, entropy=ENTROPY)
    secret = invite.split(".")[1]
    payload = webcrypto.call("openBox", secret=secret, box=box)["payload"]
    assert json.loads(payload) == {"graph": "g:team", "keyring": ring.to_wire()}
    node_box = webcrypto.call(
        "sealBox", secret=secret, payload={"graph": "g:team", "keyring": ring.to_wire()}
    )
    assert open_invite(invite, node_box["box"]) == ("g:team", ring)
    assert open_with_code(secret, node_box["box"])["graph"] == "g:team"


def test_blob_sealed_in_simkit_opens_in_node(webcrypto):
    nonce, ciphertext = seal_blob(
        GRAPH_KEY, "u:alice", "blob-1", b"\x00binary\xff", entropy=ENTROPY
    )
    answer = webcrypto.call(
        "blob",
        graphKey=b64url_encode(GRAPH_KEY),
        storageKey="u:alice",
        blobId="blob-1",
        nonce=nonce,
        ciphertext=b64url_encode(ciphertext),
    )
    assert b64url_decode(answer["data"]) == b"\x00binary\xff"
    assert open_blob(GRAPH_KEY, "u:alice", "blob-1", nonce, ciphertext) == b"\x00binary\xff"


def test_hkdf_with_empty_salt_matches_webcrypto(webcrypto):
    answer = webcrypto.call(
        "hkdf", ikm=b64url_encode(GRAPH_KEY), salt="", info=b64url_encode(b"skm-wrap-v1"), length=32
    )
    assert hkdf_sha256(GRAPH_KEY, salt=b"", info=b"skm-wrap-v1") == b64url_decode(answer["okm"])
