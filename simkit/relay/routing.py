"""The fifteen routes and how a path finds one (spec: Endpoints).

Paths are matched literally, segment by segment: the raw path is split on
``/`` first and each segment is then percent-decoded, so ``g%3Ateam`` is
``g:team`` while ``%2F`` can never create a segment and ``..`` is just an
(invalid) ID. Nothing is normalised.
"""

from urllib.parse import unquote

import attrs

from simkit.protocol.http import Refused, remembered_paths


@attrs.frozen
class Route:
    """One route and what the pipeline must do before its handler runs.

    ``registered``: needs a registered, unrevoked device (all but PUT /devices).
    ``capability``: checked right after graph resolution (``rotate`` is checked by
    the keys handler, which needs the body to know). ``body`` is ``none``,
    ``json`` or ``raw``; ``query`` lists the accepted query parameters.
    """

    method: str
    pattern: tuple[str, ...]
    handler: str
    bucket: str
    body: str = "none"
    query: tuple[str, ...] = ()
    registered: bool = True
    capability: str | None = None


ROUTES = (
    Route("PUT", ("devices", ":deviceId"), "_register_device", "write", "json", registered=False),
    Route("GET", ("devices",), "_list_devices", "read"),
    Route("POST", ("devices", ":deviceId", "revoke"), "_revoke_device", "write"),
    Route("POST", ("graphs", ":gid", "push"), "_push", "write", "json", capability="write"),
    Route("GET", ("graphs", ":gid", "pull"), "_pull", "read",
          query=("after", "limit", "kinds", "shards")),
    Route("GET", ("graphs", ":gid", "log"), "_log", "read", query=("after", "limit")),
    Route("GET", ("graphs", ":gid", "keys"), "_get_keys", "read"),
    Route("GET", ("graphs", ":gid", "devices"), "_roster", "read"),
    Route("GET", ("graphs", ":gid", "keygaps"), "_keygaps", "read"),
    Route("POST", ("graphs", ":gid", "keys"), "_put_keys", "write", "json"),
    Route("DELETE", ("graphs", ":gid", "keys", ":epoch"), "_discard_wrap", "write"),
    Route("POST", ("graphs", ":gid", "blobs", ":blobId"), "_upload_blob", "blob", "raw",
          query=("policy", "ttl"), capability="write"),
    Route("GET", ("graphs", ":gid", "blobs", ":blobId"), "_download_blob", "blob"),
    Route("POST", ("graphs", ":gid", "blobs", ":blobId", "ack"), "_ack_blob", "write"),
    Route("DELETE", ("graphs", ":gid", "blobs", ":blobId"), "_delete_blob", "write",
          capability="write"),
)  # fmt: skip


_BY_LENGTH: dict[int, list[Route]] = {}
for _route in ROUTES:  # a path only ever matches patterns of its own length
    _BY_LENGTH.setdefault(len(_route.pattern), []).append(_route)


def _params(pattern: tuple[str, ...], segments: list[str]) -> dict[str, str] | None:
    if len(pattern) != len(segments):
        return None
    params = {}
    for part, segment in zip(pattern, segments, strict=True):
        if part.startswith(":"):
            params[part[1:]] = segment
        elif part != segment:
            return None
    return params


@remembered_paths(lambda: Refused(404, "not-found", "no such route"))
def match(method: str, path: str) -> tuple[Route, dict[str, str]]:
    """The route for this request and its decoded path parameters.

    No route for the path is ``404 not-found``; a route for the path but not
    the method is ``405 method-not-allowed`` with an ``allow`` header.
    """
    if not path.startswith("/"):
        raise Refused(404, "not-found", "no such route")
    segments = [unquote(s, errors="replace") for s in path[1:].split("/")]
    allowed = []
    for route in _BY_LENGTH.get(len(segments), ()):
        params = _params(route.pattern, segments)
        if params is None:
            continue
        if route.method == method:
            return route, params
        allowed.append(route.method)
    if allowed:
        allow = ", ".join(sorted(allowed))
        raise Refused(405, "method-not-allowed", f"use {allow}", {"allow": allow})
    raise Refused(404, "not-found", "no such route")
