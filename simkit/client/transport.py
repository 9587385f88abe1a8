"""How a device reaches the relay: an injected async ``send``, wrapped in the
spec's retry rule (client rule 10).

429, 5xx, lost requests and malformed answers are retried with jittered exponential
backoff and a bounded number of attempts; every other answer goes back to the caller.
"""

from collections.abc import Callable
from typing import Protocol

import attrs

from simkit.client.clock import Clock
from simkit.errors import SimkitError, TransportError
from simkit.protocol.http import Request, Response


class Transport(Protocol):
    async def send(self, request: Request) -> Response: ...


class RelayUnavailable(SimkitError):
    """Every attempt failed with 429, 5xx or a lost request."""


@attrs.frozen
class Backoff:
    """Retry schedule (docs/client.md): delay = min(cap, base * 2^attempt) * (0.5 + jitter/2)."""

    attempts: int = 5
    base_s: float = 0.5
    cap_s: float = 30.0

    def delay(self, attempt: int, unit_random: float) -> float:
        return min(self.cap_s, self.base_s * 2**attempt) * (0.5 + unit_random / 2)


def retryable(status: int) -> bool:
    return status == 429 or status >= 500


async def send_with_retries(
    transport: Transport,
    request: Request,
    clock: Clock,
    random,
    backoff: Backoff,
    on_retry: Callable[[str], None] = lambda why: None,
    malformed: Callable[[Request, Response], str | None] = lambda request, response: None,
) -> Response:
    """Send, retrying what client rule 10 says to retry; raise RelayUnavailable when out of
    attempts. ``on_retry`` hears why each retry happens (a status, ``lost`` or
    ``malformed``); ``malformed`` says what is wrong with an answer the relay should not
    have given (``simkit.client.answers``), which is retried as a server failure is."""
    last = "no attempt"
    for attempt in range(backoff.attempts):
        if attempt:
            on_retry(last.split(":")[0].removeprefix("status "))
            await clock.sleep(backoff.delay(attempt - 1, random()))
        try:
            response = await transport.send(request)
        except TransportError as exc:
            last = f"lost: {exc}"
            continue
        if retryable(response.status):
            last = f"status {response.status}"
            continue
        wrong = malformed(request, response)
        if wrong is None:
            return response
        last = f"malformed: {wrong}"
    raise RelayUnavailable(f"{request.method} {request.path}: {backoff.attempts} attempts, {last}")


class InProcessTransport:
    """The relay in the same process with no network between: every request arrives
    and is answered at once. The simulator's network replaces this with faults."""

    def __init__(self, relay) -> None:
        self.relay = relay

    async def send(self, request: Request) -> Response:
        return self.relay.handle(request)
