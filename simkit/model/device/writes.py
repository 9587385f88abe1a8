"""Local writes (client rules 1, 9, Local writes): every write durable when the
application is told, stamped exactly as client rule 1 says."""

from simkit.model.device import facts
from simkit.model.device.graph import Graph
from simkit.model.device.receive import refused_for_good
from simkit.model.device.views import Changes
from simkit.model.device.wire import at_text


class WriteRules:
    """What ``DeviceModel`` judges of local writes: durable when the application is
    told, stamped as client rule 1 says.
    A part of ``DeviceModel`` (its state, ``graph`` and ``find`` are the model's)."""

    def app_wrote(self, sk: str, record_id: str, rev: float) -> None:
        """The application was told a write is done: it must be durable already."""
        held = self.graph(sk).held.get(record_id)
        if held is None or held.get("at") != rev:
            self.find(
                "service rule 8",
                f"told the application {record_id} was written at {rev} in {sk}, but its "
                f"durable store holds {at_text(held)} (model: durable when the write returns)",
                sk,
                [record_id],
            )

    def _record_changed(self, sk: str, rid: str, changes: Changes, clock_ms: int, restamp: bool):
        """One record's held version, queue entry and refusal after a commit."""
        graph, key = self.graph(sk), (sk, rid)
        old, queued_before = graph.held.get(rid), graph.queued.get(rid)
        new = changes.held.get(key, old)
        queued = changes.queued.get(key, queued_before)
        if key in changes.refused:
            self._refusal(graph, rid, changes.refused[key])
        written = queued is not None and queued != queued_before
        if new != old:
            if new is None:
                if self._importing is None and not refused_for_good(graph, rid):
                    self.find("graph record", f"dropped {rid} from {sk} (model: a record is "
                              "never forgotten; a deletion is a tombstone)", sk, [rid])  # fmt: skip
            elif written and new == queued:
                self._stamped(graph, rid, old, new, clock_ms, restamp)
            elif restamp and queued is None:
                # re-stamped, the write lost to the relay's copy it had kept aside (a pull
                # served it while the write was queued): the stamp is spent all the same
                spent = self._expected_stamp(graph, rid, old, clock_ms, True)
                self.last = max(spent, self.last)
                queued_before = {**queued_before, "at": spent}
                self._applied(graph, rid, queued_before, new)
            else:
                self._applied(graph, rid, old, new)
                self._refusal_outlived(graph, rid, new)
        if queued is None and queued_before is not None:
            self._dequeued(graph, rid, queued_before, new)
        elif queued is not None and new != queued and self._importing is None:
            self.find(
                "queued writes",
                f"kept its queued write of {rid} in {sk} at {queued.get('at')} while it holds "
                f"{at_text(new)} (model: a queued write is the version held; one replaced "
                "leaves the queue)",
                sk,
                [rid],
            )
        if written and queued_before is None:
            graph.before[rid] = old
        if written:
            graph.settled.pop(rid, None)
        if new is not None and old is not None and new != old:
            graph.history[rid] = [*graph.history[rid][-3:], old]
        if new is None:
            graph.held.pop(rid, None)
        else:
            graph.held[rid] = new
        if queued is None:
            graph.queued.pop(rid, None)
            graph.before.pop(rid, None)
        else:
            graph.queued[rid] = queued

    def _refusal_outlived(self, graph: Graph, rid: str, new: dict) -> None:
        """``status.rejected`` names the records refused (Events rule 5): a version taken
        from the relay at or above the refused one ends that record's refusal, unless the
        refused op was served again with it or after it (a relay replaying it: refused
        once more)."""
        refused = graph.refused.get(rid)
        at = new.get("at") if isinstance(new, dict) else None
        if refused is None or not facts.is_number(at) or refused[0] > at:
            return
        served = graph.served_by_record.get(rid, ())
        applied = max((i.tick for i in served if i.op.get("rev") == at), default=0)
        if any(i.op.get("rev") == refused[0] and i.tick >= applied for i in served):
            return
        self.find(
            "events rule 5",
            f"applied {rid} at {at_text(new)} in {graph.sk} and still lists it refused at "
            f"rev {refused[0]} (model: a valid version applied ends its refusal)",
            graph.sk,
            [rid],
        )

    def _expected_stamp(self, graph: Graph, rid: str, old, clock_ms: int, restamp: bool) -> int:
        """Client rule 1: ``at = max(now, last + 1, priorRev + 1)``, now as corrected by the
        adopted skew (client rule 9); a re-stamp's prior is what was held before the
        queued write."""
        prior = graph.before.get(rid, old) if restamp else old
        return max(clock_ms - self.skew, self.last + 1, int(prior["at"] if prior else 0) + 1)

    def _stamped(self, graph: Graph, rid: str, old: dict | None, new: dict, clock_ms: int,
                 restamp: bool) -> None:  # fmt: skip
        """A local write (or a re-stamp after a clock repair): client rule 1's stamp, and
        GraphRecord's shape (a tombstone's data empty)."""
        sk = graph.sk
        problem = facts.record_problem(new)
        if problem is not None or new.get("id") != rid or new.get("by") != self.me.member_id:
            self.find("graph record", f"wrote {rid} in {sk} malformed: {problem or new!r:.120}",
                      sk, [rid])  # fmt: skip
            return
        expected = self._expected_stamp(graph, rid, old, clock_ms, restamp)
        if new["at"] != expected:
            why = "re-stamped after a clock repair" if restamp else "stamped"
            self.find(
                "client rule 9" if restamp else "client rule 1",
                f"{why} {rid} in {sk} at {new['at']}; the model stamps {expected} (max of now "
                f"{clock_ms - self.skew}, last+1 {self.last + 1}, priorRev+1)",
                sk,
                [rid],
            )
        self.last = max(self.last, new["at"])
