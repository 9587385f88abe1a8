"""The ASGI adapter: what it decides about paths, repeated parameters and body size
(docs/relay.md, "On the wire"), driven with ASGI messages, no socket."""

import json

import trio

from simkit.relay import Relay
from simkit.wire.asgi import RelayApp, body_limit
from simkit.wire.conform import conformance_directory
from simkit.wire.members import TokenHost
from simkit.wire.target import ManualClock

ALICE = [(b"authorization", b"Bearer conform-alice-a1")]
JWK = {"kty": "EC", "crv": "P-256", "x": "A" * 43, "y": "A" * 43}


class Exchange:
    """One HTTP exchange against the app: the messages it read and the ones it sent."""

    def __init__(self, app: RelayApp, method: str, raw_path: bytes, query: bytes = b"",
                 headers=ALICE, chunks=(b"",), disconnect: bool = False) -> None:  # fmt: skip
        self.sent: list[dict] = []
        self.read = 0
        messages = [
            {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
            for i, chunk in enumerate(chunks)
        ]
        if disconnect:
            messages[-1]["more_body"] = True
            messages.append({"type": "http.disconnect"})
        scope = {"type": "http", "method": method, "path": raw_path.decode("latin-1"),
                 "raw_path": raw_path, "query_string": query, "headers": list(headers)}  # fmt: skip

        async def receive() -> dict:
            self.read += 1
            return messages[self.read - 1]

        async def send(message: dict) -> None:
            self.sent.append(message)

        trio.run(app, scope, receive, send)

    @property
    def status(self) -> int:
        return self.sent[0]["status"]

    def json(self) -> dict:
        return json.loads(self.sent[1]["body"])


def app() -> RelayApp:
    relay = Relay(TokenHost(conformance_directory()), ManualClock(), rate_limits={})
    a = RelayApp(relay)
    body = json.dumps({"pubJwk": JWK, "sigJwk": JWK}).encode()
    assert Exchange(a, "PUT", b"/devices/a1", chunks=(body,)).status == 200
    return a


def push(a: RelayApp, gid: bytes, ops: list) -> Exchange:
    body = json.dumps({"ops": ops}).encode()
    return Exchange(a, "POST", b"/graphs/" + gid + b"/push", chunks=(body,))


def op(record_id: str, **extra) -> dict:
    return {"recordId": record_id, "rev": 1, "n": "bm9uY2U", "c": "Y2lwaGVy", **extra}


def test_asgi_path_reaches_the_relay_raw_so_an_escaped_colon_names_a_graph():
    a = app()
    assert push(a, b"g%3Ateam", [op("r1")]).status == 200
    pulled = Exchange(a, "GET", b"/graphs/g:team/pull")
    assert [o["recordId"] for o in pulled.json()["ops"]] == ["r1"]


def test_asgi_escaped_slash_never_makes_a_segment():
    assert Exchange(app(), "GET", b"/graphs%2Fu/pull").status == 404


def test_asgi_path_bytes_that_are_not_utf8_are_refused_by_the_relay_not_a_crash():
    a = app()
    for raw in (b"/graphs/\xff\xfe/pull", b"/devices/\xc3", b"/\x80"):
        exchange = Exchange(a, "GET", raw)
        assert 400 <= exchange.status < 500, exchange.sent


def test_asgi_repeated_query_parameter_is_the_list_of_its_values():
    a = app()
    push(a, b"u", [op("n", k="note"), op("t", k="task"), op("x", k="other")])
    both = Exchange(a, "GET", b"/graphs/u/pull", b"kinds=note&kinds=task").json()
    assert [o["recordId"] for o in both["ops"]] == ["n", "t"]
    twice = Exchange(a, "GET", b"/graphs/u/pull", b"after=1&after=2")
    assert (twice.status, twice.json()["error"]) == (400, "invalid")


def test_asgi_reads_a_body_only_up_to_one_byte_over_the_limit_then_answers_413():
    a = app()
    limit = body_limit(a.relay)
    chunk = b"\x00" * (1024 * 1024)
    chunks = [chunk] * (limit // len(chunk) + 10)  # 10 MiB more than any route takes
    exchange = Exchange(a, "POST", b"/graphs/u/blobs/b1", chunks=chunks,
                        headers=[*ALICE, (b"x-blob-nonce", b"bm9uY2U")])  # fmt: skip
    assert exchange.status == 413
    assert exchange.read == limit // len(chunk) + 1  # stopped reading at limit + 1 bytes


def test_asgi_client_gone_before_the_body_ended_changes_nothing_and_gets_no_answer():
    a = app()
    before = a.relay.snapshot()
    body = json.dumps({"ops": [op("r1")]}).encode()
    exchange = Exchange(a, "POST", b"/graphs/u/push", chunks=(body,), disconnect=True)
    assert exchange.sent == [] and a.relay.snapshot() == before


def test_asgi_answer_carries_the_relays_headers_and_content_length():
    exchange = Exchange(app(), "PATCH", b"/devices")
    headers = dict(exchange.sent[0]["headers"])
    assert exchange.status == 405 and headers[b"allow"] == b"GET"
    assert headers[b"content-length"] == str(len(exchange.sent[1]["body"])).encode()
