"""The fifteen routes as the spec lists them, with the bucket and pipeline needs of each.

A path is split on ``/`` and then each segment is percent-decoded, so ``g%3Ateam``
names ``g:team`` and ``%2F`` never makes a segment (docs/relay.md, Paths). Matches are
remembered by ``protocol.http.remembered_paths``, a cache that holds no routing of its own.
"""

from urllib.parse import unquote

import attrs

from simkit.model.answer import Refuse
from simkit.protocol.http import remembered_paths


@attrs.frozen
class Route:
    """``registered``: needs a registered, unrevoked device (all but PUT /devices).
    ``body``: ``none``, ``json`` or ``raw``. ``capability``: asked right after the graph
    resolves (``rotate`` is asked by the key put itself, which needs the body)."""

    method: str
    path: str
    name: str
    bucket: str
    body: str = "none"
    query: tuple[str, ...] = ()
    registered: bool = True
    capability: str | None = None

    @property
    def segments(self) -> list[str]:
        return self.path[1:].split("/")


ROUTES = (
    Route("PUT", "/devices/:deviceId", "register", "write", "json", registered=False),
    Route("GET", "/devices", "list_devices", "read"),
    Route("POST", "/devices/:deviceId/revoke", "revoke", "write"),
    Route("POST", "/graphs/:gid/push", "push", "write", "json", capability="write"),
    Route("GET", "/graphs/:gid/pull", "pull", "read", query=("after", "limit", "kinds", "shards")),
    Route("GET", "/graphs/:gid/log", "log", "read", query=("after", "limit")),
    Route("GET", "/graphs/:gid/keys", "get_keys", "read"),
    Route("GET", "/graphs/:gid/devices", "roster", "read"),
    Route("GET", "/graphs/:gid/keygaps", "keygaps", "read"),
    Route("POST", "/graphs/:gid/keys", "put_keys", "write", "json"),
    Route("DELETE", "/graphs/:gid/keys/:epoch", "discard", "write"),
    Route("POST", "/graphs/:gid/blobs/:blobId", "upload", "blob", "raw", ("policy", "ttl"),
          capability="write"),
    Route("GET", "/graphs/:gid/blobs/:blobId", "download", "blob"),
    Route("POST", "/graphs/:gid/blobs/:blobId/ack", "ack", "write"),
    Route("DELETE", "/graphs/:gid/blobs/:blobId", "delete_blob", "write", capability="write"),
)  # fmt: skip


def _params(route: Route, segments: list[str]) -> dict[str, str] | None:
    pattern = route.segments
    if len(pattern) != len(segments):
        return None
    params = {}
    for part, segment in zip(pattern, segments, strict=True):
        if part.startswith(":"):
            params[part[1:]] = segment
        elif part != segment:
            return None
    return params


@remembered_paths(lambda: Refuse(404, "not-found", "service rule 2", "no such route"))
def match(method: str, path: str) -> tuple[Route, dict[str, str]]:
    """The route and its decoded parameters; 404 for no such path, 405 for a wrong method."""
    if not path.startswith("/"):
        raise Refuse(404, "not-found", "service rule 2", "no such route")
    segments = [unquote(s, errors="replace") for s in path[1:].split("/")]
    allowed = []
    for route in ROUTES:
        params = _params(route, segments)
        if params is not None and route.method == method:
            return route, params
        if params is not None:
            allowed.append(route.method)
    if allowed:
        allow = ", ".join(sorted(allowed))
        raise Refuse(405, "method-not-allowed", "service rule 2", "wrong method", {"allow": allow})
    raise Refuse(404, "not-found", "service rule 2", "no such route")
