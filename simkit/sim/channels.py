"""What leaves a device, by who receives it (the ``secrecy`` invariant judges it).

The relay gets every request a device sends, whole (method, path, query, headers,
body), as it leaves (a rogue's raw requests take another transport); the members of a
graph get the records and blobs a device seals into it (kept as the requests that carry
them, opened by the judge with the sender's keys);
the host of an invite gets its door code and the sealed box behind it (the key secret
stays in the invite string the invitee is handed); whoever holds a recovery bundle
without its passphrase gets the bundle; the other device of a pairing sees the code
the user reads out. Each is kept here as it leaves, until the invariant has judged it
(the relay's bytes are kept only that long: a long run's memory stays flat).
"""

import attrs


@attrs.define
class Channels:
    relay: list[tuple[str, object]] = attrs.Factory(list)  # (device, request) not yet judged
    host: list[tuple[str, dict, str]] = attrs.Factory(list)  # (door code, box, key secret)
    bundles: list[tuple[str, dict]] = attrs.Factory(list)  # (passphrase, bundle) made
    codes: list[tuple[str, str]] = attrs.Factory(list)  # (device, pairing code) shown
    # the secrets no receiver but their own may learn: passphrases, invites' key secrets
    secrets: set[str] = attrs.Factory(set)

    def to_relay(self, device_id: str, request) -> None:
        """A request as it leaves ``device_id`` (a ``simkit.protocol.http.Request``)."""
        self.relay.append((device_id, request))

    def to_host(self, door: str, box: dict, secret: str) -> None:
        """An invite: its door code and box go to the host; ``secret`` to the invitee."""
        self.host.append((door, box, secret))
        self.secrets.add(secret)

    def bundle_made(self, passphrase: str, bundle: dict) -> None:
        self.bundles.append((passphrase, bundle))
        self.secrets.add(passphrase)

    def code_shown(self, device_id: str, code: str) -> None:
        self.codes.append((device_id, code))

    def drain(self) -> tuple[list[tuple[str, object]], list, list, list]:
        """Everything sent since the last call (the secrets stay)."""
        out = (self.relay, self.host, self.bundles, self.codes)
        self.relay, self.host, self.bundles, self.codes = [], [], [], []
        return out
