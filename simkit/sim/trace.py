"""The trace: what happened in a world, in order, as data that invariants, reports
and replay read.

Every event has the same six members (``seq``, virtual time in whole microseconds
``t_us``, ``kind``, ``actor``, the actor's own clock reading ``clock_ms``, and free
``fields``) and is serialised as one canonicalJson line. The trace hash is SHA-256
over those lines, so it equals the SHA-256 of the JSON Lines dump, and it is a pure
function of the events: canonicalJson sorts keys, and refuses sets, whose order
differs per process. Time is an integer so that an event without floats in its
fields (nearly all) is encoded by the C encoder: canonicalJson's JavaScript-exact
walk, which floats need, cost more than half a fuzz run (docs/lab/performance.md).

``emit`` is on the hot path, so it only appends; lines are encoded when something
asks for the hash or a dump, and each line is hashed once.
"""

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

import attrs
import trio

from simkit.errors import EncodingError, SimkitError
from simkit.protocol.canonical import canonical_json, parse_json

KINDS = frozenset({"request", "response", "delivery", "fault", "crash", "event", "check"})
"""request/response: a device's side of an exchange; delivery: a message reached the
relay (or a poke reached a device); fault: something the network or a fault schedule
did; crash: a crash or restart; event: a client or relay event; check: an invariant."""

_MEMBERS = ("seq", "t_us", "kind", "actor", "clock_ms", "fields")


class TraceError(SimkitError, ValueError):
    """An event the trace cannot record (an unknown kind)."""


@attrs.frozen
class TraceEvent:
    """One event. ``t_us`` is virtual time in whole microseconds (``t``: in seconds);
    ``clock_ms`` is the actor's own wall clock, or None for an actor without one (the
    network)."""

    seq: int
    t_us: int
    kind: str
    actor: str
    clock_ms: int | None
    fields: dict[str, object]

    @property
    def t(self) -> float:
        """Virtual time in seconds."""
        return self.t_us / 1_000_000

    def to_data(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in _MEMBERS}

    def line(self) -> bytes:
        """The canonical JSON line that the dump holds and the hash covers."""
        try:
            return canonical_json(self.to_data()) + b"\n"
        except EncodingError as exc:
            raise EncodingError(
                f"trace event {self.seq} ({self.kind} by {self.actor}): {exc}"
            ) from None

    @classmethod
    def from_data(cls, data: object, seq: int) -> "TraceEvent":
        if not isinstance(data, dict) or sorted(data) != sorted(_MEMBERS):
            raise EncodingError(f"trace line {seq + 1}: expected an object with {_MEMBERS}")
        if data["seq"] != seq or not isinstance(data["fields"], dict):
            raise EncodingError(f"trace line {seq + 1}: seq must be {seq}, fields an object")
        return cls(**data)


class Trace:
    """An append-only sequence of events, stamped with virtual time and clocks.

    ``now`` is Trio's clock by default; an actor's clock reading comes from the
    reader given to ``register_clock``, at the event's virtual time (read once).

    In memory by default. ``stream_to(path)`` writes each event's line to a file as
    it is emitted (and hashes it then); the events readers have finished with can
    then be ``release``-d, so a long run's memory does not grow with simulated time:
    positions (``len``, ``since``, an event's ``seq``) keep counting from the start,
    and the whole trace is the file (``Trace.load``).
    """

    def __init__(self, now: Callable[[], float] = trio.current_time) -> None:
        self._now = now
        self._events: list[TraceEvent] = []
        self._base = 0  # the seq of _events[0]: events before it were released
        self._clocks: dict[str, Callable[[], int]] = {}
        self._hasher = hashlib.sha256()
        self._hashed = 0
        self._sink: BinaryIO | None = None
        self.path: Path | None = None

    def register_clock(self, actor: str, reading_at: Callable[[float], int]) -> None:
        """Stamp ``actor``'s events with its own clock reading from now on:
        ``reading_at(t)`` is what that clock reads (epoch ms) at virtual time ``t``."""
        self._clocks[actor] = reading_at

    def stream_to(self, path: str | Path) -> None:
        """From now on write every event to ``path`` (JSON Lines) as it is emitted."""
        if self._sink is not None:
            raise TraceError(f"the trace already streams to {self.path}")
        self.path = Path(path)
        self._sink = open(self.path, "wb")  # noqa: SIM115 (closed by close())
        self._flush_lines()

    @property
    def streaming(self) -> bool:
        return self._sink is not None

    def close(self) -> None:
        """Finish the streamed file (the trace stays readable in memory)."""
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def emit(self, kind: str, actor: str, /, **fields: object) -> TraceEvent:
        """Append an event. ``fields`` must be JSON values the caller does not mutate later."""
        if kind not in KINDS:
            raise TraceError(f"unknown trace event kind {kind!r}; kinds are {sorted(KINDS)}")
        clock, now = self._clocks.get(actor), self._now()
        event = TraceEvent(
            self._base + len(self._events),
            round(now * 1_000_000),
            kind,
            actor,
            None if clock is None else clock(now),
            fields,
        )
        self._events.append(event)
        if self._sink is not None:
            self._flush_lines()
        return event

    def _flush_lines(self) -> None:
        """Encode, hash and write what is not yet (each line exactly once)."""
        for event in self._events[self._hashed - self._base :]:
            line = event.line()
            self._hasher.update(line)
            if self._sink is not None:
                self._sink.write(line)
        self._hashed = self._base + len(self._events)

    def release(self, seq: int) -> None:
        """Forget the events before position ``seq`` (streamed traces only: they are
        in the file). Readers past ``seq`` are unaffected."""
        if self._sink is None:
            raise TraceError("only a streamed trace can release events")
        drop = min(seq, self._hashed) - self._base
        if drop > 0:
            del self._events[:drop]
            self._base += drop

    def __iter__(self) -> Iterator[TraceEvent]:
        self._require_whole()
        return iter(self._events)

    def __len__(self) -> int:
        return self._base + len(self._events)

    def __getitem__(self, seq: int) -> TraceEvent:
        if seq < 0:
            seq += len(self)
        if seq < self._base:
            raise TraceError(f"event {seq} was released; the whole trace is in {self.path}")
        return self._events[seq - self._base]

    def since(self, seq: int) -> list[TraceEvent]:
        """The events from position ``seq`` on (a checker reads only what is new)."""
        if seq < self._base:
            raise TraceError(f"events from {seq} were released; the whole trace is in {self.path}")
        return self._events[seq - self._base :]

    def _require_whole(self) -> None:
        if self._base:
            raise TraceError(
                f"the first {self._base} events were released; the whole trace is in {self.path}"
            )

    def trace_hash(self) -> str:
        """Hex SHA-256 over every event's line so far (only new events are encoded)."""
        self._flush_lines()
        return self._hasher.hexdigest()

    def dump(self, path: str | Path) -> None:
        """Write the events as JSON Lines (one canonical line each)."""
        self._require_whole()
        with open(path, "wb") as out:
            out.writelines(event.line() for event in self._events)

    @classmethod
    def load(cls, path: str | Path) -> "Trace":
        """Read a dump back; ``trace_hash()`` of the result equals the original's."""
        trace = cls()
        with open(path, "rb") as lines:
            for seq, line in enumerate(lines):
                trace._events.append(TraceEvent.from_data(parse_json(line), seq))
        return trace
