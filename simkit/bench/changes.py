"""Protocol changes a team might propose, each declaring the rule it changes: the set
``simkit bench steering`` measures (docs/variants.md, "Steering", has the table).

Three are the ones issue 36 was filed with; the others are relay and client changes,
some safe (no invariant should break) and some unsafe (a consequence invariant must
catch them). Each is written as docs/variants.md tells a user to write one.
"""

import attrs

from simkit.client import Device
from simkit.client.receive import Opened, Refusal
from simkit.protocol.records import check_envelope, known_members, open_record
from simkit.relay import Relay
from simkit.sim.variant import Variant

# -- the relay --------------------------------------------------------------------------


class AcceptsAnyRev(Relay):
    def _too_far_ahead(self, rev, now):  # push rule 1: no limit at all
        return False


class WiderSkew(Relay):
    def _too_far_ahead(self, rev, now):  # push rule 1: ten minutes instead of five
        return rev > now + 600_000


class NoRotationOwed(Relay):
    def _owe_rotation(self, tx, device_id):  # drop the wraps, flag nothing
        for graph in self.state.graphs.values():
            for holders in graph.wraps.values():
                if device_id in holders:
                    tx.delete(holders, device_id)
        return []


class KeepsLastOfEquals(Relay):
    def _wins(self, stored_rev, op_rev):  # push rule 2: the last of equal revs wins
        return op_rev >= stored_rev


class RotateWithoutCapability(Relay):
    def _require_capability(self, call, capability):  # rotation rule 2 dropped
        if capability != "rotate":
            super()._require_capability(call, capability)


class GrantsOverwrite(Relay):
    def _grant_wrap(self, tx, graph, epoch, device_id, wrapped):  # a grant replaces a wrap
        holders = graph.wraps.get(epoch)
        if holders is None:
            holders = {}
            tx.set(graph.wraps, epoch, holders)
        tx.set(holders, device_id, wrapped)
        return True


# -- the client -------------------------------------------------------------------------


class AnyAuthor(Device):
    def check(self, op, storage_key_, key, roster):  # client rule 2 without the r.by check
        outcome = super().check(op, storage_key_, key, roster)
        if isinstance(outcome, Refusal) and outcome.reason == "wrong-author":
            envelope = open_record(key, storage_key_, op["recordId"], op["n"], op["c"])
            record = check_envelope(envelope, op["recordId"])
            return Opened(known_members(record), envelope.get("d"))
        return outcome


class IgnoresRevocation(Device):
    def check(self, op, storage_key_, key, roster):  # client rule 2 without revokedAt
        unrevoked = {d: {**entry, "revokedAt": None} for d, entry in roster.items()}
        return super().check(op, storage_key_, key, unrevoked)


class WritesWhileBehind(Device):
    def behind(self, graph_id):  # client rule 5: never holds its writes
        return False


class SkipsMissingEpochs(Device):
    def skip_missing_epoch(self):  # client rule 4: skips an op it cannot open yet
        return True


class RechecksKeysRarely(Device):
    def due(self, graph_id, what):  # keys and key gaps every 5 minutes, not every 30 s
        if self.config.recheck_s < 300:
            self.config = attrs.evolve(self.config, recheck_s=300.0)
        return super().due(graph_id, what)


class PollsTwice(Device):
    async def _poll_timer(self):  # twice as often when idle (no rule: a cost)
        self.config = attrs.evolve(self.config, poll_interval_s=self.config.poll_interval_s / 2)
        await super()._poll_timer()


any_rev = Variant(
    "any-rev", "the relay accepts revs however far ahead of its clock", relay=AcceptsAnyRev,
    changes=("push rule 1",),
)  # fmt: skip
wider_skew = Variant(
    "wider-skew", "revs may be ten minutes ahead of the relay's clock", relay=WiderSkew,
    changes=("push rule 1",),
)  # fmt: skip
no_rotation_owed = Variant(
    "no-rotation-owed", "revoke flags no graph for rotation", relay=NoRotationOwed,
    changes=("devices: revoke",),
)  # fmt: skip
last_of_equals = Variant(
    "last-of-equals", "the relay keeps the last of equal revs", relay=KeepsLastOfEquals,
    changes=("push rule 2",),
)  # fmt: skip
rotate_anyone = Variant(
    "rotate-anyone", "minting an epoch needs no rotate capability",
    relay=RotateWithoutCapability, changes=("rotation rule 2",),
)  # fmt: skip
grants_overwrite = Variant(
    "grants-overwrite", "a grant replaces a wrap the device already holds",
    relay=GrantsOverwrite, changes=("keys: grant",),
)  # fmt: skip
any_author = Variant(
    "any-author", "receivers no longer check that r.by is the signer's member",
    device=AnyAuthor, changes=("client rule 2",),
)  # fmt: skip
ignores_revocation = Variant(
    "ignores-revocation", "receivers apply records of revoked devices",
    device=IgnoresRevocation, changes=("client rule 2",),
)  # fmt: skip
writes_while_behind = Variant(
    "writes-while-behind", "a device behind an epoch pushes anyway",
    device=WritesWhileBehind, changes=("client rule 5",),
)  # fmt: skip
skips_missing_epochs = Variant(
    "skips-missing-epochs", "a pull skips ops under an epoch the device lacks",
    device=SkipsMissingEpochs, changes=("client rule 4",),
)  # fmt: skip
rechecks_rarely = Variant(
    "rechecks-rarely", "keys and key gaps are read every 5 minutes, not every 30 s",
    device=RechecksKeysRarely,
)  # fmt: skip
polls_twice = Variant("polls-twice", "the client polls twice as often when idle", device=PollsTwice)

CHANGES = (
    any_author, no_rotation_owed, any_rev, wider_skew, last_of_equals, rotate_anyone,
    grants_overwrite, ignores_revocation, writes_while_behind, skips_missing_epochs,
    rechecks_rarely, polls_twice,
)  # fmt: skip
"""The three of issue 36 first, then relay and client changes of our own."""
