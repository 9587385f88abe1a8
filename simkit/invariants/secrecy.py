"""secrecy: everything that leaves a device, judged against what its receiver may learn.

``blindness`` scans what the relay stores; this judges every channel as things leave
the devices (``simkit.sim.channels``), against the spec's promises: the relay never
decrypts and never holds a graph key or a private key (What the service does, items 4
and 7), in any part of a request; no private key moves (Ceremonies, "Link a device"), so
what a device seals for the other members of a graph carries none; only the door code of
an invite goes to a server (Recovery bundle and invite), so the host cannot open what it
keeps; a recovery bundle is sealed under its passphrase and "carries graph keyrings only,
never a device keypair" (and an invite likewise); a pairing code is derived from the
device's public fingerprint alone.
"""

import base64
import json
from urllib.parse import unquote

from simkit.errors import SimkitError
from simkit.invariants.base import Invariant
from simkit.protocol.b64 import b64url_decode
from simkit.protocol.keyring import open_with_code
from simkit.protocol.records import open_blob, open_record
from simkit.sim.workload import PLAINTEXT_MARK


def _forms(raw: bytes) -> list[tuple[bytes, str]]:
    """How a secret of ``raw`` bytes may travel: base64url, base64, hex, itself."""
    return [
        (base64.urlsafe_b64encode(raw).rstrip(b"="), "base64url"),
        (base64.b64encode(raw).rstrip(b"="), "base64"),
        (raw.hex().encode(), "hex"),
        (raw, "raw bytes"),
    ]


class Secrecy(Invariant):
    """Each step (and at quiescence) judges what left the devices since the last check:

    - the relay: no request, in any part (method, path, query, headers, body), carries a
      graph key, a private key, a record's plaintext, the recovery passphrase or an
      invite's key secret (base64url, base64, hex or raw);
    - the members of a graph: no record or blob a device seals for them carries a private
      key, a passphrase or an invite's key secret;
    - the host of an invite: the box behind the door code does not open with the door
      code, and holds no key in clear; opened, it carries keyrings only;
    - a recovery bundle: holds no key in clear, does not open without its passphrase
      (an empty one), and opened, carries keyrings only (no device's private key);
    - a pairing code: holds no secret.

    Every box and bundle is judged. That one does not open without its secret is shown
    by its opening with its secret (a key derivation its maker already did and that is
    cached): a box sealed under a key derived from its secret opens with nothing else.
    Only a box that does not open so is tried with what must not open it (a derivation
    of its own, a tenth of a second)."""

    name = "secrecy"

    def __init__(self) -> None:
        self._private: dict[str, list[tuple[bytes, str]]] = {}  # device -> its private keys

    def step(self, world):
        return self._judge(world)

    def final(self, world):
        return self._judge(world)

    def _judge(self, world):
        channels = getattr(world, "channels", None)
        if channels is None:
            return []
        relay, host, bundles, codes = channels.drain()
        if not (relay or host or bundles or codes):
            return []
        secrets = self._secrets(world, channels)
        private = [(form, what) for form, what in secrets if _never_moves(what)]
        out = []
        if relay:
            sent = b"\0".join(_whole(request) for _, request in relay)
            out += self._scan(world, sent, secrets, "the relay received")
            sealed = b"\0".join(_sealed(world, device, request) for device, request in relay)
            out += self._scan(world, sealed, private, "the members of a graph receive, sealed,")
        for door, box, secret in host:
            out += self._scan(world, _text(box), secrets, "the host of an invite keeps")
            payload = self._opened(world, box, secret, door, "the box of an invite opens",
                                   "with its door code alone", out)  # fmt: skip
            out += self._scan(world, payload, private, "an invite carries")
        for passphrase, bundle in bundles:
            out += self._scan(world, _text(bundle), secrets, "a recovery bundle shows")
            payload = self._opened(world, bundle, passphrase, "", "a recovery bundle opens",
                                   "without its passphrase", out)  # fmt: skip
            out += self._scan(world, payload, private, "a recovery bundle carries")
        for device_id, code in codes:
            out += self._scan(world, code.encode(), secrets, f"{device_id}'s pairing code holds")
        return out

    def _secrets(self, world, channels) -> list[tuple[bytes, str]]:
        """Every secret of the world now, in each form it may travel in."""
        found: dict[bytes, str] = {}
        for device_id, slot in sorted(world.slots.items()):
            device = slot.device
            if device is None:
                continue
            for sk, wire in sorted(device.store.rows("keyring").items()):
                for epoch, key in sorted(wire["keys"].items()):
                    found[b64url_decode(key)] = f"the epoch-{epoch} key of {sk}"
            for raw, what in self._keys_of(device_id, device.keys):
                found[raw] = what
        out = [(form, f"{what} ({how})") for raw, what in found.items() for form, how in
               _forms(raw)]  # fmt: skip
        out.append((PLAINTEXT_MARK.strip().encode(), "record plaintext"))
        for secret in sorted(channels.secrets):
            out.append((secret.encode(), "a passphrase or an invite's key secret"))
        return out

    def _keys_of(self, device_id: str, keys) -> list[tuple[bytes, str]]:
        """A device's private keys (exported once: a device ID's keys are set once)."""
        if device_id not in self._private:
            jwk = keys.to_json()
            self._private[device_id] = [
                (b64url_decode(jwk["wrap"]["d"]), f"{device_id}'s wrapping private key"),
                (b64url_decode(jwk["sign"]["d"]), f"{device_id}'s signing private key"),
            ]
        return self._private[device_id]

    def _scan(self, world, sent: bytes, secrets, who: str):
        return [
            self.violation(world, f"{who} {what}")
            for form, what in secrets
            if form in sent
        ][:3]  # fmt: skip

    def _opened(self, world, box: dict, secret: str, wrong: str, what: str, how: str, out):
        """The box's payload, opened with its secret, as its receiver sees it (b""
        when it does not open); a violation in ``out`` when it opens with ``wrong``."""
        try:
            payload = json.dumps(open_with_code(secret, box)).encode()
        except (SimkitError, ValueError):
            pass
        else:  # sealed under its secret: it opens with another only if that is its secret
            if wrong == secret:
                out.append(self.violation(world, f"{what} {how}"))
            return payload
        try:  # not sealed under its secret: does it open with what must not open it?
            payload = open_with_code(wrong, box)
        except (SimkitError, ValueError):
            return b""
        out.append(self.violation(world, f"{what} {how}"))
        return json.dumps(payload).encode()


def _never_moves(what: str) -> bool:
    """The secrets no member of a graph may receive: private keys and the secrets of
    passphrases and invites (a graph key goes to the graph's members by design)."""
    return "private key" in what or "passphrase" in what


def _whole(request) -> bytes:
    """A request as the relay receives it: method, path, query, headers and body."""
    query = "&".join(f"{k}={v}" for k, v in sorted(request.query.items()))
    headers = "\n".join(f"{k}: {v}" for k, v in sorted(request.headers.items()))
    return f"{request.method} {request.path}?{query}\n{headers}\n\n".encode() + request.body


def _sealed(world, device_id: str, request) -> bytes:
    """What a request seals for the graph's members: each pushed record's envelope and
    an uploaded blob's plaintext, opened with the sender's keys (b"" for anything else,
    or what does not open: a construction that fails is the device model's to judge)."""
    parts = request.path.split("/")
    slot = world.slots.get(device_id)
    if request.method != "POST" or len(parts) < 4 or parts[1] != "graphs" or slot is None:
        return b""
    device = slot.device
    if device is None:
        return b""
    graph_id = unquote(parts[2])
    try:
        sk, ring = device.storage_key(graph_id), device.keyring(graph_id)
        if parts[3] == "push":
            return b"\0".join(
                json.dumps(
                    open_record(ring.keys[op["e"]], sk, op["recordId"], op["n"], op["c"])
                ).encode()
                for op in json.loads(request.body)["ops"]
                if op.get("e") in ring.keys
            )
        if parts[3] == "blobs" and len(parts) == 5:
            nonce = request.headers.get("x-blob-nonce", "")
            return open_blob(ring.keys[ring.current], sk, parts[4], nonce, request.body)
    except (SimkitError, ValueError, KeyError, TypeError):
        return b""
    return b""


def _text(value: dict) -> bytes:
    return json.dumps(value, sort_keys=True).encode()
