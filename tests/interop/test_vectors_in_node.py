"""`simkit vectors` checked by Node's WebCrypto: the published vectors are what an
independent implementation computes from the same inputs."""

import json

from click.testing import CliRunner

from simkit.cli import main
from simkit.protocol import b64url_decode, canonical_json
from simkit.vectors import compute


def _public(jwk):
    return {k: jwk[k] for k in ("kty", "crv", "x", "y")}


def test_simkit_vectors_prints_the_vectors_document_as_json():
    result = CliRunner().invoke(main, ["vectors"])
    assert result.exit_code == 0
    assert json.loads(result.output) == json.loads(json.dumps(compute()))


def test_every_vector_is_reproduced_by_node_webcrypto(webcrypto):
    v = compute()
    device, rec = v["device"], v["record"]
    identity = webcrypto.call(
        "identity",
        memberId=device["memberId"],
        pubJwk=_public(device["wrapPrivateJwk"]),
        sigJwk=_public(device["signPrivateJwk"]),
        selfSig=device["selfSig"],
    )
    assert identity == {
        "thumbPub": device["thumbprintPub"],
        "thumbSig": device["thumbprintSig"],
        "fingerprint": device["fingerprint"],
        "pairingCode": device["pairingCode"],
        "selfSigOk": True,
    }
    assert webcrypto.call("canonical", value=rec["record"])["text"] == v["canonicalJson"]
    opened = webcrypto.call(
        "openVerify",
        graphKey=rec["graphKey"],
        storageKey=rec["storageKey"],
        recordId=rec["record"]["id"],
        n=rec["n"],
        c=rec["c"],
        sigPubJwk=_public(device["signPrivateJwk"]),
    )
    assert opened["verified"] is True
    assert json.loads(opened["envelope"])["r"] == json.loads(canonical_json(rec["record"]))
    unwrapped = webcrypto.call("unwrap", wrapped=v["wrap"], privJwk=device["wrapPrivateJwk"])
    assert unwrapped["graphKey"] == rec["graphKey"]
    blob = webcrypto.call(
        "blob", graphKey=rec["graphKey"], storageKey=rec["storageKey"], **v["blob"]
    )
    assert b64url_decode(blob["data"]) == b"blob bytes"
    derived = v["derived"]
    assert (
        derived["tag(skm-pid-v1, 'x')"]
        == webcrypto.call("derivedTag", key=rec["graphKey"], label="skm-pid-v1", data="x")["tag"]
    )
    assert (
        derived["personalRecordId(settings, theme)"]
        == "p_"
        + webcrypto.call(
            "derivedTag", key=rec["graphKey"], label="skm-pid-v1", data='["settings","theme"]'
        )["tag"]
    )
    assert (
        derived["checkpointRecordId(dev-1)"]
        == webcrypto.call("derivedTag", key=rec["graphKey"], label="skm-ckpt-v1", data="dev-1")[
            "tag"
        ]
    )
    chain = v["logChain"]
    heads = webcrypto.call("logChain", storageKey=chain["storageKey"], entries=chain["entries"])
    assert heads["heads"] == chain["heads"]
    bundle = v["recoveryBundle"]
    payload = webcrypto.call("openBox", secret=bundle["passphrase"], box=bundle["bundle"])
    keyrings = json.loads(payload["payload"])["keyrings"]
    assert keyrings[rec["storageKey"]]["keys"]["1"] == rec["graphKey"]
    invite = v["invite"]
    payload = webcrypto.call("openBox", secret=invite["invite"].split(".")[1], box=invite["box"])
    assert json.loads(payload["payload"])["graph"] == "g:team"
