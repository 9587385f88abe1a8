"""The ground truth of a world: what happened that no device or relay state records.

Invariants judge the devices against what really happened, and some of it leaves no
trace a device could read: which pushed records a non-conforming client forged,
which wraps a forged grant filled, to whom each epoch was wrapped when it was
minted, which queued writes a clock repair re-stamped, how far each device has read
each log. The fuzz steps, the adversary and the world write it here as it happens;
invariants and quiescence read it.
"""

import attrs


@attrs.frozen
class Upgrade:
    """A party restarted into the new version: what it kept, as the version before read
    it and as the new one reads it back (``persisted``; the relay: its snapshot)."""

    party: str
    before: dict
    after: dict
    trace_seq: int


def persisted(device) -> dict:
    """What a device keeps across a restart, as it reads it back through its own
    accessors: per graph its records, queue, keys, the relay's epoch and its log
    status; the records it refused; its approval pins."""
    graphs = {
        graph_id: {
            "records": device.records(graph_id),
            "queued": device.queued(graph_id),
            "keys": sorted(device.keyring(graph_id).keys),
            "relay epoch": device.relay_epoch(graph_id),
            "log": device.graph_status(graph_id).to_json()["log"],
        }
        for graph_id in device.graphs()
    }
    pins = {d: device.pin(d) for d in sorted(device.store.rows("pin"))}
    pins = {d: None if pin is None else attrs.astuple(pin) for d, pin in pins.items()}
    return {"graphs": graphs, "rejected": device.rejected(), "pins": pins}


@attrs.define
class Ledger:
    # (storage key, record, rev) a non-conforming client pushed (client rule 2 refuses them)
    forged: set[tuple[str, str, int]] = attrs.Factory(set)
    # (storage key, record, rev) -> why a receiver must refuse it, in the spec's words
    forged_why: dict[tuple[str, str, int], str] = attrs.Factory(dict)
    # each forged op's ciphertext: it alone tells the op from an honest write of the same
    # record made in the same millisecond (same rev) and given the same seq on another
    # relay (a fork's or a rollback's shadow), which (record, rev, seq) cannot
    forged_ciphertexts: set[str] = attrs.Factory(set)
    # (device, storage key, record, rev, seq) of each forged op a pull handed a device
    forged_served: set[tuple[str, str, str, int, int]] = attrs.Factory(set)
    # (storage key, epoch, device) a forged grant filled with a wrap nobody can open
    forged_grants: set[tuple[str, int, str]] = attrs.Factory(set)
    # (storage key, epoch) -> the devices the epoch was wrapped to when it was minted
    minted: dict[tuple[str, int], tuple[str, ...]] = attrs.Factory(dict)
    # (device, graph ID, record) re-stamped after a clock repair (client rule 9)
    restamped: set[tuple[str, str, str]] = attrs.Factory(set)
    # (device, storage key) -> the highest ``after`` the device read the log from
    log_reads: dict[tuple[str, str], int] = attrs.Factory(dict)
    # storage keys whose last rotation the relay refused as incomplete though it named
    # every missing device in ``excluding``: an older relay drops it (Versioning rule 3)
    dropped_exclusions: set[str] = attrs.Factory(set)
    # every party that restarted into a release's new version, in order
    upgrades: list[Upgrade] = attrs.Factory(list)
    # (device, other): a human on the device approved the other (or the world's setup
    # did, for the initial fleet), and no human refused it since (client rule 14)
    approvals: set[tuple[str, str]] = attrs.Factory(set)
    # the record versions pull answers handed devices since the invariants last looked,
    # (device, storage key, record, rev, trace position), read off each device's link,
    # not off what its events say: what it could open and verify (a possession proof);
    # the monitor empties it after each check (what matters of it is the judges' to keep)
    served: list[tuple[str, str, str, int, int]] = attrs.Factory(list)

    def forge(self, storage_key: str, op: dict, why: str) -> None:
        """A non-conforming client pushed this op; ``why`` a receiver must refuse it,
        in the spec's words."""
        record_id, rev = op["recordId"], op["rev"]
        self.forged.add((storage_key, record_id, rev))
        self.forged_why[storage_key, record_id, rev] = why
        self.forged_ciphertexts.add(op["c"])

    def forge_grant(self, storage_key: str, epoch: int, device_id: str) -> None:
        self.forged_grants.add((storage_key, epoch, device_id))

    def mint(self, storage_key: str, epoch: int, wrapped_to) -> None:
        self.minted[storage_key, epoch] = tuple(sorted(wrapped_to))

    def approve(self, device_id: str, other: str) -> None:
        self.approvals.add((device_id, other))

    def refuse(self, device_id: str, other: str) -> None:
        self.approvals.discard((device_id, other))

    def restamp(self, device_id: str, graph_id: str, record_id: str) -> None:
        self.restamped.add((device_id, graph_id, record_id))

    def serve(self, device_id: str, storage_key: str, answer: object, trace_seq: int) -> None:
        """A pull answer reached ``device_id`` at trace position ``trace_seq``: the
        versions it handed over (an answer of another shape hands over nothing)."""
        ops = answer.get("ops") if isinstance(answer, dict) else None
        if not isinstance(ops, list):
            return
        for op in ops:
            if isinstance(op, dict) and isinstance(op.get("rev"), int):
                record = str(op.get("recordId"))
                self.served.append((device_id, storage_key, record, op["rev"], trace_seq))
                served = (device_id, storage_key, record, op["rev"], op.get("seq"))
                if op.get("c") in self.forged_ciphertexts:
                    self.forged_served.add(served)
                else:  # the honest op it collided with, served later: what it applies now
                    self.forged_served.discard(served)

    def handed_forgery(self, device_id: str, storage_key: str, record_id: str, rev: int) -> bool:
        """Whether a pull handed ``device_id`` a forged op of this version (not an honest
        write that shares its record and rev: the event a refusal raises names no more)."""
        version = (device_id, storage_key, record_id, rev)
        return any(served[:4] == version for served in self.forged_served)

    def read_log(self, device_id: str, storage_key: str, after: int) -> None:
        key = (device_id, storage_key)
        self.log_reads[key] = max(after, self.log_reads.get(key, -1))

    def forget_reads(self, device_id: str) -> None:
        """The device wiped its log state (an import): its next reads start over and
        count as progress again."""
        for key in [key for key in self.log_reads if key[0] == device_id]:
            del self.log_reads[key]
