"""Device keypairs and their public identity: JWKs, thumbprints, fingerprints,
self-attestations, pairing codes, and P1363 ECDSA signatures.

JWKs are exported in the member order WebCrypto's ``exportKey('jwk')`` uses
(key_ops, ext, kty, x, y, crv, d), so a stored roster looks like a browser's.
"""

import functools

import attrs
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from simkit.errors import EncodingError, KeyFormatError
from simkit.protocol.b64 import b64url_decode, b64url_encode
from simkit.protocol.canonical import canonical_json
from simkit.protocol.entropy import Entropy, default_entropy
from simkit.protocol.primitives import PBKDF2_ITERATIONS, pbkdf2_sha256, sha256
from simkit.protocol.sigcache import SIGNATURES

CURVE = ec.SECP256R1()
_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
_ECDSA = ec.ECDSA(hashes.SHA256(), deterministic_signing=True)
_PUBLIC_OPS = {"sign": ["verify"], "wrap": []}
_PRIVATE_OPS = {"sign": ["sign"], "wrap": ["deriveBits"]}
CROCKFORD_LOWER = "0123456789abcdefghjkmnpqrstvwxyz"


def generate_private_key(entropy: Entropy | None = None) -> ec.EllipticCurvePrivateKey:
    """A P-256 private key whose scalar comes from ``entropy`` (40 bytes, reduced)."""
    raw = int.from_bytes(default_entropy(entropy).token_bytes(40), "big")
    return ec.derive_private_key(raw % (_ORDER - 1) + 1, CURVE)


def _coordinate(n: int) -> str:
    return b64url_encode(n.to_bytes(32, "big"))


def public_jwk(key: ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey, usage: str) -> dict:
    """The public JWK WebCrypto exports for a signing (``sign``) or wrapping (``wrap``) key."""
    pub = key.public_key() if isinstance(key, ec.EllipticCurvePrivateKey) else key
    numbers = pub.public_numbers()
    return {
        "key_ops": list(_PUBLIC_OPS[usage]),
        "ext": True,
        "kty": "EC",
        "x": _coordinate(numbers.x),
        "y": _coordinate(numbers.y),
        "crv": "P-256",
    }


def private_jwk(key: ec.EllipticCurvePrivateKey, usage: str) -> dict:
    """The private JWK (for a device's own persisted state; never sent anywhere)."""
    jwk = public_jwk(key, usage)
    jwk["key_ops"] = list(_PRIVATE_OPS[usage])
    jwk["d"] = _coordinate(key.private_numbers().private_value)
    return jwk


def _member(jwk: object, name: str) -> str:
    if not isinstance(jwk, dict):
        raise KeyFormatError(f"JWK must be an object, got {type(jwk).__name__}")
    value = jwk.get(name)
    if not isinstance(value, str):
        raise KeyFormatError(f"JWK is missing its {name!r} member (a string)")
    return value


def _check_p256(jwk: object) -> None:
    if _member(jwk, "kty") != "EC":
        raise KeyFormatError(f"JWK kty must be 'EC', got {jwk['kty']!r}")  # type: ignore[index]
    if _member(jwk, "crv") != "P-256":
        raise KeyFormatError(f"JWK crv must be 'P-256', got {jwk['crv']!r}")  # type: ignore[index]


def _coordinate_bytes(value: str, name: str) -> bytes:
    try:
        raw = b64url_decode(value)
    except EncodingError as exc:
        raise KeyFormatError(f"JWK member {name!r}: {exc}") from None
    if len(raw) != 32:
        raise KeyFormatError(f"JWK member {name!r} must encode 32 bytes for P-256, got {len(raw)}")
    return raw


@functools.lru_cache(maxsize=65536)
def _load_point(x: str, y: str) -> ec.EllipticCurvePublicKey:
    point = b"\x04" + _coordinate_bytes(x, "x") + _coordinate_bytes(y, "y")
    try:
        return ec.EllipticCurvePublicKey.from_encoded_point(CURVE, point)
    except ValueError:
        raise KeyFormatError("JWK x and y are not a point on P-256") from None


def import_public_jwk(jwk: object) -> ec.EllipticCurvePublicKey:
    """Load a P-256 public JWK, checking members, sizes and that the point is on the curve.

    Loading is a pure function of (x, y), so it is cached: verifiers see the same
    roster keys again and again.
    """
    _check_p256(jwk)
    return _load_point(_member(jwk, "x"), _member(jwk, "y"))


def import_private_jwk(jwk: object) -> ec.EllipticCurvePrivateKey:
    """Load a P-256 private JWK and check that ``x``/``y`` belong to ``d``."""
    _check_p256(jwk)
    d = int.from_bytes(_coordinate_bytes(_member(jwk, "d"), "d"), "big")
    if not 0 < d < _ORDER:
        raise KeyFormatError("JWK member 'd' is not a valid P-256 scalar")
    key = ec.derive_private_key(d, CURVE)
    if key.public_key().public_numbers() != import_public_jwk(jwk).public_numbers():
        raise KeyFormatError("JWK members 'x'/'y' do not match 'd'")
    return key


def jwk_thumbprint(jwk: dict) -> str:
    """RFC 7638 thumbprint over the required EC members only (crv, kty, x, y)."""
    _check_p256(jwk)
    required = {name: _member(jwk, name) for name in ("crv", "kty", "x", "y")}
    return b64url_encode(sha256(canonical_json(required)))


def device_fingerprint(member_id: str, pub_jwk: dict, sig_jwk: dict) -> str:
    """base64url SHA-256 of ``skm-device-v1\\n<member>\\n<thumb(pub)>\\n<thumb(sig)>``."""
    text = f"skm-device-v1\n{member_id}\n{jwk_thumbprint(pub_jwk)}\n{jwk_thumbprint(sig_jwk)}"
    return b64url_encode(sha256(text.encode("utf-8")))


def self_attestation_bytes(fingerprint: str) -> bytes:
    """The bytes a device signs to attest its own key triple."""
    return f"skm-device-self-v1\n{fingerprint}".encode()


def pairing_code(fingerprint: str) -> str:
    """12 lowercase Crockford base32 characters over PBKDF2(fingerprint) taken to 64 bits.

    Mapping (docs/wire.md): the 8 derived bytes as a big-endian 64-bit integer;
    its top 60 bits, read 5 at a time from the most significant end, index the
    alphabet ``0-9a-z`` without i, l, o, u. The low 4 bits are dropped.
    """
    value = int.from_bytes(
        pbkdf2_sha256(fingerprint.encode("utf-8"), b"skm-pair-v1", PBKDF2_ITERATIONS, 8), "big"
    )
    value >>= 4
    return "".join(CROCKFORD_LOWER[(value >> (5 * (11 - i))) & 31] for i in range(12))


def sign_bytes(private_key: ec.EllipticCurvePrivateKey, data: bytes) -> str:
    """ECDSA P-256/SHA-256, deterministic (RFC 6979), as 64 raw bytes r||s in base64url."""
    r, s = decode_dss_signature(private_key.sign(data, _ECDSA))
    return b64url_encode(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def verify_bytes(sig_jwk: dict, data: bytes, signature: str) -> bool:
    """True when ``signature`` (P1363, base64url) verifies over ``data``.

    A malformed signature is simply not valid (False); a malformed JWK raises
    KeyFormatError because that is a roster problem, not a forgery. Verdicts are
    memoised by ``sigcache.SIGNATURES`` (a pure function's cache).
    """
    key = import_public_jwk(sig_jwk)
    memo = (sig_jwk["x"], sig_jwk["y"], data, signature)
    verdict = SIGNATURES.lookup(memo)
    if verdict is None:
        verdict = _verify(key, data, signature)
        SIGNATURES.remember(memo, verdict)
    return verdict


def _verify(key: ec.EllipticCurvePublicKey, data: bytes, signature: str) -> bool:
    try:
        raw = b64url_decode(signature)
    except EncodingError:
        return False
    if len(raw) != 64:
        return False
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        key.verify(der, data, _ECDSA)
    except InvalidSignature:
        return False
    return True


@attrs.frozen
class DeviceKeys:
    """A device's two keypairs: ECDH P-256 for wrapping, ECDSA P-256 for signing."""

    wrap_key: ec.EllipticCurvePrivateKey
    sign_key: ec.EllipticCurvePrivateKey

    @classmethod
    def generate(cls, entropy: Entropy | None = None) -> "DeviceKeys":
        entropy = default_entropy(entropy)
        return cls(generate_private_key(entropy), generate_private_key(entropy))

    @property
    def pub_jwk(self) -> dict:
        return public_jwk(self.wrap_key, "wrap")

    @property
    def sig_jwk(self) -> dict:
        return public_jwk(self.sign_key, "sign")

    def fingerprint(self, member_id: str) -> str:
        return device_fingerprint(member_id, self.pub_jwk, self.sig_jwk)

    def self_sig(self, member_id: str) -> str:
        """The selfSig published at registration."""
        return sign_bytes(self.sign_key, self_attestation_bytes(self.fingerprint(member_id)))

    def to_json(self) -> dict:
        """Private JWKs for the device's own persisted snapshot."""
        return {
            "wrap": private_jwk(self.wrap_key, "wrap"),
            "sign": private_jwk(self.sign_key, "sign"),
        }

    @classmethod
    def from_json(cls, data: dict) -> "DeviceKeys":
        return cls(import_private_jwk(data["wrap"]), import_private_jwk(data["sign"]))
