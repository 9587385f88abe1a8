"""``approval-gate``: in approve mode a device wraps a graph key only to devices it
approved (client rule 14), judged from what the world knows, never from the device's
own pins or its own ``device.approved`` events (a client that approves on its own
would vouch for itself).

The world knows two ways a device comes to approve another: a human on it approved
the device (the world's setup, or a scheduled or drawn ``Approve``, the ledger keeps
them; a human's ``Reject`` undoes it), and proof of possession (the spec's Pin table:
"a record the device wrote opened under the graph key and verified under the roster's
signing key, and its selfSig verifies under that signing key"): a pull answer handed the
poster a record version the other device really wrote (the world's ``app.write``, a
re-stamp, a checkpoint it published, or what a member's other client signed with its
keys), which it could open and verify (what was served is the ledger's, read off the
poster's link, never the poster's own ``record.applied`` events: a device may prove
possession by a version it does not keep, last-write-wins having kept its own), and
that device registered a selfSig that verifies."""

from simkit.invariants.base import Invariant
from simkit.protocol.ids import storage_key
from simkit.protocol.keys import device_fingerprint, self_attestation_bytes, verify_bytes

# a device's own writes: the application's, a re-stamp, a checkpoint; and what a member's
# other client wrote with the device's keys (a newer client, a valid malformed record)
WRITES = ("app.write", "record.restamped", "checkpoint.published", "other.write")


class ApprovalGate(Invariant):
    """Every device a rotation or a grant wraps to, but its poster, was approved by the
    poster before the wrap was posted: by a human, or by possession proven with a
    valid selfSig. Devices outside the fleet (the rogue) and forged grants are not the
    client's."""

    name = "approval-gate"
    honest_only = True
    observes = (*WRITES, "graph.rotate", "keys.grant")
    judges_events = True

    def __init__(self) -> None:
        # (sk, record, rev) -> the devices that wrote it: two devices may stamp one record
        # alike (at the same instant), and a version served says which only in its
        # content, so the poster is credited with both
        self._writers: dict[tuple[str, str, int], set[str]] = {}
        self._possessed: dict[tuple[str, str], int] = {}  # (poster, writer) -> first served
        self._self_sig: dict[str, bool] = {}  # registered device -> its selfSig verifies

    def observe(self, world, event):
        fields, name = event.fields, event.fields["name"]
        if name in WRITES:
            slot = world.slots.get(event.actor)
            if slot is None or fields.get("graph") is None:
                return ()
            sk = storage_key(fields["graph"], slot.member)
            rev = fields["new"] if name == "record.restamped" else fields["rev"]
            self._writers.setdefault((sk, fields["recordId"], rev), set()).add(event.actor)
            return ()
        self._served(world)
        poster, graph, epoch = fields["device_id"], fields["graph"], fields["epoch"]
        slot = world.slots.get(poster)
        if world.config.approval_mode != "approve" or slot is None or slot.device is None:
            return ()
        if name == "keys.grant":
            wrapped = fields["devices"]
        else:
            wrapped = world.ledger.minted.get((graph, epoch), ())
        unapproved = {
            device_id: why
            for device_id in wrapped
            if device_id != poster and (graph, epoch, device_id) not in world.ledger.forged_grants
            and (why := self._why_not(world, poster, device_id, event.seq))
        }  # fmt: skip
        if not unapproved:
            return ()
        return [
            self.violation(
                world,
                f"{poster} wrapped epoch {epoch} to "
                + "; ".join(f"{device_id} ({why})" for device_id, why in unapproved.items())
                + ": never approved (approve mode)",
                trace_seq=event.seq,
                graph=graph,
                devices=(poster, *unapproved),
            )
        ]

    def _why_not(self, world, poster: str, device_id: str, before: int) -> str:
        """Why ``poster`` has not approved ``device_id`` by trace position ``before``
        ("" if it has)."""
        if (poster, device_id) in world.ledger.approvals:
            return ""
        if self._possessed.get((poster, device_id), before + 1) > before:
            return f"no human approved it on {poster}, and {poster} was served no record it wrote"
        if not self._verifies(world, device_id):
            return f"{poster} applied its records, but its registration has no valid selfSig"
        return ""

    def step(self, world):
        self._served(world)
        return ()

    def _served(self, world) -> None:
        """Take in the versions pull answers served since the last look (the ledger's,
        emptied after each check): who was handed what whom wrote, and when first."""
        for device_id, sk, record, rev, seq in world.ledger.served:
            for writer in self._writers.get((sk, record, rev), ()):
                pair = (device_id, writer)
                if writer != device_id and seq < self._possessed.get(pair, seq + 1):
                    self._possessed[pair] = seq

    def _verifies(self, world, device_id: str) -> bool:
        """``_self_sig_verifies``, once per registered device (its keys are set once)."""
        if device_id not in self._self_sig:
            if device_id not in world.relay.state.devices:
                return False
            self._self_sig[device_id] = _self_sig_verifies(world, device_id)
        return self._self_sig[device_id]


def _self_sig_verifies(world, device_id: str) -> bool:
    """Whether the device registered a selfSig that verifies under its own signing key."""
    entry = world.relay.state.devices.get(device_id)
    if entry is None or not isinstance(entry.self_sig, str):
        return False
    fingerprint = device_fingerprint(entry.member_id, entry.pub_jwk, entry.sig_jwk)
    return verify_bytes(entry.sig_jwk, self_attestation_bytes(fingerprint), entry.self_sig)
