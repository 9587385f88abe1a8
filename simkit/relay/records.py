"""Record routes: push with its four per-op rules, pull and the log (spec: Records).

Each rule of the protocol that a variant may want to change lives in one small
method (``_too_far_ahead``, ``_wins``, ``_lose``, ``_quota_reason``,
``_next_seq``, ``_write``); docs/relay.md lists them under Variants.
"""

from bisect import bisect_right
from collections.abc import Callable, Iterator
from itertools import islice
from operator import attrgetter

from simkit.protocol.http import Response, json_list_response, json_response
from simkit.relay.core import Call, RelayCore
from simkit.relay.schema import (
    B64URL,
    MAX_NONCE_CHARS,
    MAX_SAFE_INTEGER,
    array,
    fields,
    integer,
    label,
    query_int,
    query_list,
    safe_id,
    text,
)
from simkit.relay.state import Graph, LogEntry, Record

_SEQ = attrgetter("seq")


def _growth(stored: Record | None, op: Record) -> int:
    """How many stored bytes writing ``op`` adds (negative when it shrinks the row)."""
    return len(op.c) - (0 if stored is None else len(stored.c))


class RecordRoutes(RelayCore):
    def _push(self, call: Call) -> Response:
        body = fields(call.body, "body", ("ops",))
        ops = [
            self._op(item, f"ops[{i}]")
            for i, item in enumerate(array(body["ops"], "ops", self.settings.max_ops_per_push))
        ]
        graph = self._store_graph(call)
        first = graph.seq + 1
        call.tx.assign(graph, "seq", graph.seq + len(ops))  # the whole range, up front
        accepted, rejected = 0, []
        for reserved, op in enumerate(ops, start=first):
            stored = graph.records.get(op.record_id)
            if self._too_far_ahead(op.rev, call.now):
                rejected.append({"recordId": op.record_id, "reason": "rev-too-far-ahead"})
            elif stored is not None and not self._wins(stored.rev, op.rev):
                self._lose(call, graph, op, reserved)
            elif (reason := self._quota_reason(graph, stored, op)) is not None:
                rejected.append({"recordId": op.record_id, "reason": reason})
            else:
                self._write(call, graph, stored, op, self._next_seq(graph, reserved))
                accepted += 1
        call.tx.poke(graph.key)
        answer = {
            "accepted": accepted,
            "cursor": graph.seq,
            "now": call.now,
            "epoch": graph.latest_epoch,
        }
        if rejected:
            answer["rejected"] = rejected
        return json_response(200, answer)

    def _op(self, item: object, where: str) -> Record:
        """One GraphOpIn; ``k`` and ``sh`` are kept exactly as given."""
        op = fields(item, where, ("recordId", "rev", "n", "c"), ("e", "k", "sh"))

        def optional(name: str, check: Callable[[object, str], object]) -> object:
            return check(op[name], f"{where}.{name}") if name in op else None

        return Record(
            record_id=safe_id(op["recordId"], f"{where}.recordId"),
            rev=integer(op["rev"], f"{where}.rev"),
            n=text(op["n"], f"{where}.n", MAX_NONCE_CHARS, B64URL, "base64url"),
            c=text(op["c"], f"{where}.c", self.settings.max_ciphertext_chars, B64URL, "base64url"),
            e=optional("e", integer),
            k=optional("k", label),
            sh=optional("sh", label),
        )

    def _too_far_ahead(self, rev: int, now: int) -> bool:
        """Push rule 1: a rev more than maxRevSkewMs ahead of the relay's clock."""
        return rev > now + self.settings.max_rev_skew_ms

    def _wins(self, stored_rev: int, op_rev: int) -> bool:
        """Push rule 2, last-write-wins: only a strictly higher rev replaces (first of equals
        stays)."""
        return op_rev > stored_rev

    def _lose(self, call: Call, graph: Graph, op: Record, reserved: int) -> None:
        """An LWW loser is not a write: not stored, not logged, not listed as rejected."""

    def _quota_reason(self, graph: Graph, stored: Record | None, op: Record) -> str | None:
        """Push rule 3 on the incremental counters: the record count, then the stored bytes."""
        if stored is None and len(graph.records) + 1 > self.settings.quota_records:
            return "quota-records"
        if graph.record_bytes + _growth(stored, op) > self.settings.quota_bytes:
            return "quota-bytes"
        return None

    def _next_seq(self, graph: Graph, reserved: int) -> int:
        """The seq an accepted op gets: the number reserved for it from the counter."""
        return reserved

    def _write(self, call: Call, graph: Graph, stored: Record | None, op: Record, seq: int) -> None:
        """Push rule 4: upsert the row, count its bytes and log it, all in this transaction."""
        tx, row = call.tx, op.at(seq)
        tx.set(graph.records, row.record_id, row)
        tx.assign(graph, "record_bytes", graph.record_bytes + _growth(stored, row))
        tx.append(graph.log, LogEntry(row.seq, row.record_id, row.rev))
        if call.member not in graph.pushers:
            tx.append(graph.pushers, call.member)

    def _page(self, call: Call) -> tuple[int, int]:
        """``after`` (default 0) and ``limit`` (default and ceiling maxPullLimit)."""
        query, ceiling = call.request.query, self.settings.max_pull_limit
        after = query_int(query, "after", 0, 0, MAX_SAFE_INTEGER)
        return after, min(query_int(query, "limit", ceiling, 1, MAX_SAFE_INTEGER), ceiling)

    @staticmethod
    def _cursor(graph: Graph, after: int, page: list, more: bool) -> int:
        """Where the next page starts; an exhausted page jumps to the high-water mark."""
        return page[-1].seq if more else max(after, graph.seq)

    def _pull(self, call: Call) -> Response:
        graph, (after, limit) = call.graph, self._page(call)
        kinds = query_list(call.request.query, "kinds")
        shards = query_list(call.request.query, "shards")
        matches = (
            row
            for row in live_after(graph, after)
            if (kinds is None or row.k in kinds) and (shards is None or row.sh in shards)
        )
        page = list(islice(matches, limit))
        more = next(matches, None) is not None
        return json_list_response(
            200,
            "ops",
            [row.wire_text() for row in page],
            {
                "cursor": self._cursor(graph, after, page, more),
                "more": more,
                "epoch": graph.latest_epoch,
            },
        )

    def _log(self, call: Call) -> Response:
        """The log is never filtered; ``head``/``oldest`` are 0 while it is empty. A relay
        that prunes (``log_keep``) answers only the newest entries, ``oldest`` the lowest
        of them; a pull still finds every record (it walks the rows' own list)."""
        graph, (after, limit) = call.graph, self._page(call)
        log = graph.log
        keep = self.settings.log_keep
        if keep is not None and len(log) > keep:
            log = log[len(log) - keep :]
        start = bisect_right(log, after, key=_SEQ)
        page = log[start : start + limit]
        more = start + limit < len(log)
        return json_list_response(
            200,
            "entries",
            [entry.wire_text() for entry in page],
            {
                "cursor": self._cursor(graph, after, page, more),
                "more": more,
                "head": log[-1].seq if log else 0,
                "oldest": log[0].seq if log else 0,
            },
        )


def live_after(graph: Graph, after: int) -> Iterator[Record]:
    """Rows with seq > after in seq order: bisect the log, skip superseded entries."""
    log, records = graph.log, graph.records
    for i in range(bisect_right(log, after, key=_SEQ), len(log)):
        entry = log[i]
        row = records.get(entry.record_id)
        if row is not None and row.seq == entry.seq:
            yield row
