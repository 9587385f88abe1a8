"""seq-and-log: the relay's counter and its append-only log."""

from simkit.invariants.base import Invariant, rev_text


class SeqAndLog(Invariant):
    """Seqs strictly increase per graph and are never reused (a seq handed out is
    above every counter value seen before); the log is exactly the accepted writes in
    seq order (every stored row is its record's last log entry); no LWW loser is
    logged (revs strictly increase per record); no entry is ever rewritten."""

    name = "seq-and-log"

    def __init__(self) -> None:
        self._seen: dict[str, tuple[list, int]] = {}  # storage key -> (log so far, counter)

    def step(self, world):
        out = []
        for sk, graph in sorted(world.relay.state.graphs.items()):
            log = [(e.seq, e.record_id, e.rev) for e in graph.log]
            before, counter = self._seen.get(sk, ([], 0))
            if log[: len(before)] != before:
                out.append(self.violation(world, "a log entry was rewritten or removed", graph=sk))
            for seq, rid, _ in log[len(before) :]:
                if seq <= counter:
                    out.append(
                        self.violation(
                            world,
                            f"seq {seq} was handed out again (counter was {counter})",
                            graph=sk,
                            records=(rid,),
                        )
                    )
            last_seq, top_rev = 0, {}
            for seq, rid, rev in log:
                if seq <= last_seq:
                    out.append(
                        self.violation(
                            world, f"seq {seq} follows {last_seq}", graph=sk, records=(rid,)
                        )
                    )
                if rid in top_rev and rev <= top_rev[rid]:
                    out.append(
                        self.violation(
                            world,
                            f"{rid} at {rev_text(rev)} is logged after "
                            f"{rev_text(top_rev[rid])}: an LWW loser was logged",
                            graph=sk,
                            records=(rid,),
                        )
                    )
                last_seq, top_rev[rid] = seq, max(rev, top_rev.get(rid, rev))
            latest = {rid: (seq, rev) for seq, rid, rev in log}
            for rid, row in sorted(graph.records.items()):
                if latest.get(rid) != (row.seq, row.rev):
                    out.append(
                        self.violation(
                            world,
                            f"stored {rid} (seq {row.seq}) is not its last log entry",
                            graph=sk,
                            records=(rid,),
                        )
                    )
            self._seen[sk] = (log, graph.seq)
        return out
