"""Compatibility invariants, named for the words of Versioning rule 3: what a release
(two versions of the protocol at once, docs/releases.md) must never do. They hold in
every world; a world running one version is their trivial case.

- ``no-partition``: "new optional fields do not partition a fleet": an honest device
  never refuses an honest record of another version (another version's device, or a
  record carrying members this spec does not know) for its shape, its schema or its
  signature. Within one version, ``alarm-soundness`` judges every refusal of an honest
  record; this names the versions on both sides.
- ``log-unverified``: "a relay without the log route makes a client report log status
  unverified, not an accusation": a device reports ``ok`` over log entries only after
  the relay answered one of its log reads of that graph (an alarm there is
  ``alarm-soundness``'s to judge).
- ``persisted-state``: nothing a version persisted is misread by the next: a device
  that restarts into the new version reads back the records, queue, keys, epoch, log
  status, refusals and pins it kept; a relay, its whole store.
"""

from simkit.invariants.base import Invariant
from simkit.protocol.ids import graph_id_for, storage_key
from simkit.protocol.records import RECORD_MEMBERS, check_envelope, open_record

PARTITIONING = ("shape", "schema", "bad-signature")
"""Refusal reasons a version difference causes (client rule 2); the others (an unknown
or revoked signer) are about who wrote the record, not how."""


class NoPartition(Invariant):
    """Every honest device accepts every honest record, whichever version wrote it."""

    @staticmethod
    def _across(world, reader: str, writer: str, sealed: dict) -> bool:
        """The record crosses versions: written by a device of another one, or carrying
        members this spec does not know (a newer client's)."""
        if world.parties.version_of(reader) is not world.parties.version_of(writer):
            return True
        return any(name not in RECORD_MEMBERS for name in sealed)

    name = "no-partition"
    honest_only = True  # a malicious relay may serve a ciphertext that is not the row
    observes = ("record.rejected",)
    judges_events = True

    def observe(self, world, event):
        fields = event.fields
        if fields.get("reason") not in PARTITIONING:
            return ()
        slot = world.slots.get(event.actor)
        if slot is None or slot.stolen or slot.device is None:
            return ()
        sk = storage_key(fields["graph"], slot.member)
        writer, sealed = _honest_writer(world, slot, sk, fields["recordId"], fields["rev"])
        if writer is None or not self._across(world, event.actor, writer, sealed):
            return ()
        unknown = sorted(name for name in sealed if name not in RECORD_MEMBERS)
        how = f"with members this version does not know ({', '.join(unknown)})" if unknown else ""
        return [
            self.violation(
                world,
                f"{event.actor} ({world.parties.version_of(event.actor).name}) refused "
                f"{fields['recordId']} at {fields['rev']} for its {fields['reason']}, an honest "
                f"write of {writer} ({world.parties.version_of(writer).name}) {how}: "
                f"{fields.get('detail')}".replace(" :", ":"),
                trace_seq=event.seq,
                graph=sk,
                devices=tuple(dict.fromkeys((event.actor, writer))),
                records=(fields["recordId"],),
            )
        ]


def _honest_writer(world, reader, sk: str, record_id: str, rev: int):
    """The device of the world that really wrote this version and the record as it
    sealed it (the relay's row, opened with the reader's keys; not a forgery), or
    (None, None) when that is not known."""
    graph = world.relay.state.graphs.get(sk)
    row = None if graph is None else graph.records.get(record_id)
    if row is None or row.rev != rev or row.c in world.ledger.forged_ciphertexts:
        return None, None
    key = reader.device.keyring(graph_id_for(sk, reader.member)).keys.get(row.e)
    if key is None:
        return None, None
    try:
        envelope = open_record(key, sk, record_id, row.n, row.c)
        sealed = check_envelope(envelope, record_id)
    except ValueError:
        return None, None
    writer = world.slots.get(envelope.get("d"))
    if writer is None or writer.stolen:
        return None, None
    return writer.device_id, sealed


class LogUnverified(Invariant):
    """A device reports a graph's log ``ok`` past where it anchored its chain only once a
    log read of it was answered (with nothing served, ``ok`` is vacuously true)."""

    name = "log-unverified"

    def step(self, world):
        out = []
        reads = world.ledger.log_reads
        for slot in world.alive():
            device = slot.device
            for graph_id in device.graphs():
                log = device.log_state(graph_id)
                sk = device.storage_key(graph_id)
                if (
                    log is not None
                    and log.state == "ok"
                    and log.through > (log.anchored_from or 0)
                    and (slot.device_id, sk) not in reads
                ):
                    out.append(
                        self.violation(
                            world,
                            f"{slot.device_id} ({world.parties.version_of(slot.device_id).name}) "
                            f"reports the log of {sk} ok, but the relay "
                            f"({world.parties.relay_version.name}) answered none of its log reads",
                            graph=sk,
                            devices=(slot.device_id,),
                        )
                    )
        return out


class PersistedState(Invariant):
    """What a party kept reads back the same after it restarts into the new version."""

    name = "persisted-state"

    def __init__(self) -> None:
        self._read = 0  # upgrades judged so far

    def step(self, world):
        out = []
        upgrades = world.ledger.upgrades
        for upgrade in upgrades[self._read :]:
            lost = _first_difference(upgrade.before, upgrade.after)
            if lost is not None:
                out.append(
                    self.violation(
                        world,
                        f"{upgrade.party} reads back what it kept differently after restarting "
                        f"into {world.variant.name}: {lost}",
                        trace_seq=upgrade.trace_seq,
                        devices=() if upgrade.party == "relay" else (upgrade.party,),
                    )
                )
        self._read = len(upgrades)
        return out


def _first_difference(before, after, path: str = "") -> str | None:
    """Where two JSON-like values first differ, as a path and both values."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(before.keys() | after.keys(), key=str):
            if key not in after or key not in before:
                side = "lost" if key not in after else "gained"
                return f"{path}{key} {side}"
            found = _first_difference(before[key], after[key], f"{path}{key}.")
            if found is not None:
                return found
        return None
    if before != after:
        return f"{path.rstrip('.')}: {before!r:.80} before, {after!r:.80} after"
    return None
