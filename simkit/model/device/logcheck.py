"""Log verification status, Log chain and log check (2): an alarm only after a
contradiction, latched; final heads are the chain's."""

from simkit.model.device import facts
from simkit.model.device.graph import Graph
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
        before, graph.log_view, graph.log_view_at = graph.log_view, view, self.tick
        if view is None:
            return
        sk = graph.sk
        latched = before is not None and before.status == "alarm" and not self._wipe
        if latched and view.status != "alarm":
            self.find("Log verification status", f"left alarm for {view.status} in {sk} "
                      "(model: alarm is latched)", sk)  # fmt: skip
        if view.status == "ok" and view.anchored is not None:
            self.find("Log verification status", f"reports ok for {sk} with a chain anchored "
                      f"mid-log at {view.anchored} (model: never ok)", sk)  # fmt: skip
        if view.anchored is None:
            for boundary, head in sorted(view.heads.items()):
                if before is not None and before.heads.get(boundary) == head:
                    continue
                expected = graph.log.head_at(boundary)
                if expected is not None and expected != head:
                    self.find(
                        "Log chain",
                        f"computed head {head[:10]}... at boundary {boundary} of {sk}; the log "
                        f"it was served gives {expected[:10]}... (model: the chain after "
                        "folding every entry with seq <= B)",
                        sk,
                    )
        if view.status == "alarm" and (before is None or before.status != "alarm"):
            cause = self._alarm_cause(graph)
            if cause is None:
                self.find(
                    "Log verification status",
                    f"raised alarm on {sk} without a contradiction in what it was served "
                    "(model: alarm only on a contradiction, or a peer's head that differs at a "
                    "boundary)",
                    sk,
                )

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
        epoch1 = graph.keys.get(1)
        roster = graph.rosters[-1][2] if graph.rosters else {}
        for record in graph.held.values():
            if record.get("kind") != facts.CHECKPOINT_KIND or record.get("deleted"):
                continue
            data = record.get("data", {})
            claimed = data.get("d")
            owner = roster.get(claimed, {}).get("memberId") if isinstance(claimed, str) else None
            if claimed == self.me.device_id or epoch1 is None or owner != record.get("by"):
                continue
            if record.get("id") != checkpoint_record_id(epoch1, claimed):
                continue
            head = graph.log.head_at(data.get("seq"))
            if head is not None and head != data.get("head"):
                return f"{claimed}'s checkpoint at {data.get('seq')} differs"
        return None
