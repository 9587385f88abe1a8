"""The log as one device was served it (spec: Log rules, Log chain, Client verification).

Each log page answers the entries with ``seq > after`` up to its last one, or up to
its ``cursor`` (the relay's counter) when no more wait, and the log is never
filtered: so a page tells the whole log over that span. ``LogSeen`` keeps the latest
page's word for every span, knows which prefix of the log is complete, computes the
chain over it at each boundary, and notes every way the relay went back on its own
account.
"""

import bisect

from simkit.protocol.logchain import log_genesis, log_step

STRIDE = 64


class LogSeen:
    def __init__(self, storage_key: str) -> None:
        self.storage_key = storage_key
        self.entries: dict[int, tuple[str, float]] = {}  # seq -> (record, rev)
        self.spans: list[tuple[int, int]] = []  # (after, end]: known whole, disjoint, sorted
        self.contradictions: list[str] = []
        self._heads: dict[int, str] = {}  # boundary -> head, over the complete prefix
        self.pruned: set[int] = set()  # where a pruned log's kept part began (oldest - 1)
        self.pruned_tick = -1  # the last read that found the log pruned past the device

    def contradiction(self, what: str) -> None:
        self.contradictions.append(what)

    def read(self, after: int, answer: dict, tick: int = 0, top_served: int = 0) -> None:
        """One log page, read from ``after``. A page whose ``oldest`` is above
        ``after + 1`` tells nothing of the entries below ``oldest``: the log was pruned
        past the reader, or those seqs were spent (Log verification status). Its ``head``
        (the highest seq in the log) is never below an op a pull served (``top_served``):
        the relay logs every write it stores (F41)."""
        entries = answer.get("entries")
        if not isinstance(entries, list):
            return
        seqs = [e.get("seq") for e in entries if isinstance(e, dict)]
        if len(seqs) != len(entries) or not all(isinstance(s, int) for s in seqs):
            return
        oldest = answer.get("oldest")  # read first: a page out of order was pruned too
        pruned = isinstance(oldest, int) and oldest > after + 1
        if pruned:
            self.pruned.add(oldest - 1)
            self.pruned_tick = tick
        if any(b <= a for a, b in zip([after, *seqs], seqs, strict=False)):
            self.contradiction(f"log entries after {after} are not in increasing seq order")
            return
        head = answer.get("head")
        highest = max(self.entries, default=0)
        if isinstance(head, int) and head < max(highest, top_served):
            self.contradiction(f"log head {head} is below seq {max(highest, top_served)} served")
        if pruned:  # the page tells nothing below the kept log
            after = oldest - 1
        end = seqs[-1] if seqs else after
        if answer.get("more") is not True:  # the whole log as it stands: to its end
            end = max([end, *(v for v in (head, answer.get("cursor")) if isinstance(v, int))])
        for seq in [s for s in self.entries if after < s <= end]:
            del self.entries[seq]
        for entry in entries:
            self.entries[entry["seq"]] = (entry.get("recordId"), entry.get("rev"))
        self._heads = {b: h for b, h in self._heads.items() if b <= after}
        self._cover(after, end)

    def _cover(self, after: int, end: int) -> None:
        spans = [*self.spans, (after, end)]
        spans.sort()
        merged = []
        for lo, hi in spans:
            if merged and lo <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        self.spans = merged

    def complete_to(self) -> int:
        """The log is known whole from its start through this seq."""
        return self.spans[0][1] if self.spans and self.spans[0][0] == 0 else 0

    def head_at(self, boundary: object) -> str | None:
        """The chain head after folding every entry with ``seq <= boundary``, when the
        log is known whole that far; else None."""
        if not isinstance(boundary, int) or boundary <= 0 or boundary % STRIDE:
            return None
        if boundary > self.complete_to():
            return None
        if boundary not in self._heads:
            start = max((b for b in self._heads if b < boundary), default=0)
            head = self._heads.get(start, log_genesis(self.storage_key))
            seqs = sorted(self.entries)
            for seq in seqs[bisect.bisect_right(seqs, start) : bisect.bisect_right(seqs, boundary)]:
                record_id, rev = self.entries[seq]
                head = log_step(head, seq, record_id, rev)
            self._heads[boundary] = head
        return self._heads[boundary]

    def unserved(self, served: int, held: dict, refused: dict, whole: bool = False) -> str | None:
        """Log check (1) up to the seq served: an entry naming a record the device neither
        holds at that rev or newer nor refused, unless a later entry names the record
        (the relay serves a record's current version only) and the device's pull may have
        stopped before the relay's end (``whole``: it reached it at ``served``, so a later
        entry came after the pull)."""
        later = set() if whole else {r for seq, (r, _) in self.entries.items() if seq > served}
        for seq, (record, rev) in sorted(self.entries.items()):
            if seq > served:
                break
            held_rev = held[record].get("at") if record in held else None
            refused_rev = refused[record][0] if record in refused else None
            if (held_rev is not None and held_rev >= rev) or (
                refused_rev is not None and refused_rev >= rev
            ):
                continue
            if record not in later:
                return f"log entry {seq} names {record!r} at rev {rev}, never served"
        return None
