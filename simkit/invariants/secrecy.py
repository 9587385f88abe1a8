"""secrecy: everything that leaves a device, judged against what its receiver may learn.

``blindness`` scans what the relay stores; this judges every channel as things leave
the devices (``simkit.sim.channels``), against the spec's promises: the relay never
decrypts and never holds a graph key or a private key (What the service does, items 4
and 7), even in a member it drops; only the door code of an invite goes to a server
(Recovery bundle and invite), so the host cannot open what it keeps; a recovery bundle
is sealed under its passphrase and "carries graph keyrings only, never a device
keypair"; a pairing code is derived from the device's public fingerprint alone.
"""

import base64
import json

from simkit.errors import SimkitError
from simkit.invariants.base import Invariant
from simkit.protocol.b64 import b64url_decode
from simkit.protocol.keyring import open_with_code
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

    - the relay: no request carries a graph key, a private key, a record's plaintext, the
      recovery passphrase or an invite's key secret (base64url, base64, hex or raw);
    - the host of an invite: the box behind the door code does not open with the door
      code, and holds no key in clear;
    - a recovery bundle: holds no key in clear, does not open without its passphrase
      (an empty one), and opened, carries keyrings only (no device's private key);
    - a pairing code: holds no secret.

    The first box and the first bundle of a world are tried without their secret (a
    derivation costs a tenth of a second; a construction that leaks does so every
    time)."""

    name = "secrecy"

    def __init__(self) -> None:
        self._tried: set[str] = set()  # "host", "bundle": tried without the secret
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
        out = []
        if relay:
            out += self._scan(world, b"\0".join(relay), secrets, "the relay received")
        for door, box in host:
            out += self._scan(world, _text(box), secrets, "the host of an invite keeps")
            out += self._opens(world, "host", door, box, "with its door code alone")
        for passphrase, bundle in bundles:
            out += self._scan(world, _text(bundle), secrets, "a recovery bundle shows")
            out += self._opens(world, "bundle", "", bundle, "without its passphrase")
            out += self._keypair(world, passphrase, bundle, secrets)
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

    def _opens(self, world, kind: str, secret: str, box: dict, how: str):
        if kind in self._tried:
            return []
        self._tried.add(kind)
        try:
            open_with_code(secret, box)
        except (SimkitError, ValueError):
            return []
        what = "the box of an invite opens" if kind == "host" else "a recovery bundle opens"
        return [self.violation(world, f"{what} {how}")]

    def _keypair(self, world, passphrase: str, bundle: dict, secrets):
        """Opened with its passphrase (a derivation the importing device made already):
        keyrings only."""
        try:
            payload = json.dumps(open_with_code(passphrase, bundle)).encode()
        except (SimkitError, ValueError):
            return []
        private = [(form, what) for form, what in secrets if "private key" in what]
        return self._scan(world, payload, private, "a recovery bundle carries")


def _text(value: dict) -> bytes:
    return json.dumps(value, sort_keys=True).encode()
