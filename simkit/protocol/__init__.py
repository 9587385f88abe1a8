"""simkit.protocol: the protocol's pure, byte-exact constructions.

No I/O, no clock, no global randomness: every random value comes from an
entropy source passed in (the OS CSPRNG when none is given).
"""

from simkit.protocol.b64 import b64url_decode, b64url_encode
from simkit.protocol.canonical import canonical_json, js_number, parse_json
from simkit.protocol.derived import checkpoint_record_id, derived_tag, personal_record_id
from simkit.protocol.entropy import Entropy, SeededEntropy, SystemEntropy
from simkit.protocol.ids import is_safe_id, storage_key
from simkit.protocol.keyring import (
    Keyring,
    make_invite,
    make_recovery_bundle,
    open_invite,
    open_recovery_bundle,
    parse_invite,
)
from simkit.protocol.keys import (
    DeviceKeys,
    device_fingerprint,
    generate_private_key,
    import_private_jwk,
    import_public_jwk,
    jwk_thumbprint,
    pairing_code,
    private_jwk,
    public_jwk,
    self_attestation_bytes,
)
from simkit.protocol.logchain import CHECKPOINT_STRIDE, log_genesis, log_step
from simkit.protocol.records import (
    ShapeError,
    check_envelope,
    open_blob,
    open_record,
    record_signing_bytes,
    seal_blob,
    seal_record,
    sign_record,
    verify_record,
)
from simkit.protocol.wrap import unwrap_graph_key, wrap_graph_key

__all__ = [
    "CHECKPOINT_STRIDE",
    "DeviceKeys",
    "Entropy",
    "Keyring",
    "SeededEntropy",
    "ShapeError",
    "SystemEntropy",
    "b64url_decode",
    "b64url_encode",
    "canonical_json",
    "check_envelope",
    "checkpoint_record_id",
    "derived_tag",
    "device_fingerprint",
    "generate_private_key",
    "import_private_jwk",
    "import_public_jwk",
    "is_safe_id",
    "js_number",
    "jwk_thumbprint",
    "log_genesis",
    "log_step",
    "make_invite",
    "make_recovery_bundle",
    "open_blob",
    "open_invite",
    "open_record",
    "open_recovery_bundle",
    "pairing_code",
    "parse_invite",
    "parse_json",
    "personal_record_id",
    "private_jwk",
    "public_jwk",
    "record_signing_bytes",
    "seal_blob",
    "seal_record",
    "self_attestation_bytes",
    "sign_record",
    "storage_key",
    "unwrap_graph_key",
    "verify_record",
    "wrap_graph_key",
]
