"""A planted break the hostile messages must reach: a receiver that reads an optional
member left out as "nothing to check" (the envelope's signature ``s`` is optional on the
wire; client rule 2 needs it), so a record with no signature is applied."""

from simkit.client import Device
from simkit.client.receive import Opened, Refusal
from simkit.protocol.records import check_envelope, known_members, open_record
from simkit.sim.variant import Variant


class AbsentSignatureAccepted(Device):
    def check(self, op, storage_key_, key, roster):
        verdict = super().check(op, storage_key_, key, roster)
        if isinstance(verdict, Refusal) and verdict.reason in ("bad-signature", "unknown-device"):
            envelope = open_record(key, storage_key_, op["recordId"], op["n"], op["c"])
            if "s" not in envelope:  # absent: nothing to verify, so nothing wrong
                record = check_envelope(envelope, op["recordId"])
                return Opened(known_members(record), envelope.get("d"))
        return verdict


absent_signature_accepted = Variant(
    "absent-signature-accepted", "a record without s is applied unverified",
    device=AbsentSignatureAccepted,
)  # fmt: skip
