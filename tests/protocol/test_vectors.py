"""Published test vectors for the primitives the constructions are built on."""

import hashlib

from simkit.protocol import b64url_encode, jwk_thumbprint
from simkit.protocol.primitives import aes_gcm_open, aes_gcm_seal, hkdf_sha256, pbkdf2_sha256


def test_hkdf_sha256_rfc5869_test_case_1():
    okm = hkdf_sha256(
        bytes([0x0B] * 22),
        salt=bytes(range(0x0D)),
        info=bytes(range(0xF0, 0xFA)),
        length=42,
    )
    assert okm.hex() == (
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    )


def test_pbkdf2_hmac_sha256_rfc7914_section_11():
    assert pbkdf2_sha256(b"passwd", b"salt", 1, 64).hex() == (
        "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
        "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
    )
    assert pbkdf2_sha256(b"Password", b"NaCl", 80000, 64).hex() == (
        "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"
        "a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d"
    )


# The GCM specification's Test Case 16 (AES-256, 96-bit IV, with AAD), as in NIST's GCM vectors.
GCM_KEY = bytes.fromhex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
GCM_IV = bytes.fromhex("cafebabefacedbaddecaf888")
GCM_AAD = bytes.fromhex("feedfacedeadbeeffeedfacedeadbeefabaddad2")
GCM_PT = bytes.fromhex(
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
    "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
)
GCM_CT_TAG = bytes.fromhex(
    "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
    "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
    "76fc6ece0f4e1768cddf8853bb2d551b"
)


def test_aes_256_gcm_nist_vector_seal_appends_tag_like_webcrypto():
    assert aes_gcm_seal(GCM_KEY, GCM_IV, GCM_PT, GCM_AAD) == GCM_CT_TAG


def test_aes_256_gcm_nist_vector_opens():
    assert aes_gcm_open(GCM_KEY, GCM_IV, GCM_CT_TAG, GCM_AAD, "vector") == GCM_PT


P256_JWK = {
    "kty": "EC",
    "crv": "P-256",
    "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
    "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
    "kid": "Public key used in JWS spec Appendix A.3 example",
    "use": "sig",
    "key_ops": ["verify"],
    "ext": True,
}


def test_jwk_thumbprint_rfc7638_rules_on_a_p256_jwk():
    # RFC 7638 section 3.2: required members only, lexicographic order, no whitespace.
    expected_input = (
        '{"crv":"P-256","kty":"EC",'
        '"x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",'
        '"y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}'
    )
    assert jwk_thumbprint(P256_JWK) == b64url_encode(
        hashlib.sha256(expected_input.encode()).digest()
    )


def test_jwk_thumbprint_ignores_optional_members_and_member_order():
    required = {k: P256_JWK[k] for k in ("y", "x", "kty", "crv")}
    assert jwk_thumbprint(required) == jwk_thumbprint(P256_JWK)
