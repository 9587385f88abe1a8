"""Deliberately broken protocol variants: the fuzzer must catch each one.

Each is a few lines over the override points of the relay (docs/relay.md) and the
device (docs/variants.md). ``simkit fuzz --variant tests.fuzz.variants:max_seq``.
"""

import attrs

from simkit.client import Device
from simkit.relay import Relay
from simkit.relay.state import LogEntry
from simkit.sim.variant import Variant


class MaxSeqPlusOne(Relay):
    def _next_seq(self, graph, reserved):
        return (graph.log[-1].seq if graph.log else 0) + 1


class LogsLwwLosers(Relay):
    def _lose(self, call, graph, op, reserved):
        call.tx.append(graph.log, LogEntry(reserved, op.record_id, op.rev))


class OverwritesWraps(Relay):
    def _grant_wrap(self, tx, graph, epoch, device_id, wrapped):
        holders = graph.wraps.get(epoch)
        if holders is None:
            holders = {}
            tx.set(graph.wraps, epoch, holders)
        tx.set(holders, device_id, wrapped)
        return True


class KeepsLastOfEqualRevs(Relay):
    def _wins(self, stored_rev, op_rev):
        return op_rev >= stored_rev


class SkipsRevokedAtCheck(Device):
    def check(self, op, storage_key, key, roster):
        unrevoked = {d: {**e, "revokedAt": None} for d, e in roster.items()}
        return super().check(op, storage_key, key, unrevoked)


class SkipsOpsUnderMissingEpochs(Device):
    def skip_missing_epoch(self):
        return True


max_seq = Variant("max-seq", "seq as MAX(seq)+1 instead of a counter", relay=MaxSeqPlusOne)
log_loser = Variant("log-loser", "the relay logs an LWW loser", relay=LogsLwwLosers)
overwrite_wrap = Variant(
    "overwrite-wrap", "a grant overwrites an existing wrap", relay=OverwritesWraps
)
keep_last_equal = Variant(
    "keep-last-equal", "the relay keeps the last of two equal revs", relay=KeepsLastOfEqualRevs
)
skip_revoked = Variant(
    "skip-revoked", "the client skips the revoked-at check", device=SkipsRevokedAtCheck
)
skip_missing_epoch = Variant(
    "skip-missing-epoch",
    "the client advances its cursor past an op under a missing epoch",
    device=SkipsOpsUnderMissingEpochs,
)


class PollsTwiceAsOften(Device):
    """Not a protocol change: the same client, polling twice as often when idle."""

    async def _poll_timer(self):
        self.config = attrs.evolve(self.config, poll_interval_s=self.config.poll_interval_s / 2)
        await super()._poll_timer()


# a cost change, not a rule change: every check passes, only `simkit compare`'s cost sees it
polls_twice = Variant(
    "polls-twice", "the client polls twice as often when idle", device=PollsTwiceAsOften
)

# an intended change, not a bug: the device model leaves the rules it names to the
# other invariants (docs/variants.md, "Changing a rule on purpose")
clock_repair_changed = Variant(
    "clock-repair-changed",
    "the clock repair changes (client rule 9), and with it the stamps (client rule 1)",
    changes=("client rule 1", "client rule 9"),
)


class OtherPairingCode(Device):
    """A device method no world calls (a human reads the pairing code off the screen):
    the change is never exercised."""

    def pairing_code(self):
        return "0" * 12


# a change that never runs: every run of it gives no verdict (exit 3)
unused = Variant("unused", "shows another pairing code", device=OtherPairingCode)

ALL = (max_seq, log_loser, overwrite_wrap, keep_last_equal, skip_revoked, skip_missing_epoch)
