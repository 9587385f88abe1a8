"""Relays that each break one rule of the spec, as protocol variants (docs/variants.md).

The conformance tests show that the check named after a rule fails on the relay
that breaks it; ``simkit serve --variant`` serves them for the HTTP tests.
"""

from simkit.relay import Relay
from simkit.relay.state import LogEntry
from simkit.sim.variant import Variant


class NoSkewCheck(Relay):
    def _too_far_ahead(self, rev, now):
        return False


class LastOfEquals(Relay):
    def _wins(self, stored_rev, op_rev):
        return op_rev >= stored_rev


class LogsLosers(Relay):
    def _lose(self, call, graph, op, reserved):
        call.tx.append(graph.log, LogEntry(reserved, op.record_id, op.rev))


class MaxSeqPlusOne(Relay):
    def _next_seq(self, graph, reserved):
        return (graph.log[-1].seq if graph.log else 0) + 1


class CursorAtLastOp(Relay):
    @staticmethod
    def _cursor(graph, after, page, more):
        return page[-1].seq if page else after


class OverwritesOnGrant(Relay):
    def _grant_wrap(self, tx, graph, epoch, device_id, wrapped):
        tx.set(graph.wraps.setdefault(epoch, {}), device_id, wrapped)
        return True


class StrandingRotation(Relay):
    def eligible(self, key):
        return []


class NoCapabilities(Relay):
    def _require_capability(self, call, capability):
        pass


class NeverDelivered(Relay):
    def _delivered(self, key, blob):
        return False


skew_unchecked = Variant("skew-unchecked", "push rule 1 never rejects", relay=NoSkewCheck)
last_of_equals = Variant("last-of-equals", "push rule 2 keeps the last of equal revs", LastOfEquals)
