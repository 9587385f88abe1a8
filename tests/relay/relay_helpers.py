"""Shared test scaffolding: a relay with a clock, a directory and terse calls.

Imported as a plain module (pytest puts tests/relay on sys.path) because the
Hypothesis state machines cannot use fixtures.
"""

import json

from simkit.protocol.b64 import b64url_encode
from simkit.protocol.canonical import canonical_json
from simkit.relay import Relay, Request, Response, StaticHost

T0 = 1_700_000_000_000
MINUTE = 60_000


class Clock:
    """The relay's injected clock: epoch milliseconds that only tests move."""

    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


def jwk(seed: int) -> dict:
    """A P-256-shaped public JWK (the relay checks shape, never the curve point)."""
    return {
        "kty": "EC",
        "crv": "P-256",
        "x": b64url_encode(bytes([seed % 256]) * 32),
        "y": b64url_encode(bytes([(seed + 1) % 256]) * 32),
    }


def device_body(seed: int, **extra: object) -> dict:
    return {"pubJwk": jwk(seed), "sigJwk": jwk(seed + 100), **extra}


def op(record_id: str, rev: int, c: str = "Y2lwaGVy", **extra: object) -> dict:
    """A GraphOpIn with a fixed nonce."""
    return {"recordId": record_id, "rev": rev, "n": "bm9uY2Vub25jZTEy", "c": c, **extra}


def state_bytes(relay: Relay) -> bytes:
    """The whole store, canonically, for byte-for-byte before/after comparisons."""
    return canonical_json(relay.snapshot())


class Harness:
    """A relay over a StaticHost (alice, bob, carol; group team = alice + bob)."""

    def __init__(
        self,
        members: tuple[str, ...] = ("alice", "bob", "carol"),
        groups: dict | None = None,
        capabilities: dict | None = None,
        relay_class: type[Relay] = Relay,
        **settings: object,
    ) -> None:
        self.clock = Clock()
        self.events: list = []
        self.host = StaticHost(
            members,
            groups={"team": ["alice", "bob"]} if groups is None else groups,
            capabilities=capabilities,
        )
        self.relay = relay_class(self.host, self.clock, on_event=self.events.append, **settings)

    def call(
        self,
        method: str,
        path: str,
        who: tuple[str, str] | None = ("alice", "a1"),
        json_body: object = None,
        body: bytes = b"",
        query: dict | None = None,
        headers: dict | None = None,
    ) -> Response:
        sent = dict(headers or {})
        if who is not None:
            sent |= {"x-member": who[0], "x-device": who[1]}
        if json_body is not None:
            body = json.dumps(json_body).encode()
        return self.relay.handle(Request(method, path, query, sent, body))

    def register(self, member: str, device: str, seed: int = 1, **extra: object) -> Response:
        response = self.call(
            "PUT", f"/devices/{device}", (member, device), device_body(seed, **extra)
        )
        assert response.status == 200, response.json()
        return response

    def push(self, gid: str, ops: list, who: tuple[str, str] = ("alice", "a1")) -> Response:
        return self.call("POST", f"/graphs/{gid}/push", who, {"ops": ops})

    def pull(self, gid: str, who: tuple[str, str] = ("alice", "a1"), **query: str) -> Response:
        return self.call("GET", f"/graphs/{gid}/pull", who, query=query)

    def put_keys(
        self, gid: str, epoch: int, wraps: list[str], who=("alice", "a1"), **extra: object
    ) -> Response:
        body = {
            "epoch": epoch,
            "wraps": [{"deviceId": d, "wrapped": f"w{epoch}-{d}"} for d in wraps],
        }
        return self.call("POST", f"/graphs/{gid}/keys", who, body | extra)

    def kinds(self) -> list[str]:
        return [event.kind for event in self.events]


def error(response: Response) -> str:
    return response.json()["error"]
