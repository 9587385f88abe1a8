"""The signature-verification cache is a pure function's memo: it changes no verdict."""

from simkit.protocol import DeviceKeys, SeededEntropy
from simkit.protocol.keys import sign_bytes, verify_bytes
from simkit.protocol.sigcache import SIGNATURES


def test_cached_verdicts_equal_uncached_ones_for_valid_forged_and_malformed_signatures():
    keys = DeviceKeys.generate(SeededEntropy("sigcache"))
    other = DeviceKeys.generate(SeededEntropy("sigcache-other"))
    jwk = keys.sig_jwk
    good = sign_bytes(keys.sign_key, b"bytes")
    cases = [
        (jwk, b"bytes", good),
        (jwk, b"other bytes", good),
        (other.sig_jwk, b"bytes", good),
        (jwk, b"bytes", sign_bytes(other.sign_key, b"bytes")),
        (jwk, b"bytes", "not base64url!"),
        (jwk, b"bytes", good[:-4]),
    ]
    with SIGNATURES.switched(False):
        uncached = [verify_bytes(*case) for case in cases]
    with SIGNATURES.switched(True):
        first = [verify_bytes(*case) for case in cases]
        second = [verify_bytes(*case) for case in cases]
        assert SIGNATURES.hits == len(cases) and SIGNATURES.misses == len(cases)
    assert uncached == first == second == [True, False, False, False, False, False]


def test_the_cache_is_keyed_by_public_key_bytes_and_signature_and_bounded():
    keys = DeviceKeys.generate(SeededEntropy("sigcache-bound"))
    jwk = keys.sig_jwk
    with SIGNATURES.switched(True):
        SIGNATURES.max_entries = 2
        try:
            for data in (b"a", b"b", b"c"):
                verify_bytes(jwk, data, sign_bytes(keys.sign_key, data))
            assert len(SIGNATURES._verdicts) == 2  # first in, first out
        finally:
            SIGNATURES.max_entries = 1 << 18
