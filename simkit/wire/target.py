"""Targets: a relay to send requests to, in this process or at a URL.

``conform`` (and ``diff``) speak to a relay only through a ``Target``: ``send`` takes
the relay's own ``Request`` value and gives back a ``Response``, so the same
request reaches the reference relay in-process and any relay over HTTP. What a
check may do beyond sending requests is a property of the target: an in-process
relay runs on a clock the caller moves; a relay at a URL lives in real time.
"""

import http.client
import time
from typing import Protocol
from urllib.parse import quote, urlencode, urlsplit

import attrs

from simkit.errors import InputError, TransportError
from simkit.relay import Relay, Request, Response
from simkit.wire.members import Directory, TokenHost

T0 = 1_700_000_000_000  # an in-process relay's clock starts here (epoch ms, Nov 2023)
# A path goes on the wire as it is, except what HTTP cannot carry in a request line
# (spaces, controls, non-ASCII), percent-encoded as UTF-8: the server's adapter hands
# the relay the same text it would have been given in-process.
_PRINTABLE = "".join(chr(c) for c in range(0x21, 0x7F))


class Target(Protocol):
    """Somewhere requests can be sent.

    ``controls_clock``: ``wait`` moves the relay's clock at no cost, so checks may let
    minutes or days pass. ``quotas``: the relay's per-graph quotas when known
    (``{"records": n, "bytes": n}``), else ``None`` (the spec does not show them).
    """

    name: str
    controls_clock: bool
    quotas: dict[str, int] | None

    def send(self, request: Request) -> Response: ...

    def wait(self, ms: int) -> None:
        """Let ``ms`` milliseconds pass on the relay's clock."""

    def close(self) -> None: ...


class ManualClock:
    """Epoch milliseconds that only the caller moves."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@attrs.define
class InProcessTarget:
    """A relay object in this process, on a ``ManualClock``."""

    relay: Relay
    clock: ManualClock
    name: str = "in-process reference relay"
    controls_clock: bool = True

    @classmethod
    def reference(
        cls, directory: Directory, relay_class: type[Relay] = Relay, **settings: object
    ) -> "InProcessTarget":
        """A fresh relay (or variant) over the directory's members and tokens."""
        clock = ManualClock()
        return cls(relay_class(TokenHost(directory), clock, **settings), clock)

    @property
    def quotas(self) -> dict[str, int]:
        settings = self.relay.settings
        return {"records": settings.quota_records, "bytes": settings.quota_bytes}

    def send(self, request: Request) -> Response:
        return self.relay.handle(request)

    def wait(self, ms: int) -> None:
        self.clock.advance(ms)

    def close(self) -> None:
        pass


class _Closed(TransportError):
    """The connection closed before an answer came."""


class HttpTarget:
    """A relay at an ``http://`` or ``https://`` URL (its mount point), one connection
    kept alive. Paths of requests are appended to the URL's path."""

    controls_clock = False
    quotas = None

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(f"URL {url}: expected http://HOST[:PORT][/PATH] or https://...")
        if parts.query or parts.fragment:
            raise InputError(f"URL {url}: the relay's mount point takes no query or fragment")
        try:
            self._address = (parts.hostname, parts.port)
        except ValueError:
            raise InputError(f"URL {url}: the port is not a number from 0 to 65535") from None
        self.name = url
        self._https = parts.scheme == "https"
        self._base = parts.path.rstrip("/")
        self._timeout = timeout
        self._connection: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        host, port = self._address
        return kind(host, port, timeout=self._timeout)

    def send(self, request: Request) -> Response:
        target = self._base + quote(request.path, safe=_PRINTABLE)
        if request.query:
            target += "?" + urlencode(request.query)
        reused = self._connection is not None
        try:
            return self._exchange(target, request)
        except _Closed:
            if not reused:
                raise
        return self._exchange(target, request)  # the server had closed a kept-alive connection

    def _exchange(self, target: str, request: Request) -> Response:
        if self._connection is None:
            self._connection = self._connect()
        try:
            self._connection.request(request.method, target, request.body, request.headers)
            answer = self._connection.getresponse()
            body = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            closed = isinstance(exc, ConnectionResetError | BrokenPipeError)  # RemoteDisconnected
            kind = _Closed if closed else TransportError
            raise kind(f"{self.name}: {type(exc).__name__}: {exc}") from None
        headers: dict[str, str] = {}
        for name, value in answer.getheaders():
            key = name.lower()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        if answer.will_close:
            self.close()
        return Response(answer.status, headers, body)

    def wait(self, ms: int) -> None:
        time.sleep(ms / 1000)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def require_unused(target: Target, credential: dict[str, str], unknown: str, used: str) -> None:
    """Check that the relay knows an identity (by ``credential``) whose device it has
    not registered yet: the sign of a relay set up for a run and with an empty store.
    ``unknown`` and ``used`` say what to do when it answers 401 or 200 (exit 2)."""
    try:
        answer = target.send(Request("GET", "/devices", headers=credential))
    except TransportError as exc:
        raise InputError(f"cannot reach {target.name}: {exc}") from None
    if answer.status == 401:
        raise InputError(f"{target.name} answers 401 to a listed identity: {unknown}")
    if answer.status == 200:
        raise InputError(f"{target.name} is not fresh: {used}")
    if answer.status != 403 or b"device-not-registered" not in answer.body:
        raise InputError(
            f"{target.name}: GET /devices as an unregistered device should be 403 "
            f"device-not-registered, got {answer.status}; is this a relay?"
        )
