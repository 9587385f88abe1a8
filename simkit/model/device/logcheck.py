"""Log verification status, Log chain and log check (2): an alarm only after a
contradiction, latched; final heads are the chain's."""

from simkit.model.device import facts
from simkit.model.device.graph import Graph, Served
from simkit.model.device.views import UNFILTERED, LogView
from simkit.protocol.derived import checkpoint_record_id


class LogRules:
    """What ``DeviceModel`` judges of the log verification status and the chain heads
    the device keeps.
    A part of ``DeviceModel`` (its state, ``graph`` and ``find`` are the model's)."""

    def _log_changed(self, graph: Graph, view: LogView | None) -> None:
        """Log verification status: an alarm needs a contradiction in what the device was
        served and is latched; a chain anchored mid-log is never ok; final heads are the
        chain over the entries served (log chain)."""
        before_at = graph.log_view_at
        before, graph.log_view, graph.log_view_at = graph.log_view, view, self.tick
        if view is None:
            return
        sk = graph.sk
        latched = before is not None and before.status == "alarm" and not self._wipe
        if latched and view.status != "alarm":
            self.find("log status", f"left alarm for {view.status} in {sk} "
                      "(model: alarm is latched)", sk)  # fmt: skip
        if view.status == "ok" and view.anchored is not None:
            self.find("log status: anchored", f"reports ok for {sk} with a chain anchored "
                      f"mid-log at {view.anchored} (model: never ok)", sk)  # fmt: skip
        self._pruning(graph, before, before_at, view)
        if view.anchored is None:
            for boundary, head in sorted(view.heads.items()):
                if before is not None and before.heads.get(boundary) == head:
                    continue
                expected = graph.log.head_at(boundary)
                if expected is not None and expected != head:
                    self.find(
                        "log chain",
                        f"computed head {head[:10]}... at boundary {boundary} of {sk}; the log "
                        f"it was served gives {expected[:10]}... (model: the chain after "
                        "folding every entry with seq <= B)",
                        sk,
                    )
        if view.status == "alarm" and (before is None or before.status != "alarm"):
            cause = self._alarm_cause(graph)
            if cause is None:
                self.find(
                    "log status",
                    f"raised alarm on {sk} without a contradiction in what it was served "
                    "(model: alarm only on a contradiction, or a peer's head that differs at a "
                    "boundary)",
                    sk,
                )

    def _pruning(self, graph: Graph, before: LogView | None, at: int, view: LogView) -> None:
        """Log verification status: ``ok -> unverified`` when the log was pruned past the
        device: a log read since its last commit (``at``) found the kept log starting above
        the seq it read after, so it anchors there; and it anchors nowhere else (a fresh log
        state may start anchored at the seq already served to it)."""
        seen = graph.log
        if view.status != "alarm" and view.anchored is None and seen.pruned_tick > at:
            self.find("log status", f"kept a chain from genesis for {graph.sk} after a "
                      f"log read found the log pruned past it at {max(seen.pruned)} (model: "
                      "unverified, anchored where the kept log starts)", graph.sk)  # fmt: skip
        anchored = view.anchored
        if anchored is None or anchored in seen.pruned:
            return
        served = graph.cursors.get((graph.gid, UNFILTERED, UNFILTERED), 0)
        if before is None or self._wipe:  # a fresh log state: started late, at the seq served
            if not 0 < anchored <= served:
                self.find("log status", f"started its chain of {graph.sk} anchored at "
                          f"{anchored}, with seq {served} served to it (model: at genesis, or "
                          "anchored at most at the seq served)", graph.sk)  # fmt: skip
        elif anchored != before.anchored:
            self.find("log status", f"anchored its chain of {graph.sk} at {anchored}, where "
                      f"no log read found the log pruned (model: pruned at "
                      f"{sorted(seen.pruned) or 'none'})", graph.sk)  # fmt: skip

    def _alarm_cause(self, graph: Graph) -> str | None:
        """A contradiction the device was served, if any: log check (1) up to the seq
        served, log check (2) against a believable checkpoint, or an answer that went back
        on the relay's own account."""
        if graph.log.contradictions:
            return graph.log.contradictions[-1]
        served = graph.cursors.get((graph.gid, UNFILTERED, UNFILTERED), 0)
        unserved = graph.log.unserved(served, graph.held, graph.refused, served in graph.whole)
        if unserved is not None:
            return unserved
        return self._checkpoint_differs(graph)

    def _checkpoint_differs(self, graph: Graph) -> str | None:
        """Log check (2): a checkpoint of a peer the device could believe, served to it
        since its log state began (an import drops that state), whose head differs from
        the chain at its boundary. Every version served counts, not only the one its slot
        holds now: what a peer signed for a boundary stays signed when a later write takes
        the slot, a newer checkpoint or another member's forgery the device cannot
        believe (docs/findings.md, F28)."""
        epoch1 = graph.keys.get(1)
        roster = graph.rosters[-1][2] if graph.rosters else {}
        if epoch1 is None:
            return None
        for claimed, entry in sorted(roster.items()):
            if claimed == self.me.device_id:
                continue
            for item in graph.served_by_record.get(checkpoint_record_id(epoch1, claimed), ()):
                data = self._believable(graph, item, claimed, entry.get("memberId"))
                if data is None:
                    continue
                head = graph.log.head_at(data.get("seq"))
                if head is not None and head != data.get("head"):
                    return f"{claimed}'s checkpoint at {data.get('seq')} differs"
        return None

    def _believable(self, graph: Graph, item: Served, claimed: str, owner: object) -> dict | None:
        """The data of a checkpoint served in ``claimed``'s slot, if the device could
        believe it (Checkpoint rules): served since its log state began, it opens under
        the slot's AAD, fits the checkpoint schema, names ``claimed``, and its proven
        author (client rule 2's authorship clauses under a roster the device was given,
        any of them: the spec leaves the cache to the client) owns ``claimed``."""
        op, sk = item.op, graph.sk
        key = graph.keys.get(op.get("e", max(graph.keys, default=0)))
        if item.tick < graph.claims_from or key is None or not self.app.verify_signatures:
            return None
        envelope, problem = facts.open_op(key, sk, op)
        problem = problem or facts.envelope_problem(envelope, op.get("recordId"))
        if problem is not None or op.get("rev") != envelope["r"]["at"]:
            return None
        record = envelope["r"]
        if record["kind"] != facts.CHECKPOINT_KIND or record.get("deleted") is True:
            return None
        if facts.schema_problem(record, self.app.accepts) is not None:
            return None
        if record["data"].get("d") != claimed or record["by"] != owner:
            return None
        if all(facts.authorship_problems(envelope, sk, r)[0] for _, _, r in graph.rosters):
            return None
        return record["data"]
