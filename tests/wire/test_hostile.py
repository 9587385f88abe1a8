"""Hostile HTTP against ``simkit serve``: malformed messages (bad lengths, huge headers,
invalid UTF-8 paths, smuggling attempts, garbage) and slow clients never crash the
server, never get a 5xx, and never change the relay's state."""

import json
import socket
import threading

from simkit.relay import Request
from simkit.wire.target import HttpTarget

AUTH = b"Authorization: Bearer conform-alice-a1\r\n"
JWK = {"kty": "EC", "crv": "P-256", "x": "A" * 43, "y": "A" * 43}
# A push that would land if any of the requests carrying it were taken at face value.
EVIL = json.dumps({"ops": [{"recordId": "evil", "rev": 1, "n": "bm9uY2U", "c": "ZXZpbA"}]})
EVIL = EVIL.encode()
PUSH = b"POST /graphs/u/push HTTP/1.1\r\nHost: relay\r\n" + AUTH
CHUNKED = b"%x\r\n%s\r\n0\r\n\r\n" % (len(EVIL), EVIL)

HOSTILE = {
    "content-length not a number": PUSH + b"Content-Length: abc\r\n\r\n" + EVIL,
    "content-length negative": PUSH + b"Content-Length: -1\r\n\r\n" + EVIL,
    "two content-lengths": PUSH + b"Content-Length: %d\r\nContent-Length: 5\r\n\r\n" % len(EVIL)
    + EVIL,
    "content-length and chunked (smuggling)": PUSH
    + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
    + CHUNKED,
    "content-length longer than the body, then gone": PUSH
    + b"Content-Length: %d\r\n\r\n" % (len(EVIL) + 100)
    + EVIL,
    "bad chunk size": PUSH + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n" + EVIL + b"\r\n0\r\n\r\n",
    "chunked body cut short, then gone": PUSH + b"Transfer-Encoding: chunked\r\n\r\nff\r\n" + EVIL,
    "huge header": b"GET /devices HTTP/1.1\r\nHost: relay\r\nX-Big: %s\r\n\r\n" % (b"a" * 200_000),
    "invalid UTF-8 path": b"GET /graphs/\xff\xfe/pull HTTP/1.1\r\nHost: relay\r\n" + AUTH + b"\r\n",
    "invalid UTF-8 device": b"PUT /devices/\xc3\x28 HTTP/1.1\r\nHost: relay\r\n" + AUTH
    + b"Content-Length: 2\r\n\r\n{}",
    "control byte in path": b"GET /dev\x01ices HTTP/1.1\r\nHost: relay\r\n\r\n",
    "non-latin credential": b"GET /devices HTTP/1.1\r\nHost: relay\r\nAuthorization: \xff\r\n\r\n",
    "no Host": b"GET /devices HTTP/1.1\r\n" + AUTH + b"\r\n",
    "garbage request line": b"HELLO\r\n\r\n",
    "binary noise": bytes(range(256)) * 8,
    "unknown HTTP version": b"GET /devices HTTP/9.9\r\nHost: relay\r\n\r\n",
    "absolute URI": b"POST http://elsewhere/graphs/u/push HTTP/1.1\r\nHost: relay\r\n" + AUTH
    + b"Content-Length: %d\r\n\r\n" % len(EVIL) + EVIL[:-1] + b",",
}  # fmt: skip


def exchange(port: int, data: bytes, wait_s: float = 10.0) -> tuple[bytes, bool]:
    """Send ``data`` on a new connection, stop sending, and read until an answer's head
    has come or the server hung up; hang up. What came, and whether the server answered or hung up
    (False: it said nothing for ``wait_s``, holding the connection)."""
    received = b""
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.settimeout(wait_s)
        try:
            conn.sendall(data)
            conn.shutdown(socket.SHUT_WR)  # the client has said all it will say
            while b"\r\n\r\n" not in received:
                chunk = conn.recv(65536)
                if not chunk:
                    return received, True  # the server hung up
                received += chunk
        except (ConnectionResetError, BrokenPipeError):
            return received, True
        except TimeoutError:
            return received, False
    return received, True


def observed(http: HttpTarget) -> list[bytes]:
    """Everything alice/a1 can read: devices, records, log, keys, roster."""
    headers = {"authorization": "Bearer conform-alice-a1"}
    paths = ["/devices", "/graphs/u/pull", "/graphs/u/log", "/graphs/u/keys", "/graphs/u/devices"]
    answers = [http.send(Request("GET", path, headers=headers)) for path in paths]
    assert all(a.status == 200 for a in answers)
    return [a.body for a in answers]


def registered(url: str) -> HttpTarget:
    http = HttpTarget(url)
    body = json.dumps({"pubJwk": JWK, "sigJwk": JWK}).encode()
    headers = {"authorization": "Bearer conform-alice-a1"}
    assert http.send(Request("PUT", "/devices/a1", headers=headers, body=body)).status == 200
    return http


def test_hostile_http_never_crashes_the_server_never_5xx_and_never_changes_state(serve):
    served = serve()
    http = registered(served.url)
    before = observed(http)
    for name, data in HOSTILE.items():
        answer, ended = exchange(served.port, data)
        assert ended, f"{name}: no answer and no hang-up within 10 s"
        statuses = [int(line.split()[1]) for line in answer.split(b"\r\n")
                    if line.startswith(b"HTTP/1.1 ")]  # fmt: skip
        assert all(status < 500 for status in statuses), f"{name}: {answer[:200]!r}"
        assert served.alive(), f"{name} crashed the server: {served.errors()}"
    assert observed(http) == before
    http.close()
    assert served.stop() == 0
    assert "Traceback" not in served.errors() and "500" not in served.errors()


def test_slow_and_idle_clients_never_hold_up_anyone_else(serve):
    """Idle connections and a client trickling its request byte by byte are served
    alongside everyone else; the trickled push lands once it is complete."""
    served = serve()
    http = registered(served.url)
    idle = [socket.create_connection(("127.0.0.1", served.port)) for _ in range(50)]
    slow_push = PUSH + b"Content-Length: %d\r\n\r\n" % len(EVIL) + EVIL
    half_sent, finish, answered = threading.Event(), threading.Event(), []

    def trickle() -> None:
        with socket.create_connection(("127.0.0.1", served.port)) as conn:
            for i in range(0, len(slow_push) - 1, 8):
                conn.sendall(slow_push[i : min(i + 8, len(slow_push) - 1)])
                half_sent.set()
                threading.Event().wait(0.01)
            finish.wait()
            conn.sendall(slow_push[-1:])
            conn.settimeout(10)
            answered.append(conn.recv(65536))

    slow = threading.Thread(target=trickle)
    slow.start()
    half_sent.wait()
    for _ in range(10):  # served while the slow request is still arriving
        observed(http)
    finish.set()
    slow.join()
    for conn in idle:
        conn.close()
    assert answered and answered[0].startswith(b"HTTP/1.1 200")
    rows = json.loads(observed(http)[1])["ops"]
    assert [o["recordId"] for o in rows] == ["evil"]
    http.close()
