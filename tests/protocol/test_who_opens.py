"""Who can open each construction (issue 38, "secrets judged on every channel"): the
holder of its secret, and nobody else. The constructions are the WebCrypto-checked
ones (tests/interop); each test opens with the right secret and fails with the secret
another party holds: what the relay, the host of an invite or the finder of a bundle has."""

import json

import pytest

from simkit.errors import CryptoError, SimkitError
from simkit.protocol.entropy import SeededEntropy
from simkit.protocol.keyring import (
    Keyring,
    make_invite,
    make_recovery_bundle,
    open_invite,
    open_recovery_bundle,
    open_with_code,
    parse_invite,
)
from simkit.protocol.keys import (
    DeviceKeys,
    device_fingerprint,
    generate_private_key,
    pairing_code,
    public_jwk,
)
from simkit.protocol.records import open_blob, open_record, seal_blob, seal_record
from simkit.protocol.wrap import unwrap_graph_key, wrap_graph_key

ENTROPY = SeededEntropy(38, "who-opens")
KEY, OTHER_KEY = ENTROPY.token_bytes(32), ENTROPY.token_bytes(32)
ENVELOPE = {"v": 1, "r": {"id": "r1", "kind": "note", "data": {}, "at": 1, "by": "alice"}}


def test_a_record_opens_with_its_graph_key_in_its_slot_only():
    n, c = seal_record(KEY, "g:team", ENVELOPE, entropy=ENTROPY)
    assert open_record(KEY, "g:team", "r1", n, c)["r"]["id"] == "r1"
    for key, sk, slot in (
        (OTHER_KEY, "g:team", "r1"),
        (KEY, "g:other", "r1"),
        (KEY, "g:team", "r2"),
    ):
        with pytest.raises(SimkitError):
            open_record(key, sk, slot, n, c)


def test_a_blob_opens_with_its_graph_key_under_its_own_id_only():
    nonce, sealed = seal_blob(KEY, "g:team", "b1", b"blob: bytes", entropy=ENTROPY)
    assert open_blob(KEY, "g:team", "b1", nonce, sealed) == b"blob: bytes"
    for key, blob in ((OTHER_KEY, "b1"), (KEY, "b2")):
        with pytest.raises(CryptoError):
            open_blob(key, "g:team", blob, nonce, sealed)


def test_a_wrap_opens_with_its_recipients_private_key_only():
    recipient, other = generate_private_key(ENTROPY), generate_private_key(ENTROPY)
    wrapped = wrap_graph_key(KEY, public_jwk(recipient, "wrap"), entropy=ENTROPY)
    assert unwrap_graph_key(wrapped, recipient) == KEY
    with pytest.raises(CryptoError):
        unwrap_graph_key(wrapped, other)
    assert KEY.hex() not in wrapped and KEY not in wrapped.encode()  # the relay's view


def test_a_recovery_bundle_opens_with_its_passphrase_only_and_holds_no_keypair():
    ring = Keyring({1: KEY})
    bundle = make_recovery_bundle("correct horse", {"g:team": ring}, entropy=ENTROPY)
    assert open_recovery_bundle("correct horse", bundle)["g:team"].keys == {1: KEY}
    for guess in ("", "Correct horse", "correct horse "):
        with pytest.raises(CryptoError):
            open_with_code(guess, bundle)
    assert set(open_with_code("correct horse", bundle)) == {"keyrings"}


def test_an_invite_box_opens_with_the_key_secret_never_with_the_door_code():
    ring = Keyring({1: KEY})
    invite, box = make_invite("g:team", ring, entropy=ENTROPY)
    door, secret = parse_invite(invite)
    assert open_invite(invite, box) == ("g:team", ring)
    with pytest.raises(CryptoError):
        open_with_code(door, box)  # all the host of the invite ever learns
    assert door != secret


def test_a_pairing_code_is_anyones_to_compute_from_the_public_keys():
    """No secret goes into it: a party holding only what a roster serves (the member and
    the public JWKs, as JSON) computes the code the device shows for itself; another
    key or another member gives another code."""
    keys = DeviceKeys.generate(ENTROPY.fork("pairing"))
    served = json.loads(json.dumps({"pubJwk": keys.pub_jwk, "sigJwk": keys.sig_jwk}))
    assert "d" not in served["pubJwk"] and "d" not in served["sigJwk"]  # public members only
    shown = pairing_code(keys.fingerprint("alice"))
    computed = pairing_code(device_fingerprint("alice", served["pubJwk"], served["sigJwk"]))
    assert shown == computed and len(shown) == 12
    other = DeviceKeys.generate(ENTROPY.fork("pairing-other"))
    assert pairing_code(other.fingerprint("alice")) != shown
    assert pairing_code(keys.fingerprint("bob")) != shown
    stranger = public_jwk(generate_private_key(ENTROPY), "wrap")  # another wrapping key
    assert pairing_code(device_fingerprint("alice", stranger, served["sigJwk"])) != shown
