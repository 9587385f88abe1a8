"""The ceremonies a device runs (spec: Ceremonies): bootstrap, rotate, revoke,
recover from a bundle, invite and accept an invite (a ``Device`` is made of these;
the key work is ``simkit.client.keyops``)."""

from simkit.client import keyops
from simkit.protocol.ids import graph_id_for
from simkit.protocol.keyring import (
    Keyring,
    make_invite,
    make_recovery_bundle,
    open_invite,
    open_recovery_bundle,
)


class Ceremonies:
    """The device's side of each ceremony."""

    async def bootstrap(self, graph_id: str) -> bool:
        """Create epoch 1 of a graph (spec: Ceremonies, Bootstrap)."""
        self.subscribe(graph_id)
        return await keyops.mint_epoch(self, graph_id, 1)

    async def rotate(self, graph_id: str) -> bool:
        """Mint epoch latest+1 wrapped to approved active devices (spec: Rotate)."""
        await keyops.refresh_keys(self, graph_id)
        return await keyops.mint_epoch(self, graph_id, self.relay_epoch(graph_id) + 1)

    async def revoke(self, device_id: str) -> list[str]:
        """Revoke a device, then rotate every graph it held keys for that this device follows."""
        return await keyops.revoke(self, device_id)

    def recovery_bundle(self, passphrase: str) -> dict:
        """A bundle of every keyring (never a device keypair)."""
        rings = {sk: Keyring.from_wire(w) for sk, w in self.store.rows("keyring").items()}
        return make_recovery_bundle(passphrase, rings, entropy=self.entropy)

    async def import_bundle(self, bundle: dict, passphrase: str) -> None:
        """Adopt a bundle's keyrings; importing first wipes the local record store. It
        waits for a sync run in progress, whose answers must not land in the wiped
        store (docs/findings.md, F14)."""
        rings = open_recovery_bundle(passphrase, bundle)
        if self._syncing.locked():
            async with self._syncing:
                self._import(rings)
        else:  # nothing to wait for: no checkpoint either
            self._import(rings)

    def _import(self, rings: dict) -> None:
        """The wipe and the adoption. What the device learnt of each graph's epoch
        survives it, as its keys do (client rule 5: its epoch only moves upward)."""
        noted = {g: m["latest"] for g, m in self.store.rows("graphs").items() if "latest" in m}
        for prefix in ("records:", "queue:", "refused:", "shadow:"):
            self.store.drop_tables(prefix)
        for table in ("cursor", "pulled", "log", "graphs", "subs"):
            self.store.drop_tables(table)
        for graph_id, epoch in sorted(noted.items()):
            self.note_epoch(graph_id, epoch)
        for sk, ring in sorted(rings.items()):
            graph_id = graph_id_for(sk, self.member_id)
            self.subscribe(graph_id)
            held = self.keyring(graph_id)  # keys it held are kept: old epochs are kept
            for epoch, key in sorted(ring.keys.items()):
                held = held.with_key(epoch, key)
            self.store.put("keyring", sk, held.to_wire())
        self.store.commit()

    def invite(self, graph_id: str) -> tuple[str, dict]:
        """An invite for a graph: the string for the invitee, the box for the host."""
        return make_invite(graph_id, self.keyring(graph_id), entropy=self.entropy)

    def accept_invite(self, invite: str, box: dict) -> str:
        """Adopt the keyring an invite carries and follow its graph."""
        graph_id, ring = open_invite(invite, box)
        self.subscribe(graph_id)
        for epoch, key in sorted(ring.keys.items()):
            self.adopt_key(graph_id, epoch, key)
        self.store.commit()
        return graph_id
