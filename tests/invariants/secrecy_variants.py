"""Planted breaks of what may leave a device (the ``secrecy`` invariant must catch each):
a construction that hands the host of an invite what opens its box (at every invite, or
only from the second on), a bundle sealed so that no passphrase is needed, a bundle or
an invite that carries the device's keypair, a registration that sends the relay a
private key (in a member the relay drops, so no stored state shows it: ``blindness``
cannot see it), a credential header that carries one, and records sealed with one
inside (the relay cannot see it; every other member's device can)."""

from simkit.client import Device
from simkit.protocol.b64 import b64url_encode
from simkit.protocol.keyring import Keyring, make_recovery_bundle, seal_with_code
from simkit.sim.variant import Variant


class DoorOpensTheBox(Device):
    def invite(self, graph_id):  # the key secret is the door code: the host holds both
        door = b64url_encode(self.entropy.token_bytes(16))
        ring = self.keyring(graph_id)
        box = seal_with_code(door, {"graph": graph_id, "keyring": ring.to_wire()},
                             entropy=self.entropy)  # fmt: skip
        return f"{door}.{door}", box


class SecondInviteOpensWithItsDoor(Device):
    def invite(self, graph_id):  # the first invite is sound; the second one leaks
        made = self.store.get("meta", "invites", 0) + 1
        self.store.put("meta", "invites", made)
        if made < 2:
            return super().invite(graph_id)
        return DoorOpensTheBox.invite(self, graph_id)


class InviteWithKeypair(Device):
    def invite(self, graph_id):  # the inviter's own keys travel in the box
        door, secret = (b64url_encode(self.entropy.token_bytes(16)) for _ in range(2))
        payload = {"graph": graph_id, "keyring": self.keyring(graph_id).to_wire(),
                   "device": self.keys.to_json()}  # fmt: skip
        return f"{door}.{secret}", seal_with_code(secret, payload, entropy=self.entropy)


class KeyInAHeader(Device):
    def headers(self):  # a debugging header left in: every request carries the key
        return {**super().headers(), "x-debug-key": self.keys.to_json()["wrap"]["d"]}


class SealsItsKey(Device):
    def as_sealed(self, record):  # every record carries the signing key to the members
        return {**super().as_sealed(record), "dbg": self.keys.to_json()["sign"]["d"]}


class BundleWithoutPassphrase(Device):
    def recovery_bundle(self, passphrase):  # sealed under an empty passphrase
        rings = {sk: Keyring.from_wire(w) for sk, w in self.store.rows("keyring").items()}
        return make_recovery_bundle("", rings, entropy=self.entropy)


class BundleWithKeypair(Device):
    def recovery_bundle(self, passphrase):  # the device's own keys travel in the bundle
        rings = {sk: Keyring.from_wire(w) for sk, w in self.store.rows("keyring").items()}
        payload = {"keyrings": {sk: r.to_wire() for sk, r in rings.items()},
                   "device": self.keys.to_json()}  # fmt: skip
        return seal_with_code(passphrase, payload, entropy=self.entropy)


class RegistersItsPrivateKey(Device):
    def registration(self, label=None, self_sig=True):  # a debug member left in
        return {**super().registration(label, self_sig), "debugKeys": self.keys.to_json()}


door_opens_the_box = Variant("door-opens-the-box", "invite secret = door", device=DoorOpensTheBox)
bundle_without_passphrase = Variant(
    "bundle-without-passphrase", "bundles sealed under ''", device=BundleWithoutPassphrase
)
bundle_with_keypair = Variant(
    "bundle-with-keypair", "bundles carry the device keys", device=BundleWithKeypair
)
registers_its_private_key = Variant(
    "registers-its-private-key", "PUT /devices sends the private keys",
    device=RegistersItsPrivateKey,
)  # fmt: skip
second_invite_opens = Variant(
    "second-invite-opens",
    "the second invite's secret is its door",
    device=SecondInviteOpensWithItsDoor,
)
invite_with_keypair = Variant(
    "invite-with-keypair", "invites carry the inviter's keys", device=InviteWithKeypair
)
key_in_a_header = Variant(
    "key-in-a-header", "a header carries the private key", device=KeyInAHeader
)
seals_its_key = Variant("seals-its-key", "records carry the signing key", device=SealsItsKey)
