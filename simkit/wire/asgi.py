"""The ASGI adapter: an HTTP exchange in, ``relay.handle()``, the answer out.

Thin on purpose: everything the spec says about a request is the relay's job, so
the adapter only turns ASGI messages into a ``Request`` and a ``Response`` into
ASGI messages (docs/relay.md, "On the wire"). It decides three things the relay
cannot see:

- the path is the raw request path (``raw_path``), so ``%2F`` and ``%3A`` reach the
  relay's router undecoded; bytes outside printable ASCII are percent-encoded;
- a query parameter given twice is the list of its values joined by ``,`` (how
  the relay reads ``kinds`` and ``shards``; any other parameter then fails its
  schema at the relay's own pipeline step);
- the body is read up to one byte more than the relay's largest body limit and no
  further, so the relay answers ``413`` at its pipeline step and a client cannot
  make the server buffer more than that;
- a request with both ``content-length`` and ``transfer-encoding`` is refused ``400
  invalid`` before the relay sees it (RFC 9112, 6.3: a smuggling attempt "ought to be
  handled as an error"; the HTTP server underneath reads such a body as chunked).
"""

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

from simkit.protocol.http import invalid
from simkit.relay import Relay, Request, Response

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]
# How the app runs relay work: directly (the default), or on a worker thread one at
# a time (``simkit serve``), so a slow commit never stalls other connections' I/O.
Runner = Callable[[Callable[[], Response]], Awaitable[Response]]

_PATH_SAFE = frozenset(range(0x21, 0x7F))  # printable ASCII, "%" included


async def _direct(work: Callable[[], Response]) -> Response:
    return work()


def body_limit(relay: Relay) -> int:
    """The most body bytes any route accepts; one more is enough to refuse with 413."""
    return max(relay.settings.max_push_bytes, relay.settings.max_blob_bytes)


def request_path(raw_path: bytes) -> str:
    """The raw path as text: ASCII stays (``%XX`` escapes included), anything else is
    percent-encoded, so invalid UTF-8 reaches the relay as escapes it decodes to U+FFFD."""
    return "".join(chr(b) if b in _PATH_SAFE else f"%{b:02X}" for b in raw_path)


def request_query(query_string: bytes) -> dict[str, str]:
    """Query parameters; a repeated name's values are joined with ``,`` in order."""
    query: dict[str, str] = {}
    text = query_string.decode("latin-1")
    for name, value in parse_qsl(text, keep_blank_values=True, errors="replace"):
        query[name] = f"{query[name]},{value}" if name in query else value
    return query


def request_headers(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """Header names lowercased; a repeated header's values joined by ``, `` (RFC 9110)."""
    headers: dict[str, str] = {}
    for name, value in raw:
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return headers


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The body, cut at ``limit + 1`` bytes; ``None`` if the client went away first."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks)[: limit + 1]
        if not message.get("more_body", False):
            return b"".join(chunks)


async def send_response(send: Send, response: Response) -> None:
    headers = [(name.encode("latin-1"), value.encode("latin-1"))
               for name, value in sorted(response.headers.items())]  # fmt: skip
    headers.append((b"content-length", str(len(response.body)).encode()))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body})


class RelayApp:
    """An ASGI 3 application serving one relay (HTTP only; lifespan is acknowledged)."""

    def __init__(self, relay: Relay, run: Runner = _direct) -> None:
        self.relay = relay
        self.run = run

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # websockets: not part of the protocol; the server closes them
        headers = request_headers(scope.get("headers", []))
        if "content-length" in headers and "transfer-encoding" in headers:
            refusal = invalid("a request has content-length or transfer-encoding, not both")
            await send_response(send, refusal.response)
            return
        body = await read_body(receive, body_limit(self.relay))
        if body is None:
            return
        request = Request(
            scope["method"],
            request_path(scope.get("raw_path") or scope["path"].encode()),
            request_query(scope.get("query_string", b"")),
            headers,
            body,
        )
        response = await self.run(lambda: self.relay.handle(request))
        await send_response(send, response)


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
