"""One runnable example per override point of docs/variants.md: each a protocol change
a team might propose, in a few lines over the one method that holds its rule.

Fuzz any of them from the repository's root:

    simkit fuzz --variant docs/examples/overrides.py:wider_quota_margin --time 60

``tests/fuzz/test_override_examples.py`` runs each and checks that its method ran.
"""

import attrs

from simkit.client import Device
from simkit.client.receive import Opened, Refusal
from simkit.protocol.records import check_envelope, known_members, open_record
from simkit.relay import Relay
from simkit.relay.state import LogEntry
from simkit.sim.variant import Variant

# -- the relay (simkit.relay.Relay) -------------------------------------------------------


class TenMinutesAhead(Relay):
    def _too_far_ahead(self, rev, now):  # push rule 1: revs may be 10 minutes ahead
        return rev > now + 600_000


class LastOfEquals(Relay):
    def _wins(self, stored_rev, op_rev):  # push rule 2: the last of equal revs is kept
        return op_rev >= stored_rev


class LogsLosers(Relay):
    def _lose(self, call, graph, op, reserved):  # an LWW loser is logged (not stored)
        call.tx.append(graph.log, LogEntry(reserved, op.record_id, op.rev))


class QuotaAtNinetyPercent(Relay):
    def _quota_reason(self, graph, stored, op):  # push rule 3: refuse at 90 % of the bytes
        reason = super()._quota_reason(graph, stored, op)
        if reason is None and graph.record_bytes + len(op.c) > 0.9 * self.settings.quota_bytes:
            return "quota-bytes"
        return reason


class SeqFromTheLog(Relay):
    def _next_seq(self, graph, reserved):  # seq from MAX(seq)+1, not from the counter
        return (graph.log[-1].seq if graph.log else 0) + 1


class DropsShards(Relay):
    def _write(self, call, graph, stored, op, seq):  # push rule 4, without the shard label
        super()._write(call, graph, stored, attrs.evolve(op, sh=None), seq)


class CursorAtLastOp(Relay):
    @staticmethod
    def _cursor(graph, after, page, more):  # an exhausted page stops at its last op
        return page[-1].seq if page else after


class KeepsExcludedLatest(Relay):
    def _rotate(self, call, epoch, wraps, excluding):  # rotation rule 3: name the missing
        named = {*wraps, *excluding}
        missing = [d.device_id for d in self.eligible(call.graph.key) if d.device_id not in named]
        super()._rotate(call, epoch, wraps, [*excluding, *missing])


class RevokeKeepsWraps(Relay):
    def _owe_rotation(self, tx, device_id):  # revoke flags the graphs but keeps the wraps
        owed = []
        for graph in self.state.graphs.values():
            if any(device_id in holders for holders in graph.wraps.values()):
                tx.assign(graph, "rotation_required", True)
                owed.append(graph.key)
        return owed


class InactiveMembersStay(Relay):
    def _current_members(self, key):  # a deactivated member still belongs to the group
        kind, _, rest = key.partition(":")
        if kind != "g":
            return super()._current_members(key)
        return sorted(self.host.group_members(rest))


class RevokedStayEligible(Relay):
    def eligible(self, key):  # a new epoch must reach revoked devices too
        members = self._current_members(key)
        return [d for m in members for d in self.state.devices_of(m)]


class ForgetsAtHalf(Relay):
    def _delivered(self, key, blob):  # a transport blob goes once half the members acked
        members = self._current_members(key)
        return 2 * len(set(members) & set(blob.receipts)) >= len(members)


# -- the device (simkit.client.Device) ----------------------------------------------------


class AcceptsAnyAuthor(Device):
    def check(self, op, storage_key_, key, roster):  # client rule 2 without the r.by check
        outcome = super().check(op, storage_key_, key, roster)
        if isinstance(outcome, Refusal) and outcome.reason == "wrong-author":
            envelope = open_record(key, storage_key_, op["recordId"], op["n"], op["c"])
            record = known_members(check_envelope(envelope, op["recordId"]))
            return Opened(record, envelope.get("d"))
        return outcome


class SkipsLockedOps(Device):
    def skip_missing_epoch(self):  # client rule 4: skip an op it holds no key for
        return True


class WritesWhileBehind(Device):
    def behind(self, graph_id):  # client rule 5: never holds its writes
        return False


class ChecksKeysEveryMinute(Device):
    def due(self, graph_id, what):  # keys and key gaps every 60 s, not every recheck_s
        if self.config.recheck_s < 60:
            self.config = attrs.evolve(self.config, recheck_s=60.0)
        return super().due(graph_id, what)


class StampsItsVersion(Device):
    def as_sealed(self, record):  # a newer client: an unknown member in every record
        return {**record, "x-client": "2"}


class NoSelfSig(Device):
    def registration(self, label=None, self_sig=True):  # an older client: no selfSig
        return super().registration(label, self_sig=False)


class IgnoresAnswersEpoch(Device):
    def note_epoch(self, graph_id, epoch):  # client rule 5: learns the epoch from keys only
        return None


ten_minutes_ahead = Variant(
    "ten-minutes-ahead", "revs up to 10 minutes ahead", relay=TenMinutesAhead,
    changes=("push rule 1",),
)  # fmt: skip
last_of_equals = Variant(
    "last-of-equals", "the last of equal revs is kept", relay=LastOfEquals,
    changes=("push rule 2",),
)  # fmt: skip
logs_losers = Variant("logs-losers", "an LWW loser is logged", relay=LogsLosers)
wider_quota_margin = Variant(
    "quota-at-90", "the byte quota refuses at 90 %", relay=QuotaAtNinetyPercent,
    changes=("push rule 3",),
)  # fmt: skip
seq_from_the_log = Variant("seq-from-the-log", "seq as MAX(seq)+1", relay=SeqFromTheLog)
drops_shards = Variant(
    "drops-shards", "the relay does not keep shard labels", relay=DropsShards,
    changes=("push: metadata",),
)  # fmt: skip
cursor_at_last_op = Variant(
    "cursor-at-last-op", "an exhausted page's cursor stays at its last op",
    relay=CursorAtLastOp, changes=("pull: pages", "log: never filtered"),
)  # fmt: skip
names_the_missing = Variant(
    "names-the-missing", "a rotation excludes whoever it does not wrap to",
    relay=KeepsExcludedLatest, changes=("rotation rule 3",),
)  # fmt: skip
revoke_keeps_wraps = Variant(
    "revoke-keeps-wraps", "revoke leaves the device's wraps in place", relay=RevokeKeepsWraps,
    changes=("devices: revoke",),
)  # fmt: skip
inactive_members_stay = Variant(
    "inactive-members-stay", "a deactivated member still belongs to its groups",
    relay=InactiveMembersStay,
)  # fmt: skip
revoked_stay_eligible = Variant(
    "revoked-stay-eligible", "a new epoch must reach revoked devices too",
    relay=RevokedStayEligible,
)  # fmt: skip
forgets_at_half = Variant(
    "forgets-at-half", "a transport blob goes once half the members acked",
    relay=ForgetsAtHalf, changes=("blobs: ack", "blobs: sweep", "blob states"),
)  # fmt: skip
accepts_any_author = Variant(
    "accepts-any-author", "receivers do not check r.by", device=AcceptsAnyAuthor,
    changes=("client rule 2",),
)  # fmt: skip
skips_locked_ops = Variant(
    "skips-locked-ops", "a pull skips ops it holds no key for", device=SkipsLockedOps,
    changes=("client rule 4",),
)  # fmt: skip
writes_while_behind = Variant(
    "writes-while-behind", "a device behind an epoch pushes anyway", device=WritesWhileBehind,
    changes=("client rule 5",),
)  # fmt: skip
checks_keys_every_minute = Variant(
    "checks-keys-every-minute", "keys and key gaps every 60 s", device=ChecksKeysEveryMinute
)
stamps_its_version = Variant(
    "stamps-its-version", "every record carries an unknown member", device=StampsItsVersion
)
no_self_sig = Variant("no-self-sig", "devices register without selfSig", device=NoSelfSig)
ignores_answers_epoch = Variant(
    "ignores-answers-epoch", "the epoch of push and pull answers is not noted",
    device=IgnoresAnswersEpoch, changes=("client rule 5",),
)  # fmt: skip

EXAMPLES = {  # override point -> its example
    "Relay._too_far_ahead": ten_minutes_ahead,
    "Relay._wins": last_of_equals,
    "Relay._lose": logs_losers,
    "Relay._quota_reason": wider_quota_margin,
    "Relay._next_seq": seq_from_the_log,
    "Relay._write": drops_shards,
    "Relay._cursor": cursor_at_last_op,
    "Relay._rotate": names_the_missing,
    "Relay._owe_rotation": revoke_keeps_wraps,
    "Relay._current_members": inactive_members_stay,
    "Relay.eligible": revoked_stay_eligible,
    "Relay._delivered": forgets_at_half,
    "Device.check": accepts_any_author,
    "Device.skip_missing_epoch": skips_locked_ops,
    "Device.behind": writes_while_behind,
    "Device.due": checks_keys_every_minute,
    "Device.as_sealed": stamps_its_version,
    "Device.registration": no_self_sig,
    "Device.note_epoch": ignores_answers_epoch,
}
