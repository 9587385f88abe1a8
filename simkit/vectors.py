"""Every byte-exact construction computed on fixed inputs.

``simkit vectors`` prints this document so a user can diff simkit against
another implementation. Inputs that are random in real use (keys, nonces, salts,
ephemeral keys) come from a fixed seed and are printed alongside.
"""

from simkit.protocol import (
    DeviceKeys,
    Keyring,
    SeededEntropy,
    b64url_encode,
    canonical_json,
    checkpoint_record_id,
    derived_tag,
    jwk_thumbprint,
    log_genesis,
    log_step,
    make_invite,
    make_recovery_bundle,
    pairing_code,
    personal_record_id,
    private_jwk,
    seal_blob,
    seal_record,
    sign_record,
    storage_key,
    wrap_graph_key,
)
from simkit.protocol.records import record_signing_bytes

SEED = "simkit-vectors-v1"


def compute() -> dict:
    """The vectors document (a JSON-able dict, stable for a given simkit version)."""
    entropy = SeededEntropy(SEED)
    device = DeviceKeys.generate(entropy.fork("device"))
    graph_key = entropy.fork("graph-key").token_bytes(32)
    member = "alice"
    sk = storage_key("g:team", member)
    record = {
        "id": "rec_1",
        "kind": "note",
        "data": {"title": "café 😀", "n": 1.5, "big": 1e21, "small": 5e-7, "10": 1, "9": 2},
        "at": 1_700_000_000_123,
        "by": member,
    }
    signature = sign_record(device.sign_key, sk, record)
    envelope = {"v": 1, "r": record, "d": "dev-1", "s": signature}
    n, c = seal_record(graph_key, sk, envelope, entropy=entropy.fork("record-nonce"))
    blob_nonce, blob_ct = seal_blob(graph_key, sk, "blob-1", b"blob bytes", entropy=entropy)
    fingerprint = device.fingerprint(member)
    chain = [log_genesis(sk)]
    entries = [(1, "rec_1", 1_700_000_000_123), (3, "rec_2", 1.5), (64, "rec_1", 2**53)]
    for seq, record_id, rev in entries:
        chain.append(log_step(chain[-1], seq, record_id, rev))
    keyring = Keyring({1: graph_key})
    invite, invite_box = make_invite("g:team", keyring, entropy=entropy.fork("invite"))
    return {
        "seed": SEED,
        "storageKeys": {
            gid: storage_key(gid, member) for gid in ("u", "g:team", "d:bob", "d:aaron")
        },
        "canonicalJson": canonical_json(record).decode("utf-8"),
        "device": {
            "memberId": member,
            "wrapPrivateJwk": private_jwk(device.wrap_key, "wrap"),
            "signPrivateJwk": private_jwk(device.sign_key, "sign"),
            "thumbprintPub": jwk_thumbprint(device.pub_jwk),
            "thumbprintSig": jwk_thumbprint(device.sig_jwk),
            "fingerprint": fingerprint,
            "selfSig": device.self_sig(member),
            "pairingCode": pairing_code(fingerprint),
        },
        "record": {
            "graphKey": b64url_encode(graph_key),
            "storageKey": sk,
            "record": record,
            "signingBytes": record_signing_bytes(sk, record).decode("utf-8"),
            "signature": signature,
            "n": n,
            "c": c,
        },
        "blob": {"blobId": "blob-1", "nonce": blob_nonce, "ciphertext": b64url_encode(blob_ct)},
        "wrap": wrap_graph_key(graph_key, device.pub_jwk, entropy=entropy.fork("wrap")),
        "derived": {
            "tag(skm-pid-v1, 'x')": derived_tag(graph_key, "skm-pid-v1", "x"),
            "personalRecordId(settings, theme)": personal_record_id(graph_key, "settings", "theme"),
            "checkpointRecordId(dev-1)": checkpoint_record_id(graph_key, "dev-1"),
        },
        "logChain": {
            "storageKey": sk,
            "entries": [{"seq": s, "recordId": r, "rev": v} for s, r, v in entries],
            "heads": chain,
        },
        "recoveryBundle": {
            "passphrase": "correct horse battery staple",
            "bundle": make_recovery_bundle(
                "correct horse battery staple", {sk: keyring}, entropy=entropy.fork("bundle")
            ),
        },
        "invite": {"invite": invite, "box": invite_box},
    }
