"""A diff reproducer: the requests that make a relay answer otherwise than the reference.

JSON, readable: each request with its method, path, query, headers and body (text,
a run of one byte, or base64), then the divergence: which request, the rule the
model names for it, the differences, and both answers. ``replay`` sends the
requests again to a fresh reference relay and to a target whose store does not
know the reproducer's cohort yet (a restarted relay).
"""

import json
from pathlib import Path

import attrs

from simkit.errors import InputError
from simkit.protocol.b64 import b64url_decode, b64url_encode
from simkit.relay import Relay, Request, Response
from simkit.wire.diff.compare import differences
from simkit.wire.members import Directory, TokenHost
from simkit.wire.target import Target

KIND = "simkit diff reproducer"
# Revs at or above this (2001-09-09 in epoch ms) are time stamps: a replay moves them
# by the time passed since the recording, so the skew rule judges them as it did.
TIME_STAMP_MS = 10**12


def body_json(body: bytes) -> object:
    if len(body) > 64 and body.count(body[:1]) == len(body):
        return {"repeat": body[:1].hex(), "times": len(body)}
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": b64url_encode(body)}


def body_bytes(data: object) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if "repeat" in data:
        return bytes.fromhex(data["repeat"]) * data["times"]
    return b64url_decode(data["base64"])


def request_json(request: Request) -> dict:
    return {"method": request.method, "path": request.path, "query": request.query,
            "headers": request.headers, "body": body_json(request.body)}  # fmt: skip


def response_json(response: Response) -> dict:
    try:
        body = json.loads(response.body)
    except ValueError:
        body = body_json(response.body)
    return {"status": response.status, "body": body}


@attrs.frozen
class DiffReproducer:
    url: str
    seed: int
    cohort: int
    recorded_at: int  # the reference relay's clock at the first request
    requests: tuple[Request, ...]
    at: int  # the request whose answers differ
    rule: str  # the spec rule the model names for that request
    found: tuple[str, ...]  # the differences
    reference: Response
    relay: Response
    callers: tuple[str, ...]  # who each request's credential names ("member/device" or "")

    def to_json(self) -> dict:
        return {
            "kind": KIND,
            "url": self.url,
            "seed": self.seed,
            "cohort": self.cohort,
            "recorded_at": self.recorded_at,
            "requests": [
                {"as": caller, **request_json(r)}
                for caller, r in zip(self.callers, self.requests, strict=True)
            ],
            "divergence": {
                "request": self.at,
                "rule": self.rule,
                "differences": list(self.found),
                "reference": response_json(self.reference),
                "relay": response_json(self.relay),
            },
        }

    def write(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")


def load_requests(path: str | Path) -> tuple[int, list[Request]]:
    """A reproducer's recording time and requests; a broken file is an ``InputError``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("kind") != KIND:
            raise ValueError(f'"kind" is not {KIND!r}')
        requests = [
            Request(r["method"], r["path"], r["query"], r["headers"], body_bytes(r["body"]))
            for r in data["requests"]
        ]
        return data["recorded_at"], requests
    except FileNotFoundError:
        raise InputError(f"{path}: no such reproducer") from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{path}: not a simkit diff reproducer: {exc}") from None


def shifted(request: Request, delta: int) -> Request:
    """A push whose time-stamp revs are moved by ``delta`` ms; any other request as it is."""
    if not delta or not request.path.endswith("/push"):
        return request
    try:
        body = json.loads(request.body)
        for op in body["ops"]:
            if isinstance(op["rev"], int) and op["rev"] >= TIME_STAMP_MS:
                op["rev"] += delta
    except (ValueError, KeyError, TypeError):
        return request  # a damaged body is sent as recorded
    return attrs.evolve(request, body=json.dumps(body).encode())


def replay(
    path: str | Path, target: Target, directory: Directory, clock, send
) -> tuple[int, list[str]]:
    """Send a reproducer's requests to a fresh reference relay and through ``send`` to
    ``target``: the index of the first request answered differently and how (or
    ``(-1, [])`` when every answer agrees)."""
    recorded_at, requests = load_requests(path)
    reference = Relay(TokenHost(directory), clock, rate_limits={})
    delta = clock() - recorded_at
    for index, request in enumerate(requests):
        request = shifted(request, delta)
        found = differences(reference.handle(request), send(target, request))
        if found:
            return index, found
    return -1, []
