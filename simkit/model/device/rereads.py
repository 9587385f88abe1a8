"""How often a device reads key gaps: the same work done again is judged, not only counted.

The spec says a holder "reads keygaps ... wraps each missing epoch" (Ceremonies: Link a
device) and leaves when to the client; docs/client.md states simkit's ("Key rechecks"):
key gaps are read at a boot's first sync run of a graph, at a user's "sync now", and
then once ``recheck_s`` has passed on the device's own clock since it last decided to
(or when that clock reads earlier than it did then). A device that reads them at every
run, or every ``recheck_s`` milliseconds, does the same work again and again: the
``work`` invariant's loose bound never notices it.

Reading no code of the client's, the model cannot always tell which read restarted the
client's recheck, so it keeps every read that may have (*candidates*) and finds a read
too early only when it is too early after each of them. Excused, and kept as a
candidate: a read while the relay's last keys answer said ``rotationRequired``, or one
did since the last read (a rotation turn reads key gaps to learn who lacks the latest
key, docs/client.md "Who rotates", and reads on when another task's rotation lowered the
flag meanwhile); the first two reads of each graph after a "sync now" (a run under way
may read before the user's starts, then the user's run reads at once). Not judged: a
retry (client rule 10), the first read after a boot or an import. Intervals are read on
the device's clock, as the client reads them, less ``SLACK_MS`` for the time between
deciding to read and the request leaving. docs/model.md, "What it judges".
"""

SLACK_MS = 1000  # deciding to read and the request leaving: no time in virtual time
PRESS_READS = 2  # reads of each graph a "sync now" excuses: a run's under way, the user's
CANDIDATES_KEPT = 8  # more excused reads than this in a row: the next read is not judged


class ReReadRules:
    """Key gaps read no more often than the recheck (mixed into ``DeviceModel``)."""

    def _rereads_init(self) -> None:
        self._gaps_read: dict[str, list[int]] = {}  # sk -> candidates (device clock, ms)
        self._presses = 0  # "sync now" presses so far
        self._press_reads: dict[str, tuple[int, int]] = {}  # sk -> (press, reads excused)
        self._rotation_owed: set[str] = set()  # the last keys answer said rotationRequired
        self._rotation_since: set[str] = set()  # ... or one did since the last key gaps read

    def _rereads_reset(self) -> None:
        """A boot or an import: the next read of each graph is its first."""
        self._gaps_read.clear()

    def sync_now(self) -> None:
        """A user pressed "sync now": the device reads keys and key gaps at once."""
        self._presses += 1

    def _rereads_keys(self, sk: str, answer: dict) -> None:
        """A keys answer: whether the relay asks the graph's devices to rotate."""
        if answer.get("rotationRequired") is True:
            self._rotation_owed.add(sk)
            self._rotation_since.add(sk)
        else:
            self._rotation_owed.discard(sk)

    def _excused(self, sk: str) -> bool:
        if sk in self._rotation_since:
            if sk not in self._rotation_owed:
                self._rotation_since.discard(sk)
            return True
        press, reads = self._press_reads.get(sk, (0, 0))
        reads = reads if press == self._presses else 0
        if self._presses and reads < PRESS_READS:
            self._press_reads[sk] = (self._presses, reads + 1)
            return True
        return False

    def _rereads_sent(self, sk: str, clock_ms: int) -> None:
        """The device sent a key gaps read of ``sk`` (not a retry) at ``clock_ms``."""
        candidates = self._gaps_read.get(sk)
        if self._excused(sk):
            if candidates is not None and len(candidates) < CANDIDATES_KEPT:
                candidates.append(clock_ms)
            else:
                self._gaps_read.pop(sk, None)
            return
        recheck_ms = self.app.recheck_s * 1000 - SLACK_MS
        if candidates and all(0 <= clock_ms - c < recheck_ms for c in candidates):
            self.find(
                "ceremony: link",
                f"read the key gaps of {sk} {(clock_ms - max(candidates)) / 1000:.3f} s "
                f"after it last did, by its own clock (model: at a boot's first run, a "
                f"user's sync now, or once {self.app.recheck_s:g} s have passed: "
                "docs/client.md)",
                sk,
            )
        self._gaps_read[sk] = [clock_ms]
