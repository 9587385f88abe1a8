"""Receiving (client rules 2-4, 6, 8, Pull rules): what a device must apply, refuse
or wait for, and how far its cursors may move."""

import bisect
import functools

from simkit.model.device import facts
from simkit.model.device.graph import Graph, Served
from simkit.model.device.views import UNFILTERED, Subscription
from simkit.model.device.wire import as_int, at_text, gid, is_count

ACCEPT, REFUSE, EITHER, UNDECIDED = "accept", "refuse", "either", "undecided"

ROSTER_SLACK_MS = 2000  # the model reads the clock as the page comes, the device as it checks


class ReceiveRules:
    """What ``DeviceModel`` judges of what the device receives: the served ops it must
    apply, refuse or wait for, and how far its cursors may move.
    A part of ``DeviceModel`` (its state, ``graph`` and ``find`` are the model's)."""

    def _pull_sent(self, graph: Graph, request) -> None:
        """Clients persist ``cursor`` per subscription (Pull rules) and pull from it: a
        pull from below the cursor it committed reads again what it decided."""
        query = request.query
        sub = _subscription(request.path, query.get("kinds", ""), query.get("shards", ""))
        cursor, after = graph.cursors.get(sub), as_int(query.get("after"), 0)
        if cursor is not None and isinstance(after, int) and after < cursor:
            self.find(
                "pull: cursor per subscription",
                f"pulled {graph.sk} from {after} though its cursor stood at {cursor} (model: "
                "clients persist cursor per subscription and pull from it)",
                graph.sk,
            )

    def _pulled(self, graph: Graph, request, answer: dict, clock_ms: int | None = None) -> None:
        query = request.query
        sub = _subscription(request.path, query.get("kinds", ""), query.get("shards", ""))
        ops = answer.get("ops") if isinstance(answer.get("ops"), list) else []
        after = as_int(request.query.get("after"), 0)
        cursor = answer.get("cursor")
        if isinstance(cursor, int) and cursor < after and sub[1:] == (UNFILTERED, UNFILTERED):
            graph.log.contradiction(f"a pull answer's cursor {cursor} went back below {after}")
        if isinstance(cursor, int):
            self._counter(graph, cursor, "a pull answer", page=answer.get("more") is True)
        furthest = after
        ops = [op for op in ops if isinstance(op, dict) and is_count(op.get("seq"))]
        end = max([after, *(op["seq"] for op in ops)])
        if isinstance(cursor, int):  # the page speaks for (after, cursor], whether or not
            end = max(end, cursor)  # it says more (a withholding relay's cursor runs ahead)
        self._forget_served(graph, sub, after, end)
        graph.top_served = max([graph.top_served, *(op["seq"] for op in ops)])
        for op in ops:
            served = Served(op, sub, self.tick, self.boot, clock_ms)
            if op["seq"] not in graph.served:
                bisect.insort(graph.served_seqs, op["seq"])
            graph.served.setdefault(op["seq"], []).append(served)
            graph.served_by_record[op.get("recordId")].append(served)
            furthest = max(furthest, op["seq"])
        if isinstance(cursor, int):
            furthest = max(furthest, cursor)
        graph.bounds[sub] = max(graph.bounds.get(sub, 0), furthest)
        if sub[1:] == (UNFILTERED, UNFILTERED) and answer.get("more") is not True:
            # the relay's end: a log entry beyond it came later, so it cannot excuse an
            # earlier entry of its record not served (log check (1); docs/findings.md, F26)
            graph.whole.add(furthest)

    def _forget_served(self, graph: Graph, sub, after: int, end: int) -> None:
        """A page tells a subscription's whole view over (after, end]: what was served
        there before is replaced (the relay serves each record's current version only)."""
        seqs = graph.served_seqs
        low, high = bisect.bisect_right(seqs, after), bisect.bisect_right(seqs, end)
        kept = []
        for seq in seqs[low:high]:
            left = [item for item in graph.served[seq] if item.sub != sub]
            if left:
                graph.served[seq] = left
                kept.append(seq)
            else:
                del graph.served[seq]
        seqs[low:high] = kept  # still every seq of graph.served, sorted

    @staticmethod
    def _counter(graph: Graph, cursor: int, what: str, page: bool = False) -> None:
        """The relay's counter never goes back (Endpoints: seq is a counter): a push
        answer or an exhausted pull states it, and it is at least every cursor any
        answer gave before (a page that says ``more`` states only where it stopped)."""
        if cursor < graph.counter and not page:
            graph.log.contradiction(f"{what}'s cursor {cursor} is below {graph.counter}")
        graph.counter = max(graph.counter, cursor)

    def _cursor_moved(self, graph: Graph, sub: Subscription, cursor: int | None) -> None:
        """A subscription's cursor moves only over ops the device decided, never past an
        op under an epoch it lacks (client rule 4), never past what the relay served it,
        except over its own batch's echo (client rule 8)."""
        before = graph.cursors.get(sub, 0)
        if cursor is None:
            graph.cursors.pop(sub, None)
            if sub[1:] == (UNFILTERED, UNFILTERED):
                graph.whole.clear()  # wiped: what was pulled before says nothing now
            return
        graph.cursors[sub] = cursor
        if cursor <= before:
            return
        sk, unfiltered = graph.sk, sub[1:] == (UNFILTERED, UNFILTERED)
        bound = graph.bounds.get(sub, 0)
        if unfiltered and self._echo_skipped(graph, before, cursor):
            # per the relay's answer every seq passed is the device's own batch: an op
            # served earlier at one of them was another view (a malicious relay's to
            # answer for in the log check, not the cursor's)
            return
        if cursor > bound:
            self.find(
                "client rule 8" if unfiltered and graph.pushes else "pull: cursor per subscription",
                f"moved its cursor of {sub[0]} from {before} to {cursor}, past what the relay "
                f"served it ({bound}) (model: echo skipping only when every op of the batch "
                "landed and nothing else was written between)",
                sk,
            )
        seqs = graph.served_seqs
        for seq in seqs[bisect.bisect_right(seqs, before) : bisect.bisect_right(seqs, cursor)]:
            items = [item for item in graph.served[seq] if item.sub == sub]
            if len(items) == 1:  # several ops at one seq: no cursor can say which it passed
                self._passed(graph, items[0])

    def _echo_skipped(self, graph: Graph, before: int, cursor: int) -> bool:
        return any(
            answer.get("cursor") == cursor
            and accepted == size
            and not answer.get("rejected")
            and cursor - size == before
            for _, size, accepted, answer in graph.pushes
        )

    def _passed(self, graph: Graph, item: Served) -> None:
        """The cursor passed one served op: it is decided, as client rules 2-4 and 6 say."""
        op, sk = item.op, graph.sk
        rid, rev = op.get("recordId"), op.get("rev")
        decision, reason, record = self.verdict(graph, item)
        held, refused = graph.held.get(rid), graph.refused.get(rid)
        if decision == UNDECIDED:
            rule = "client rule 6" if reason == "no roster" else "client rule 4"
            self.find(
                rule,
                f"moved its cursor past seq {op.get('seq')} ({rid}) in {sk} though {reason} "
                "(model: stop before it, keep the cursor, fetch and retry)",
                sk,
                [rid],
            )
            return
        held_rev = held.get("at", 0) if held else None
        if decision == ACCEPT:
            if held_rev is None or held_rev < rev:
                self.find(
                    "client rule 2",
                    f"passed {rid} (rev {rev}, seq {op.get('seq')}) in {sk} without applying it "
                    f"(holds {at_text(held)}); it passes every check (model: apply it)",
                    sk,
                    [rid],
                )
            elif held_rev == rev and held != record and rid not in graph.queued:
                self.find(
                    "client rule 3",
                    f"kept its own {rid} at rev {rev} in {sk} over the relay's copy at the same "
                    "rev with other content (model: take the relay's copy when local.at <= "
                    "record.at)",
                    sk,
                    [rid],
                )
        elif (
            decision == REFUSE
            and (held_rev is None or held_rev < rev)
            and (refused is None or refused[0] < rev)
        ):
            self.find(
                "client rule 2",
                f"skipped {rid} (rev {rev}) in {sk} ({reason}) without reporting it (model: "
                "failing records are skipped and the reason reported)",
                sk,
                [rid],
            )

    def verdict(self, graph: Graph, item: Served) -> tuple[str, str, dict | None]:
        """Client rule 2 for one served op, with the keys the device holds and the rosters
        it could have used: from the last one it had when the op came (this boot) to the
        newest. ``(decision, why, the parsed record)``: accept, refuse, either (the rosters
        disagree) or undecided (no key for its epoch, or no roster)."""
        op, sk = item.op, graph.sk
        epoch = op.get("e", max(graph.keys, default=0))
        key = graph.keys.get(epoch)
        if key is None:
            return UNDECIDED, f"it holds no key for epoch {epoch}", None
        rosters = self._rosters(graph, item)
        cache_key = (sk, op.get("recordId"), op.get("rev"), op.get("c"), key,
                     tuple(t for t, _ in rosters))  # fmt: skip
        cached = self._verdicts.get(cache_key)
        if cached is not None:
            return cached
        decided = self._decide(graph, op, key, rosters)
        if len(self._verdicts) > 50_000:
            self._verdicts.clear()
        self._verdicts[cache_key] = decided
        return decided

    def _decide(self, graph, op, key, rosters) -> tuple[str, str, dict | None]:
        sk, rid = graph.sk, op.get("recordId")
        envelope, problem = facts.open_op(key, sk, op)
        problem = problem or facts.envelope_problem(envelope, rid)
        if problem is None and op.get("rev") != envelope["r"]["at"]:
            problem = ("shape", f"op rev {op.get('rev')} is not r.at {envelope['r']['at']}")
        if problem is None:
            problem = facts.schema_problem(envelope["r"], self.app.accepts)
        if problem is not None:
            return REFUSE, f"{problem[0]}: {problem[1]}", None
        record = facts.parsed(envelope["r"])
        if not self.app.verify_signatures:
            return ACCEPT, "", record
        if not rosters:
            return UNDECIDED, "no roster", record
        judged = [facts.authorship_problems(envelope, sk, r) for _, r in rosters]
        strict = [problem for problem, _ in judged]
        lenient = [problem for _, problem in judged]
        if all(strict):
            return REFUSE, f"{strict[-1][0]}: {strict[-1][1]}", record
        if not any(lenient):
            return ACCEPT, "", record
        return EITHER, "the rosters it was given disagree", record

    def _rosters(self, graph: Graph, item: Served) -> list[tuple[int, dict]]:
        """The rosters the device could have judged ``item`` with: the newest it had
        received this boot when the op came, while fresh then (docs/client.md, "The
        roster cache": read less than ``recheck_s`` before, on the device's clock; F12),
        and every one received since."""
        window = [(t, r) for t, b, r in graph.rosters if b == item.boot and t > item.tick]
        earlier = [(t, r) for t, b, r in graph.rosters if b == item.boot and t < item.tick]
        fresh_ms = self.app.recheck_s * 1000 + ROSTER_SLACK_MS
        read = graph.roster_clocks.get(earlier[-1][0]) if earlier else None
        if read is not None and item.clock is not None and item.clock - read >= fresh_ms:
            earlier = []  # stale when the op came: the device reads the roster again
        return earlier[-1:] + window

    def _applied(self, graph: Graph, rid: str, old: dict | None, new: dict) -> None:
        """A record taken from the relay: served to the device, passing client rule 2, and
        by client rule 3 only over a version not newer. A version it held before may come
        back when the relay refused a write for good (docs/model.md)."""
        sk = graph.sk
        if new in graph.history.get(rid, ()) and refused_for_good(graph, rid):
            return  # restored after the relay refused the write for good
        match = None
        for item in reversed(graph.served_by_record.get(rid, ())):
            verdict = self.verdict(graph, item)
            if verdict[2] is not None and verdict[2] == new:
                match = (item, verdict)
                break
        if match is None:
            for item in reversed(graph.served_by_record.get(rid, ())):
                decision, reason, _ = self.verdict(graph, item)
                if decision == REFUSE and item.op.get("rev") == new.get("at"):
                    self.find(
                        "client rule 2",
                        f"applied {rid} (rev {new.get('at')}, seq {item.op.get('seq')}) in "
                        f"{sk}: {reason} (model: refuse and report it, never apply it "
                        "best-effort)",
                        sk,
                        [rid],
                    )
                    return
            unknown = sorted(set(new) - set(facts.RECORD_MEMBERS))
            if unknown:
                self.find(
                    "client rule 2",
                    f"stored {rid} in {sk} with members {unknown} "
                    "(model: unknown members are signed and ignored; only the parsed record is "
                    "stored)",
                    sk,
                    [rid],
                )
                return
            self.find("client rule 2", f"holds a version of {rid} in {sk} (at {at_text(new)}) that "
                      "no pull served it and it did not write", sk, [rid])  # fmt: skip
            return
        item, (decision, reason, _) = match
        if decision == REFUSE:
            self.find(
                "client rule 2",
                f"applied {rid} (rev {item.op.get('rev')}, seq {item.op.get('seq')}) in {sk}: "
                f"{reason} (model: refuse and report it, never apply it best-effort)",
                sk,
                [rid],
            )
        if old is not None and old.get("at", 0) > new["at"]:
            self.find(
                "client rule 3",
                f"replaced its {rid} at {old['at']} with the relay's older copy at {new['at']} in "
                f"{sk} (model: take the relay's copy only when local.at <= record.at)",
                sk,
                [rid],
            )

    def _refusal(self, graph: Graph, rid: str, refusal: tuple[float, str] | None) -> None:
        if refusal is None:
            graph.refused.pop(rid, None)
            return
        rev, reason = refusal
        if not isinstance(reason, str) or not reason:
            self.find("client rule 2", f"refused {rid} in {graph.sk} without a reason", graph.sk)
        for item in reversed(graph.served_by_record.get(rid, ())):
            if item.op.get("rev") == rev:
                decision, why, _ = self.verdict(graph, item)
                if decision == REFUSE and isinstance(reason, str):
                    self._reason_true(graph, item, rid, reason)
                stale = not any(t > item.tick for t, _ in self._rosters(graph, item))
                if decision != ACCEPT and why.startswith("unknown-device") and stale:
                    self.find(
                        "client rule 2",
                        f"refused {rid} (rev {rev}) in {graph.sk} for a signer its cached roster "
                        "does not know, without reading the roster again (model: a device "
                        "linked since is in the roster; if it cannot be read, client rule 6 "
                        "defers the batch)",
                        graph.sk,
                        [rid],
                    )
                if decision == ACCEPT:
                    self.find(
                        "client rule 2",
                        f"refused {rid} (rev {rev}) in {graph.sk} as {reason!r}, but it opens, "
                        "parses, fits its schema and verifies under every roster the device "
                        "was given (model: accept it)",
                        graph.sk,
                        [rid],
                    )
                break
        graph.refused[rid] = (rev, reason)


def refused_for_good(graph: Graph, rid: str) -> bool:
    """The relay refused the device's last push of ``rid`` for a reason no repair fixes."""
    reason = graph.settled.get(rid)
    return isinstance(reason, str) and reason != "rev-too-far-ahead"


@functools.lru_cache(maxsize=1024)
def _subscription(path: str, kinds: str, shards: str) -> Subscription:
    """The subscription a pull serves, from its path and filters (asked all day)."""
    return (
        gid(path),
        tuple(sorted(filter(None, kinds.split(",")))),
        tuple(sorted(filter(None, shards.split(",")))),
    )
