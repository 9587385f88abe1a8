"""Planted breaks of Versioning rule 3's compatibility clauses, one per clause: each
is fine in a world of one version and breaks a release. ``simkit fuzz --rollout`` must
catch each within 60 s (docs/releases.md lists the commands; CI replays their kept
findings in tests/fuzz/test_releases.py).
"""

from simkit.client import Device
from simkit.client.approval import APPROVED, fingerprint_of
from simkit.client.receive import Refusal
from simkit.protocol.http import json_response
from simkit.protocol.records import RECORD_MEMBERS, check_envelope, open_record
from simkit.sim.variant import Variant


class EpochRequired(Device):
    """Clause 1 (``epoch`` is optional on push and pull answers): an answer without it
    is taken to mean the relay is ahead, so the device waits for a key for ever."""

    def note_epoch(self, graph_id: str, epoch: int | None) -> None:
        if epoch is None:
            epoch = self.keyring(graph_id).current + 1
        super().note_epoch(graph_id, epoch)


class TrustsDevicesWithoutSelfSig(Device):
    """Clause 2 (``selfSig`` is optional; a device without it is never auto-approved):
    an older device cannot prove itself, so it is approved as soon as it is seen."""

    def remember(self, entry: dict) -> None:
        super().remember(entry)
        device_id = entry["deviceId"]
        if not entry.get("selfSig") and self.pin(device_id) is None:
            self.set_pin(device_id, APPROVED, "possession", fingerprint_of(entry))


class AdoptsRefusedRotation(Device):
    """Clause 3 (an older relay drops ``excluding`` and refuses the rotation as
    incomplete): the device keeps the key it minted although the relay refused it."""

    async def rotate(self, graph_id: str) -> bool:
        if await super().rotate(graph_id):
            return True
        self.adopt_key(graph_id, self.keyring(graph_id).current + 1, self.entropy.token_bytes(32))
        return False


class ReadsMissingLogAsEmpty(Device):
    """Clause 4 (a relay without the log route makes a client report ``unverified``):
    a 404 on the log is read as an empty log, which then verifies everything."""

    async def request(self, method, path, body=None, query=None, raw=None, headers=None):
        response = await super().request(method, path, body, query, raw, headers)
        if path.endswith("/log") and response.status == 404:  # empty up to all it served
            head = max(int(query["after"]), self.served_top.get(path.split("/")[2], 0))
            empty = {"entries": [], "cursor": head, "more": False}
            return json_response(200, {**empty, "head": head, "oldest": 0})
        return response


class StrictReader(Device):
    """Clause 5 (unknown record members are signed and ignored): a record with a
    member this client does not know is refused as malformed."""

    def check(self, op: dict, storage_key_: str, key: bytes, roster: dict[str, dict]):
        outcome = super().check(op, storage_key_, key, roster)
        if isinstance(outcome, Refusal):
            return outcome
        sealed = check_envelope(
            open_record(key, storage_key_, op["recordId"], op["n"], op["c"]), op["recordId"]
        )
        unknown = sorted(set(sealed) - set(RECORD_MEMBERS))
        if unknown:
            return Refusal("shape", f"unknown record member {unknown[0]!r}")
        return outcome


epoch_required = Variant(
    "epoch-required", "a missing epoch is read as the relay being ahead", device=EpochRequired
)
trusts_no_self_sig = Variant(
    "trusts-no-self-sig",
    "a device without selfSig is approved on sight",
    device=TrustsDevicesWithoutSelfSig,
)
adopts_refused_rotation = Variant(
    "adopts-refused-rotation",
    "a rotation the relay refused is adopted anyway",
    device=AdoptsRefusedRotation,
)
reads_missing_log_as_empty = Variant(
    "reads-missing-log-as-empty",
    "a 404 on the log route reads as an empty log",
    device=ReadsMissingLogAsEmpty,
)
strict_reader = Variant(
    "strict-reader", "records with unknown members are refused", device=StrictReader
)
