"""The rogue: a client outside the fleet that speaks raw HTTP to the relay.

It draws requests from the whole request space of the fifteen routes
(``simkit.model.requests``: valid and invalid, well-formed and not), aimed at the
model's view of the relay, as two outsider members (``ROGUES``) whose graphs no
simulated device follows: so every relay rule a conforming client never triggers is
reached, and checked (``relay-model``), without the honest fleet's promises being
broken by a party the protocol never promised to survive. A request is kept in a
step as JSON; a long run of one byte (an oversized body) as its length and byte.
"""

from simkit.model.requests import WEIGHTS, Filler, RequestSpace
from simkit.protocol.b64 import b64url_decode, b64url_encode
from simkit.protocol.http import Request

ROGUES = {"mallory": ("m1", "m2", "m3"), "trudy": ("t1", "t2")}
ROGUE_GROUP = "lab"
# The fleet sends well-formed requests all day; the rogue is there for the rest, so
# most of its requests carry a fault (and a third are well-formed, to build state).
# It registers and revokes its own devices often, so that revoked callers exist to
# meet every route.
SPACE = RequestSpace(
    devices=ROGUES, groups=(ROGUE_GROUP, "team"), faults=(0, 1, 1, 2),
    weights=(*WEIGHTS, ("register", 3), ("revoke", 3)),
)  # fmt: skip


def encode(request: Request) -> dict:
    body = request.body
    if isinstance(body, Filler) and body:
        encoded: object = {"fill": len(body), "byte": body[0]}
    else:
        encoded = b64url_encode(body)
    return {
        "method": request.method,
        "path": request.path,
        "query": dict(request.query),
        "headers": dict(request.headers),
        "body": encoded,
    }


def decode(data: dict) -> Request:
    body = data["body"]
    raw = bytes([body["byte"]]) * body["fill"] if isinstance(body, dict) else b64url_decode(body)
    return Request(data["method"], data["path"], data["query"], data["headers"], raw)
