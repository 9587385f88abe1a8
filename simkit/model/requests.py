"""Raw requests drawn from the whole request space of the fifteen routes (Hypothesis).

A rogue device is not bound by the client's rules, so everything is drawn: every
route, wrong methods and unknown paths; callers that are registered, unregistered,
revoked, another member's, malformed or anonymous; every kind of graph ID; queries
in and out of range; bodies built from the model's current state (existing records
and blobs, revs around the stored rev and around now + maxRevSkew, epochs around
the latest, wraps to eligible and ineligible devices, exclusions that overlap) and
then, some of the time, damaged (wrong types, missing or extra members, invalid
JSON or UTF-8, too deep, oversized). Valid requests stay common, so state grows
deep enough for the interesting rules (quotas, paging, rotation) to be crossed.

``requests(model, space, now)`` is a strategy; ``RequestSpace`` names the
identities, and its ``credential`` builds the headers (simkit's ``x-member`` /
``x-device`` by default, docs/client.md).
"""

import functools
import json
from collections.abc import Callable, Mapping
from hashlib import sha256
from urllib.parse import quote

import attrs
from hypothesis import strategies as st

from simkit.model.relay import RelayModel
from simkit.model.routes import ROUTES, Route
from simkit.protocol.b64 import b64url_encode
from simkit.protocol.http import Request
from simkit.protocol.messages import REQUESTS, malformations

CONTENTS = ("Y2lwaGVy", "QUJD", "eHl6MTIzNDU2", "b3RoZXI", "Zg", "c2FtZQ")  # ciphertexts
UNSAFE_IDS = ("a:b", "", "x" * 65, "é", "a b")
MALFORMED_GIDS = ("x", "g:", "d:", "g:a:b", "u:x", "U", "g:" + "a" * 65, "g:te am", "")
# Replacements for one member of a body: mostly wrong, a few right in another spelling
# (``2.0`` and ``1e3`` are the integers 2 and 1000 as JSON.parse reads them).
WRONG_VALUES = (None, True, -1, 1.5, "", "a:b", "x" * 300, [], {}, 2**53, "1", 2.0, 1e3)
UNKNOWN_PATHS = ("/", "", "/graphs", "/graphs/u", "/graphs/u/nope", "/v1/devices", "devices")
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH")
# How often each route is drawn (others: 1). Writes that build state come up more often
# than reads of it.
WEIGHTS = (("push", 4), ("put_keys", 3), ("upload", 3), ("download", 2), ("ack", 2))
BAD_JSON = (b"", b"{", b'{"ops": "\xff"}', b'{"ops": NaN}', b"[]", b"null", b"[" * 9 + b"]" * 9)


def headers(member: str | None, device: str | None) -> dict[str, str]:
    """simkit's credential: ``x-member`` and ``x-device`` (a missing part is left out)."""
    sent = {} if member is None else {"x-member": member}
    return sent if device is None else {**sent, "x-device": device}


@attrs.frozen
class RequestSpace:
    """Who and what raw requests name.

    ``devices``: each directory member and the device IDs it may use (registered or
    not yet); ``groups``: group IDs to aim at; ``strangers``: member IDs the
    directory does not know; ``credential(member, device)``: the request headers
    naming them (``None`` leaves a part out).
    """

    devices: Mapping[str, tuple[str, ...]]
    groups: tuple[str, ...]
    strangers: tuple[str, ...] = ("zed",)
    record_ids: tuple[str, ...] = ("r0", "r1", "r2", "r3", "r4", "r5")
    blob_ids: tuple[str, ...] = ("b0", "b1", "b2")
    labels: tuple[str, ...] = ("note", "task")
    credential: Callable[[str | None, str | None], dict[str, str]] = headers
    # how many faults a request gets, drawn from this (well-formed 70 % of the time)
    faults: tuple[int, ...] = (0,) * 7 + (1,) * 2 + (2,)
    weights: tuple[tuple[str, int], ...] = WEIGHTS  # (route name, weight); later pairs win

    @property
    def members(self) -> list[str]:
        return sorted(self.devices)


class Filler(bytes):
    """A long run of one byte whose repr stays short in a failure report."""

    def __repr__(self) -> str:
        return f"Filler({len(self)} x {bytes(self[:1])!r})"


def jwk(device: str, generation: int, which: str) -> dict:
    """A P-256-shaped public JWK, the same for the same (device, generation); the relay
    checks its shape, never its point."""
    seed = f"{device}/{generation}/{which}".encode()
    return {
        "kty": "EC",
        "crv": "P-256",
        "x": b64url_encode(sha256(seed + b"x").digest()),
        "y": b64url_encode(sha256(seed + b"y").digest()),
    }


def storage_key(member: str, gid: str) -> str | None:
    """Which graph a (valid) graph ID aims at, to build bodies from its state."""
    if gid == "u":
        return f"u:{member}"
    kind, _, rest = gid.partition(":")
    if kind == "d":
        return "d:" + ":".join(sorted((member, rest)))
    return gid if kind == "g" else None


@attrs.define
class _Build:
    """One request under construction: the draw function and what it aims at."""

    draw: Callable
    model: RelayModel
    space: RequestSpace
    now: int
    faults: set[str] = attrs.Factory(set)
    member: str = ""
    device: str | None = None
    key: str | None = None

    def pick(self, options):
        """One of ``options`` (shrinking toward the first), as cheaply as Hypothesis allows."""
        options = list(options)
        return options[self.draw(_index(len(options)))]

    def graph(self):
        return self.model.graph(self.key or "")


@functools.cache
def _weighted(weights: tuple[tuple[str, int], ...]) -> tuple[Route, ...]:
    """Each route repeated as often as its weight says."""
    weight = dict(weights)
    return tuple(r for r in ROUTES for _ in range(weight.get(r.name, 1)))


@functools.cache
def _index(n: int) -> st.SearchStrategy[int]:
    return st.integers(0, n - 1)


@st.composite
def requests(draw, model: RelayModel, space: RequestSpace, now: int) -> Request:
    """One raw request aimed at the model's current state at relay time ``now``."""
    return _request(_Build(draw, model, space, now))


# "param": a bad path parameter (epoch, blob or device ID) in an otherwise valid path, so
# that its check is not hidden behind a graph the pipeline refused first
FAULTS = ("caller", "graph", "param", "method", "path", "query", "body", "oversize")


def _request(b: _Build) -> Request:
    """A well-formed request most of the time; else one or two faults, so that both
    every refusal and the pipeline's order (the earliest failing step answers) show."""
    faults = b.faults = {b.pick(FAULTS) for _ in range(b.pick(b.space.faults))}
    route = b.pick(_weighted(b.space.weights))
    member, device = _caller(b, route, bad="caller" in faults)
    b.member = member if isinstance(member, str) else b.space.members[0]
    b.device = device
    method, path, query, extra = route.method, route.path, {}, {}
    if "gid" in route.path:
        gid = _graph_id(b, bad="graph" in faults)
        b.key = storage_key(b.member, gid)
        path = path.replace(":gid", quote(gid, safe=":"))
    body = BODIES[route.name](b, route, query, extra)
    if ":deviceId" in path:
        path = path.replace(":deviceId", quote(_path_device(b, route, device), safe=""))
    if ":epoch" in path:
        path = path.replace(":epoch", _epoch_param(b))
    if ":blobId" in path:
        path = path.replace(":blobId", _blob_id(b))
    if "method" in faults:
        method = b.pick(m for m in METHODS if m != method)
    if "path" in faults:
        path = b.pick([*UNKNOWN_PATHS, path + "/", path + "/x", path.replace("/", "//", 1)])
    if "query" in faults and not (route.name == "upload" and b.pick([True, False])):
        query = {**query, b.pick(["x", "after", "limit", "policy", "ttl"]): b.pick(["1", "-1"])}
    if "body" in faults:
        body = _damaged_body(b, route, body)
    if "oversize" in faults:
        settings = b.model.settings
        limit = settings.max_blob_bytes if route.body == "raw" else settings.max_push_bytes
        body = Filler(b" " * (limit + 1))
    return Request(method, path, query, {**b.space.credential(member, device), **extra}, body)


# -- who calls ------------------------------------------------------------------------


def _caller(b: _Build, route: Route, bad: bool) -> tuple[str | None, str | None]:
    """An active registered device (or, to register, a new one); or, when ``bad``, an
    unregistered, revoked, another member's, unknown, malformed or missing credential."""
    space, devices = b.space, b.model.devices
    known = {d: e for d, e in devices.items() if e["memberId"] in space.devices}
    kinds = {
        "active": [(e["memberId"], d) for d, e in known.items() if e["revokedAt"] is None],
        "unregistered": [
            (m, d) for m in space.members for d in space.devices[m] if d not in devices
        ],
        "revoked": [(e["memberId"], d) for d, e in known.items() if e["revokedAt"] is not None],
        "cross": [(m, d) for d, e in known.items() for m in space.members if m != e["memberId"]],
        "stranger": [(s, f"{s}1") for s in space.strangers],
        "malformed": [(u, "d1") for u in UNSAFE_IDS] + [(space.members[0], u) for u in UNSAFE_IDS],
        "anonymous": [(None, None), (space.members[0], None), (None, "d1")],
    }
    if bad:
        kind = b.pick(["unregistered", "revoked", "cross", "stranger", "malformed", "anonymous"])
    elif route.name == "register":  # a revoked device registers again: revoked for good
        kind = b.pick(["unregistered", "unregistered", "active", "revoked"])
    else:
        kind = b.pick(["active"])
    for fallback in (kind, "active", "unregistered", "stranger"):
        if kinds[fallback]:
            return b.pick(kinds[fallback])
    raise AssertionError("unreachable: strangers are never empty")


def addressable(model: RelayModel, space: RequestSpace, member: str) -> dict[str, list[str]]:
    """The graph IDs ``member`` may address, by kind: ``u``, its groups (``g``), every
    other member (``d``); ``written``: those of them the store already holds."""
    ids = {
        "u": ["u"],
        "g": [f"g:{g}" for g in space.groups if model.in_group(member, g)],
        "d": [f"d:{m}" for m in space.members if m != member],
    }
    every = [gid for kind in ("u", "g", "d") for gid in ids[kind]]
    return {**ids, "written": [gid for gid in every if storage_key(member, gid) in model.graphs]}


def _graph_id(b: _Build, bad: bool) -> str:
    """Mostly a graph the store holds, else ``u``, a group of the caller's, ``d:`` another
    member; when ``bad``, a group the caller is not in, ``d:`` oneself or a stranger, a
    malformed ID (or a valid one percent-encoded)."""
    space, member = b.space, b.member
    if not bad:
        ids = addressable(b.model, space, member)
        kind = b.pick(["written"] * 3 + ["u", "g", "g", "g", "d"])
        return b.pick(ids[kind] or ids["u"])
    own = [g for g in space.groups if b.model.in_group(member, g)]
    kinds = {
        "g-other": [f"g:{g}" for g in space.groups if g not in own] + ["g:nope"],
        "d-self": [f"d:{member}"],
        "d-stranger": [f"d:{s}" for s in space.strangers],
        "malformed": list(MALFORMED_GIDS),
        "encoded": [quote(f"g:{g}", safe="") for g in own] or ["d%3A" + space.members[-1]],
    }
    return b.pick(kinds[b.pick(sorted(kinds))])


def _path_device(b: _Build, route: Route, device: str | None) -> str:
    """``PUT /devices/:id`` names the caller's own device; revoke names a target."""
    if route.name == "register":
        return device if device is not None and b.pick([True] * 5 + [False]) else "q1"
    mine = [d["deviceId"] for d in b.model.devices_of(b.member)]
    others = [d for d, e in b.model.devices.items() if e["memberId"] != b.member]
    bad = ["a:b", "x" * 65]
    return _param(b, mine * 3 + sorted(others) + ["q9"], bad)


def _epoch_param(b: _Build) -> str:
    """``DELETE keys/:epoch``: around the latest epoch; else out of range or no decimal."""
    latest = b.graph().latest_epoch
    good = [str(max(1, latest)), str(max(1, latest - 1)), str(latest + 1)]
    return _param(b, good, ["0", "01", "x", "-1"])


def _blob_id(b: _Build) -> str:
    """Mostly a blob the graph holds; else an unsafe ID."""
    stored = sorted(b.graph().blobs)
    return _param(
        b, [*stored, *stored, *sorted({*stored, *b.space.blob_ids})], ["a%3Ab", "..", "x" * 65]
    )


def _param(b: _Build, good: list[str], bad: list[str]) -> str:
    """A path parameter: a bad one under the ``param`` fault (the fault is that, so
    each bad value is drawn often: epoch 0 once in four), either under a graph fault
    (the pipeline refuses the graph first), else a good one."""
    if "param" in b.faults:
        return b.pick(bad)
    return b.pick([*good, *bad] if "graph" in b.faults else good)


# -- bodies and queries, per route ------------------------------------------------------


def _no_body(b: _Build, route: Route, query: dict, extra: dict) -> bytes:
    return b""


def _register(b: _Build, route: Route, query: dict, extra: dict) -> bytes:
    device = b.device or "q1"
    generation = b.pick([0, 0, 0, 1])  # 1: other keys for the same ID (a conflict)
    body = {"pubJwk": jwk(device, generation, "pub"), "sigJwk": jwk(device, generation, "sig")}
    if b.pick([False] * 5 + [True]):  # an optional JWK member at its length bound, or past it
        body[b.pick(["pubJwk", "sigJwk"])][b.pick(["kid", "alg", "use"])] = "k" * b.pick([64, 65])
    if b.draw(st.booleans()):
        body["selfSig"] = b64url_encode(sha256(device.encode()).digest())
    if b.draw(st.booleans()):
        body["label"] = b.pick(["phone", "laptop"])
    return _json(body)


def _push(b: _Build, route: Route, query: dict, extra: dict) -> bytes:
    settings, graph = b.model.settings, b.graph()
    counts = [1, 1, 2, 3, 0]
    if settings.max_ops_per_push <= 5:
        counts += [settings.max_ops_per_push, settings.max_ops_per_push + 1]
    ops = [_op(b, graph) for _ in range(b.pick(counts))]
    return _json({"ops": ops})


def _op(b: _Build, graph) -> dict:
    settings = b.model.settings
    record_id = b.pick(sorted({*graph.rows, *b.space.record_ids}))
    stored = graph.rows.get(record_id, {}).get("rev", 0)
    ahead = b.now + settings.max_rev_skew_ms
    revs = [stored + 1, b.now, stored, stored + 2, ahead, ahead + 1, max(0, stored - 1)]
    c = b.pick(CONTENTS)
    lengths = []  # the edges of maxCiphertextChars and of the byte quota
    if settings.max_ciphertext_chars <= 2000:
        lengths += [settings.max_ciphertext_chars, settings.max_ciphertext_chars + 1]
    if settings.quota_bytes <= 1 << 16:  # a quota a few pushes can fill (fuzz: 6,000)
        room = (
            settings.quota_bytes
            - graph.row_bytes()
            + len(graph.rows.get(record_id, {}).get("c", ""))
        )
        lengths += [n for n in (room, room + 1) if 1 <= n <= settings.max_ciphertext_chars]
    c = b.pick([c] * 4 + ["Q" * n for n in lengths])
    op = {"recordId": record_id, "rev": b.pick(revs), "n": "bm9uY2Vub25jZTEy", "c": c}
    for name, options in (
        ("e", [graph.latest_epoch, graph.latest_epoch + 1]),
        ("k", b.space.labels),
        ("sh", b.space.labels),
    ):
        if b.pick([False, False, True]):
            op[name] = b.pick(options)
    return op


def _pull(b: _Build, route: Route, query: dict, extra: dict) -> bytes:
    _page_query(b, query)
    labels = [*b.space.labels, ",".join(b.space.labels)]
    for name in ("kinds", "shards"):
        if b.pick([False, False, True]):
            query[name] = b.pick(labels + (["", "a,,b", "é"] if "query" in b.faults else []))
    return b""


def _log(b: _Build, route: Route, query: dict, extra: dict) -> bytes:
    _page_query(b, query)
    return b""


def _page_query(b: _Build, query: dict) -> None:
    """``after`` around the counter, ``limit`` around the ceiling; malformed on a fault."""
    counter, ceiling = b.graph().counter, b.model.settings.max_pull_limit
    bad = ["-1", "01", "0x", "1.5", ""] if "query" in b.faults else []
    after = b.pick([None, "0", str(counter), str(max(0, counter - 1)), str(counter + 1), *bad])
    limit = b.pick([None, "1", "2", str(ceiling), str(ceiling + 1), *bad, *(["0"] if bad else [])])
    query.update({k: v for k, v in (("after", after), ("limit", limit)) if v is not None})


def _put_keys(b: _Build, route: Route, query: dict, extra: dict) -> bytes:
    """A rotation or a grant, complete and valid most of the time, then perturbed."""
    graph, model = b.graph(), b.model
    latest = graph.latest_epoch
    grants = [latest, latest, max(1, latest - 1)] if latest else []
    epoch = b.pick([latest + 1] * 4 + grants + [latest + 2])
    eligible = [d["deviceId"] for d in model.eligible(b.key)] if b.key else []
    held = graph.wraps.get(epoch, {})
    wraps, excluding = [], []
    for device in eligible:
        if epoch <= latest and device in held and b.pick([True, False]):
            continue  # a grant names only some devices
        (wraps if b.pick([True, True, True, False]) else excluding).append(device)
    others = [*sorted(d for d in model.devices if d not in eligible), "q9"]
    perturb = b.pick(["none"] * 3 + ["stranger", "overlap", "ineligible", "drop", "shuffle"])
    if perturb == "stranger":
        wraps.append(b.pick(others))
    elif perturb == "overlap" and wraps:
        excluding.append(b.pick(wraps))
    elif perturb == "ineligible":
        excluding.append(b.pick(others))
    elif perturb == "drop" and wraps:
        wraps.remove(b.pick(wraps))
    elif perturb == "shuffle":
        wraps.reverse()
    version = b.draw(st.integers(0, 2))
    body = {
        "epoch": epoch,
        "wraps": [{"deviceId": d, "wrapped": f"w{epoch}.{d}.{version}"} for d in wraps],
    }
    if excluding or b.pick([False, True]):
        body["excluding"] = excluding
    return _json(body)


def _upload(b: _Build, route: Route, query: dict, extra: dict) -> bytes:
    """A policy with its ttl edges and a nonce; unknown policies, a ttl out of range or
    on the wrong policy, and bad nonces on a query or body fault; an unknown policy on
    a ``param`` fault (the blob ID in the path stays good: other blob routes draw the
    bad ones)."""
    settings, bad_query, bad_body = b.model.settings, "query" in b.faults, "body" in b.faults
    policies = [None, "retain", "transport", "transport", "ephemeral", "ephemeral"]
    if "param" in b.faults:
        b.faults.discard("param")  # the fault is spent on the policy
        policies = []
    policy = b.pick(policies + (["keep", "Retain"] * 3 if bad_query or not policies else []))
    if policy is not None:
        query["policy"] = policy
    ceiling = settings.max_blob_ttl_ms
    ttls = ["1000", "1", str(ceiling), str(ceiling + 1)] if policy == "ephemeral" else [None]
    ttl = b.pick(ttls + (["0", "01", None, "1000"] if bad_query else []))
    if ttl is not None:
        query["ttl"] = ttl
    nonce = b.pick(["bm9uY2Vub25jZTEy", *([None, "a+b", "AAB"] if bad_body else [])])
    if nonce is not None:
        extra["x-blob-nonce"] = nonce
    sizes = [3, 3, 0, 1, 10]  # and the edges of maxBlobBytes and of the blob-byte quota
    if settings.max_blob_bytes <= 4096:
        sizes += [settings.max_blob_bytes, settings.max_blob_bytes + 1]
    if settings.quota_blob_bytes <= 4096:
        room = settings.quota_blob_bytes - b.graph().blob_bytes()
        sizes += [n for n in (room, room + 1) if 0 <= n <= settings.max_blob_bytes]
    return Filler(bytes([b.draw(st.integers(0, 255))]) * b.pick(sizes))


BODIES: dict[str, Callable[[_Build, Route, dict, dict], bytes]] = {
    "register": _register,
    "list_devices": _no_body,
    "revoke": _no_body,
    "push": _push,
    "pull": _pull,
    "log": _log,
    "get_keys": _no_body,
    "roster": _no_body,
    "keygaps": _no_body,
    "put_keys": _put_keys,
    "discard": _no_body,
    "upload": _upload,
    "download": _no_body,
    "ack": _no_body,
    "delete_blob": _no_body,
}


# -- damage -------------------------------------------------------------------------------


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


def _damaged_body(b: _Build, route: Route, body: bytes) -> bytes:
    """Malformed JSON or UTF-8, too deep, or one member wrong, missing or extra."""
    if route.body == "none":
        return b.pick([b"{}", b"x"])
    if route.body == "raw":
        return body
    tables = REQUESTS.get(f"{route.method} {route.path}")
    how = b.pick(["member"] * 4 + ["table"] * (4 if tables else 0) + ["syntax"])
    if how == "syntax":
        return b.pick(BAD_JSON)
    value = json.loads(body)
    if how == "table":
        return _malformed_body(b, tables, value)
    places = list(_places(value))
    container, name = b.pick(places)
    action = b.pick(["replace", "replace", "delete", "extra"])
    if action == "delete" and isinstance(container, dict):
        del container[name]
    elif action == "extra" and isinstance(container, dict):
        container["zz"] = 1
    else:
        container[name] = b.pick(WRONG_VALUES)
    return _json(value)


def _malformed_body(b: _Build, tables: tuple, value: dict) -> bytes:
    """One malformation from the spec's table of the body, or of one of its listed
    entries (``simkit.protocol.messages``): absent, wrong type, out of range, at the
    boundary, an unknown member, a key given twice."""
    table, member, entries = tables
    listed = value.get(member) if member else None
    if listed and b.pick([False, True]):
        index = b.pick(range(len(listed)))
        chosen = b.pick(malformations(entries))
        listed[index] = chosen.apply(listed[index])
        if chosen.kind == "duplicate-key":  # one entry given twice over: the text says it
            text = chosen.text(listed[index])
            listed[index] = _RAW
            return json.dumps(value).replace(json.dumps(_RAW), text).encode()
        return _json(value)
    return b.pick(malformations(table)).text(value, json.dumps).encode()


_RAW = "\x00simkit-entry\x00"  # a placeholder replaced by an entry's raw text


def _places(value: object):
    """Every (container, key or index) inside a JSON value, outermost first."""
    if isinstance(value, dict):
        for name in sorted(value):
            yield value, name
            yield from _places(value[name])
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield value, i
            yield from _places(item)
