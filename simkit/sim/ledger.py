"""The ground truth of a world: what happened that no device or relay state records.

Invariants judge the devices against what really happened, and some of it leaves no
trace a device could read: which pushed records a non-conforming client forged,
which wraps a forged grant filled, to whom each epoch was wrapped when it was
minted, which queued writes a clock repair re-stamped, how far each device has read
each log. The fuzz steps, the adversary and the world write it here as it happens;
invariants and quiescence read it.
"""

import attrs


@attrs.define
class Ledger:
    # (storage key, record, rev) a non-conforming client pushed (client rule 2 refuses them)
    forged: set[tuple[str, str, int]] = attrs.Factory(set)
    # (storage key, epoch, device) a forged grant filled with a wrap nobody can open
    forged_grants: set[tuple[str, int, str]] = attrs.Factory(set)
    # (storage key, epoch) -> the devices the epoch was wrapped to when it was minted
    minted: dict[tuple[str, int], tuple[str, ...]] = attrs.Factory(dict)
    # (device, graph ID, record) re-stamped after a clock repair (client rule 9)
    restamped: set[tuple[str, str, str]] = attrs.Factory(set)
    # (device, storage key) -> the highest ``after`` the device read the log from
    log_reads: dict[tuple[str, str], int] = attrs.Factory(dict)

    def forge(self, storage_key: str, record_id: str, rev: int) -> None:
        self.forged.add((storage_key, record_id, rev))

    def forge_grant(self, storage_key: str, epoch: int, device_id: str) -> None:
        self.forged_grants.add((storage_key, epoch, device_id))

    def mint(self, storage_key: str, epoch: int, wrapped_to) -> None:
        self.minted[storage_key, epoch] = tuple(sorted(wrapped_to))

    def restamp(self, device_id: str, graph_id: str, record_id: str) -> None:
        self.restamped.add((device_id, graph_id, record_id))

    def read_log(self, device_id: str, storage_key: str, after: int) -> None:
        key = (device_id, storage_key)
        self.log_reads[key] = max(after, self.log_reads.get(key, -1))

    def forget_reads(self, device_id: str) -> None:
        """The device wiped its log state (an import): its next reads start over and
        count as progress again."""
        for key in [key for key in self.log_reads if key[0] == device_id]:
            del self.log_reads[key]
