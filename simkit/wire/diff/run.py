"""The differential fuzzing loop behind ``simkit diff``.

**Search.** Hypothesis draws examples (seeded): each a cohort of its own and up to
``max_requests`` raw requests from ``simkit.model.requests`` (the model follows the
state they build, so requests aim at what exists). Each request goes to a fresh
in-process reference relay and to the relay under test; the first answer that
differs (``compare.differences``) ends the search.

**Shrinking.** The divergent request list is then cut down by removing chunks of
requests, halving the chunk size down to one request, until no single request can
go: each candidate is replayed in a fresh cohort (``cohorts.moved``) and kept when
it still diverges under the same rule. Every shorter divergence is written to the
reproducer file at once. Replaying whole requests keeps every candidate a request
list a person can read, and costs a cohort per candidate, not per choice.

One budget (``seconds``) covers both, checked before each example and each
candidate; the cohorts are the other limit.

**Time.** The relay under test runs on its own clock. The reference relay runs on
the machine's clock, moved by the offset the relay's ``now`` answers show.
Requests are drawn around that clock plus or minus ``CLOCK_MARGIN_MS`` (a rev is
never within a minute of the skew limit) and never with an ephemeral ``ttl`` under
``MIN_TTL_MS`` (no blob expires while an example runs): what depends on two clocks
agreeing to the millisecond is not compared (docs/relay.md). A replayed request's
time-stamp revs move with the time passed since it was drawn.
"""

import json
from collections.abc import Callable
from pathlib import Path

import attrs
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from simkit.errors import InputError, TransportError
from simkit.model import RelayModel
from simkit.model.requests import jwk, requests
from simkit.realtime import epoch_ms, wall_clock
from simkit.relay import Relay, Request, Response
from simkit.wire.diff.cohorts import MARKER, Cohort, moved, token_index
from simkit.wire.diff.compare import differences
from simkit.wire.diff.reproducer import DiffReproducer, shifted
from simkit.wire.members import Directory, TokenHost
from simkit.wire.target import Target, require_unused

MAX_REQUESTS = 40  # per example
CLOCK_MARGIN_MS = 60_000
MIN_TTL_MS = 60_000
MAX_429_WAITS = 50


class _Stop(KeyboardInterrupt):
    """Stop now (a KeyboardInterrupt: Hypothesis lets it through at once). The reason
    is ``args[0]``: "budget", "cohorts", "found" or "unreachable"."""


class Unreachable(Exception):
    """The relay stopped answering (it may have crashed on the last request)."""


class RelayClock:
    """The reference relay's clock: the machine's, moved by the offset between the
    relay under test's ``now`` and the machine's clock when it answered."""

    def __init__(self) -> None:
        self.offset = 0

    def __call__(self) -> int:
        return epoch_ms() + self.offset

    def observe(self, sent_ms: int, response: Response) -> None:
        try:
            now = json.loads(response.body).get("now")
        except (ValueError, AttributeError):
            return
        if response.status == 200 and isinstance(now, int) and not isinstance(now, bool):
            self.offset = now - (sent_ms + epoch_ms()) // 2


def send(target: Target, request: Request) -> Response:
    """One request to the relay under test; a 429 is waited out and sent again (rate
    values are not shown by the spec, and the reference relay runs without limits)."""
    for _ in range(MAX_429_WAITS):
        try:
            response = target.send(request)
        except TransportError as exc:
            raise Unreachable(str(exc)) from None
        if response.status != 429:
            return response
        try:
            wait = int(json.loads(response.body).get("retryAfterMs", 1000))
        except (ValueError, AttributeError, TypeError):
            wait = 1000
        target.wait(min(max(wait, 1), 10_000))
    raise Unreachable(f"{request.method} {request.path}: still 429 after {MAX_429_WAITS} waits")


def claim(target: Target) -> None:
    """Check that the relay knows the diff directory and has never run a diff, then mark
    it as used (its store must not know any cohort: they are the examples' fresh state)."""
    credential = {"authorization": "Bearer diff-marker"}
    require_unused(
        target,
        credential,
        unknown="configure it with the file simkit diff --write-members writes (docs/relay.md)",
        used="it already ran a diff; simkit diff needs a relay with an empty store "
        "(restart it on a new one)",
    )
    body = {"pubJwk": jwk(MARKER[1], 0, "pub"), "sigJwk": jwk(MARKER[1], 0, "sig")}
    register = Request("PUT", f"/devices/{MARKER[1]}", None, credential, json.dumps(body).encode())
    answer = send(target, register)
    if answer.status != 200:
        raise InputError(f"{target.name}: registering diff's marker device: {answer.status}")


def sendable(request: Request) -> bool:
    """What HTTP can carry and two clocks can judge alike (see the module docstring)."""
    if not request.path.startswith("/"):
        return False  # a request line's path starts with "/"
    ttl = request.query.get("ttl", "")
    return not (ttl.isdigit() and 0 < int(ttl) < MIN_TTL_MS)


@attrs.define
class DiffResult:
    examples: int = 0  # examples searched
    requests: int = 0  # requests sent to the relay, shrinking included
    seconds: float = 0.0
    found_after: float | None = None
    first_requests: int | None = None  # requests of the divergence as first found
    shrink_attempts: int = 0
    cohorts_used: int = 0
    # how the run ended: "budget" or "cohorts" (a limit), "done" (shrunk as far as it
    # goes), "unreachable", "interrupted" (Ctrl-C)
    stopped: str = "budget"
    reproducer: DiffReproducer | None = None  # the shortest divergence so far
    unreachable: str | None = None


class _DiffSession:
    """What a diff run shares: the target, the directory, the clock, the budget, and
    the shortest divergence so far."""

    def __init__(self, target, directory, seed, seconds, cohorts, max_requests, out,
                 progress) -> None:  # fmt: skip
        self.target, self.seed = target, seed
        self.host, self.tokens = TokenHost(directory), token_index(directory)
        self.seconds, self.cohorts, self.max_requests = seconds, cohorts, max_requests
        self.out, self.progress = out, progress
        self.clock = RelayClock()
        self.result = DiffResult()
        self.start = wall_clock()

    def cohort(self) -> Cohort:
        """A cohort no example has used, if the budget allows one more."""
        result = self.result
        result.seconds = wall_clock() - self.start
        if result.seconds >= self.seconds:
            raise _Stop("budget")
        if result.cohorts_used >= self.cohorts:
            raise _Stop("cohorts")
        result.cohorts_used += 1
        self.progress(result)
        return Cohort(result.cohorts_used - 1)

    def example(self, data) -> None:
        """Hypothesis's test: one example of raw requests, until a divergence."""
        run = _Run(self, self.cohort())
        self.result.examples += 1
        for _ in range(data.draw(st.integers(1, self.max_requests), label="requests")):
            ahead = data.draw(st.booleans(), label="revs ahead of the clock")
            now = self.clock() + (CLOCK_MARGIN_MS if ahead else -CLOCK_MARGIN_MS)
            request = data.draw(requests(run.model, run.space, now).filter(sendable))
            found = run.exchange(request)
            if found is not None:
                self.result.found_after = wall_clock() - self.start
                self.result.first_requests = len(found.requests)
                self.keep(found)
                raise _Stop("found")

    def replayed(self, best: DiffReproducer, keep: list[int]) -> DiffReproducer | None:
        """``best``'s requests at the indexes ``keep``, in a fresh cohort: the divergence
        they show, if it is ``best``'s rule; else None."""
        cohort = self.cohort()
        self.result.shrink_attempts += 1
        run = _Run(self, cohort)
        delta = run.recorded_at - best.recorded_at
        for index in keep:
            request = moved(shifted(best.requests[index], delta), Cohort(best.cohort), cohort)
            found = run.exchange(request)
            if found is not None:
                return found if found.rule == best.rule else None
        return None

    def shrink(self) -> None:
        """Remove chunks of requests (halving the chunk down to one) while the rest still
        diverges the same way; never the last request, which shows the divergence."""
        best = self.result.reproducer
        chunk = max(1, (len(best.requests) - 1) // 2)
        while True:
            removed = False
            start = 0
            while start < len(best.requests) - 1:
                end = min(start + chunk, len(best.requests) - 1)
                keep = [i for i in range(len(best.requests)) if not start <= i < end]
                shorter = self.replayed(best, keep)
                if shorter is not None and len(shorter.requests) < len(best.requests):
                    best = shorter
                    self.keep(best)
                    removed = True
                else:
                    start = end
            if chunk == 1 and not removed:
                return
            chunk = max(1, chunk // 2)

    def keep(self, found: DiffReproducer) -> None:
        self.result.reproducer = found
        if self.out is not None:
            found.write(self.out)


class _Run:
    """One example or one shrinking candidate: a cohort, a fresh reference relay and
    a fresh model, and the requests sent so far."""

    def __init__(self, session: _DiffSession, cohort: Cohort) -> None:
        self.session, self.cohort = session, cohort
        self.reference = Relay(session.host, session.clock, rate_limits={})
        self.model = RelayModel(session.host, session.clock(), rate_limits={})
        self.space = cohort.space(session.tokens)
        self.sent: list[Request] = []
        self.recorded_at = session.clock()

    def exchange(self, request: Request) -> DiffReproducer | None:
        """Send one request to both relays; the divergence if their answers differ."""
        session = self.session
        self.sent.append(request)
        rule = self.model.handle(request, session.clock()).rule
        expected = self.reference.handle(request)
        sent_ms = epoch_ms()
        try:
            answer = send(session.target, request)
        except Unreachable as exc:
            session.result.unreachable = str(exc)
            gone = Response(0, {}, str(exc).encode())
            session.keep(self.reproducer(rule, [f"no answer: {exc}"], expected, gone))
            raise _Stop("unreachable") from None
        session.result.requests += 1
        if request.path.endswith("/push"):
            session.clock.observe(sent_ms, answer)
        found = differences(expected, answer)
        return self.reproducer(rule, found, expected, answer) if found else None

    def reproducer(self, rule, found, expected, answer) -> DiffReproducer:
        host = self.session.host
        callers = []
        for request in self.sent:
            identity = host.authenticate(request)
            callers.append("" if identity is None else f"{identity.member_id}/{identity.device_id}")
        return DiffReproducer(
            self.session.target.name, self.session.seed, self.cohort.index, self.recorded_at,
            tuple(self.sent), len(self.sent) - 1, rule, tuple(found), expected, answer,
            tuple(callers),
        )  # fmt: skip


def diff(
    target: Target,
    directory: Directory,
    *,
    seconds: float,
    seed: int,
    cohorts: int,
    max_requests: int = MAX_REQUESTS,
    out: str | Path | None = None,
    progress: Callable[[DiffResult], None] = lambda result: None,
) -> DiffResult:
    """Differential fuzzing of ``target`` against the reference relay, within the budget."""
    claim(target)
    session = _DiffSession(target, directory, seed, seconds, cohorts, max_requests, out, progress)
    result = session.result

    @settings(
        max_examples=10**9,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    @given(st.data())
    def examples(data) -> None:
        session.example(data)

    try:
        try:
            hypothesis_seed(seed)(examples)()
        except _Stop as stop:
            if stop.args[0] != "found":
                raise
        session.shrink()
        result.stopped = "done"
    except _Stop as stop:
        result.stopped = stop.args[0]
    except KeyboardInterrupt:
        result.stopped = "interrupted"
    result.seconds = wall_clock() - session.start
    return result
