"""Device keys, JWKs, wraps, derived IDs, keyrings and determinism."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simkit.errors import CryptoError, KeyFormatError, ProtocolError
from simkit.protocol import (
    DeviceKeys,
    Keyring,
    SeededEntropy,
    b64url_decode,
    b64url_encode,
    checkpoint_record_id,
    derived_tag,
    import_private_jwk,
    import_public_jwk,
    is_safe_id,
    make_invite,
    make_recovery_bundle,
    open_invite,
    open_recovery_bundle,
    pairing_code,
    parse_invite,
    personal_record_id,
    seal_record,
    sign_record,
    unwrap_graph_key,
    wrap_graph_key,
)
from simkit.protocol.keys import generate_private_key

DEVICE = DeviceKeys.generate(SeededEntropy("keys"))
OTHER = DeviceKeys.generate(SeededEntropy("other"))
KEY = SeededEntropy("graph").token_bytes(32)


def test_a_private_key_draws_its_scalar_from_the_whole_p256_group():
    """Cryptographic constructions (P-256): a device's private scalar is drawn over
    [1, n - 1]; one drawn from a small range (every device alike, or guessable) would
    let anyone open every wrap. 32 draws: each scalar above 2**200 (an honest one is
    below it with odds 2**-56), all distinct."""
    scalars = [
        generate_private_key(SeededEntropy(f"scalar{i}")).private_numbers().private_value
        for i in range(32)
    ]
    assert all(2**200 < s < 2**256 for s in scalars)
    assert len(set(scalars)) == len(scalars)


def test_exported_jwks_have_webcrypto_members_and_order():
    assert list(DEVICE.sig_jwk) == ["key_ops", "ext", "kty", "x", "y", "crv"]
    assert DEVICE.sig_jwk["key_ops"] == ["verify"]
    assert DEVICE.pub_jwk["key_ops"] == []


def test_private_jwks_round_trip_through_the_device_snapshot():
    restored = DeviceKeys.from_json(DEVICE.to_json())
    assert restored.sig_jwk == DEVICE.sig_jwk
    assert restored.pub_jwk == DEVICE.pub_jwk


@pytest.mark.parametrize(
    ("mutate", "rule"),
    [
        (lambda j: j.pop("x"), "missing its 'x'"),
        (lambda j: j.update(crv="P-384"), "crv must be 'P-256'"),
        (lambda j: j.update(kty="RSA"), "kty must be 'EC'"),
        (lambda j: j.update(x=b64url_encode(bytes(31))), "32 bytes"),
        (lambda j: j.update(y="!!"), "JWK member 'y'"),
        (lambda j: j.update(y=b64url_encode(bytes(32))), "not a point on P-256"),
    ],
)
def test_bad_public_jwks_are_refused_with_the_rule(mutate, rule):
    jwk = dict(DEVICE.sig_jwk)
    mutate(jwk)
    with pytest.raises(KeyFormatError, match=rule):
        import_public_jwk(jwk)


def test_private_jwk_whose_public_members_do_not_match_is_refused():
    jwk = DEVICE.to_json()["sign"] | {"x": OTHER.sig_jwk["x"], "y": OTHER.sig_jwk["y"]}
    with pytest.raises(KeyFormatError, match="do not match"):
        import_private_jwk(jwk)


def test_jwk_that_is_not_an_object_is_refused():
    with pytest.raises(KeyFormatError, match="must be an object"):
        import_public_jwk("jwk")


@given(st.binary(min_size=32, max_size=32))
def test_wrap_round_trips_only_for_the_recipient(graph_key):
    wrapped = wrap_graph_key(graph_key, DEVICE.pub_jwk, entropy=SeededEntropy(graph_key))
    assert set(wrapped) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert unwrap_graph_key(wrapped, DEVICE.wrap_key) == graph_key
    with pytest.raises(CryptoError):
        unwrap_graph_key(wrapped, OTHER.wrap_key)


@pytest.mark.parametrize("wrapped", ["", "!!", b64url_encode(b"[]"), b64url_encode(b'{"epk":"x"}')])
def test_malformed_wraps_are_crypto_errors(wrapped):
    with pytest.raises(CryptoError):
        unwrap_graph_key(wrapped, DEVICE.wrap_key)


@pytest.mark.parametrize("size", [16, 31, 33])
def test_unwrapping_refuses_a_wrap_that_holds_a_key_of_another_size(size, monkeypatch):
    """Key wrapping seals "the 32-byte graph key": a wrap that opens to any other size
    (a relay may hand out any wrap it can seal to the device's public key) is refused."""
    monkeypatch.setattr("simkit.protocol.wrap.require_key", lambda key: key)
    wrapped = wrap_graph_key(bytes(size), DEVICE.pub_jwk, entropy=SeededEntropy("w"))
    monkeypatch.undo()
    with pytest.raises(CryptoError, match="expected 32"):
        unwrap_graph_key(wrapped, DEVICE.wrap_key)


def test_wrapping_needs_a_256_bit_key():
    with pytest.raises(KeyFormatError, match="32 bytes"):
        wrap_graph_key(bytes(16), DEVICE.pub_jwk)


def test_derived_tag_is_132_bits_of_base64url():
    tag = derived_tag(KEY, "skm-pid-v1", "x")
    assert len(tag) == 22 and is_safe_id(tag)


def test_personal_record_id_is_deterministic_unlinkable_and_safe():
    pid = personal_record_id(KEY, "settings", "theme")
    assert pid == personal_record_id(KEY, "settings", "theme")
    assert pid.startswith("p_") and is_safe_id(pid)
    assert pid != personal_record_id(KEY, "settings", "font")
    assert pid != personal_record_id(bytes(32), "settings", "theme")


def test_checkpoint_record_id_depends_on_key_and_device_only():
    cid = checkpoint_record_id(KEY, "dev-1")
    assert is_safe_id(cid) and "dev-1" not in cid
    assert cid != checkpoint_record_id(KEY, "dev-2")
    assert cid != checkpoint_record_id(bytes(32), "dev-1")


def test_pairing_code_is_12_crockford_characters():
    code = pairing_code(DEVICE.fingerprint("alice"))
    assert len(code) == 12
    assert set(code) <= set("0123456789abcdefghjkmnpqrstvwxyz")


def test_recovery_bundle_carries_keyrings_only_and_refuses_a_wrong_passphrase():
    rings = {"g:team": Keyring({1: KEY, 2: bytes(32)})}
    bundle = make_recovery_bundle("correct horse", rings, entropy=SeededEntropy(3))
    assert set(bundle) == {"v", "salt", "sealed"} and bundle["v"] == 1
    assert len(b64url_decode(bundle["salt"])) == 16
    assert open_recovery_bundle("correct horse", bundle) == rings
    with pytest.raises(CryptoError):
        open_recovery_bundle("wrong", bundle)


def test_invite_sends_only_the_door_code_and_opens_with_the_secret():
    invite, box = make_invite("g:team", Keyring({1: KEY}), entropy=SeededEntropy(4))
    door, secret = parse_invite(invite)
    assert door not in str(box) and secret not in str(box)
    assert open_invite(invite, box) == ("g:team", Keyring({1: KEY}))
    with pytest.raises(CryptoError):
        open_invite(f"{door}.{b64url_encode(bytes(16))}", box)


@pytest.mark.parametrize("invite", ["nodot", ".x", "x.", "a!.b"])
def test_malformed_invites_are_refused(invite):
    with pytest.raises(ProtocolError):
        parse_invite(invite)


def test_keyring_keeps_old_epochs_and_current_is_the_highest():
    ring = Keyring().with_key(1, KEY).with_key(2, bytes(32)).with_key(1, bytes(32))
    assert ring.current == 2 and ring.keys[1] == KEY
    assert Keyring.from_wire(ring.to_wire()) == ring


def _everything(seed):
    entropy = SeededEntropy(seed)
    device = DeviceKeys.generate(entropy)
    record = {"id": "r", "kind": "k", "data": {}, "at": 1, "by": "a"}
    envelope = {"v": 1, "r": record, "d": "d", "s": sign_record(device.sign_key, "u:a", record)}
    return (
        device.sig_jwk,
        device.self_sig("a"),
        seal_record(KEY, "u:a", envelope, entropy=entropy),
        wrap_graph_key(KEY, device.pub_jwk, entropy=entropy),
        make_recovery_bundle("p", {"u:a": Keyring({1: KEY})}, entropy=entropy),
    )


def test_same_seed_gives_the_same_bytes_signatures_included():
    assert _everything(7) == _everything(7)
    assert _everything(7) != _everything(8)


def test_seeded_entropy_forks_are_independent_of_draws_on_the_parent():
    a, b = SeededEntropy(1), SeededEntropy(1)
    a.token_bytes(100)
    assert a.fork("x").token_bytes(16) == b.fork("x").token_bytes(16)


@given(st.binary(min_size=1, max_size=8), st.integers(1, 40), st.integers(0, 5))
def test_seeded_randoms_equal_the_same_number_of_single_draws(seed, k, before):
    batched, single = SeededEntropy(seed, "s"), SeededEntropy(seed, "s")
    for stream in (batched, single):
        stream.token_bytes(before)  # any offset into the stream
    assert batched.randoms(k) == [single.random() for _ in range(k)]
    assert batched.token_bytes(9) == single.token_bytes(9)  # both streams end in one place
