"""Request and Response: one HTTP exchange as plain values (sans-I/O, like h11).

The relay never touches a socket; a driver (the simulator, later an HTTP server)
builds a ``Request``, calls ``relay.handle()`` and sends the ``Response`` on.
"""

import functools
from collections.abc import Callable

import attrs

from simkit.protocol.canonical import compact_json, parse_json

CACHED_PATH = 256  # longer paths are matched afresh: 4,096 of them could hold megabytes


def _lowercase_names(headers: dict[str, str] | None) -> dict[str, str]:
    """Header names are case-insensitive on the wire; the relay reads them lowercase."""
    return {str(name).lower(): value for name, value in (headers or {}).items()}


def _dict_or_empty(query: dict[str, str] | None) -> dict[str, str]:
    return dict(query or {})


@attrs.frozen
class Request:
    """One request; ``path`` is relative to the relay's mount point, not yet decoded."""

    method: str
    path: str
    query: dict[str, str] = attrs.field(default=None, converter=_dict_or_empty)
    headers: dict[str, str] = attrs.field(default=None, converter=_lowercase_names)
    body: bytes = attrs.field(default=b"", validator=attrs.validators.instance_of(bytes))


@attrs.frozen
class Response:
    """One answer: JSON bytes, except a blob download which is raw ciphertext."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> object:
        """The body parsed as a JavaScript client would parse it."""
        return parse_json(self.body)


def json_response(status: int, payload: object, headers: dict[str, str] | None = None) -> Response:
    """Encode ``payload`` compactly; ASCII-only so a lone surrogate can never break it."""
    body = compact_json(payload).encode("ascii")
    return Response(status, {"content-type": "application/json", **(headers or {})}, body)


def json_list_response(status: int, name: str, items: list[str], rest: dict) -> Response:
    """``json_response(status, {name: [...items], **rest})``, byte for byte, from items
    already encoded with ``compact_json`` (rows the relay encodes once and serves often)."""
    tail = compact_json(rest)
    body = f'{{"{name}":[{",".join(items)}]{"," + tail[1:] if rest else "}"}'
    return Response(status, {"content-type": "application/json"}, body.encode("ascii"))


class Refused(Exception):
    """Raised by any step of a request to answer with an error and undo its changes.

    The body is ``{error, message, ...extra}`` (see docs/relay.md, Errors).
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: dict[str, str] | None = None,
        **extra: object,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.response = json_response(status, {"error": code, "message": message, **extra}, headers)


def invalid(message: str) -> Refused:
    """The spec's ``400 invalid``: the request does not fit its schema."""
    return Refused(400, "invalid", message)


def remembered_paths(refused: Callable[[], Exception]):
    """Decorate a router ``match(method, path) -> (route, params)`` so that each (method,
    path) is matched once: a device asks the same few paths all day. A method or path
    that is not a string raises ``refused()`` (it could not key the cache); a refusal
    raises and is not kept; a path longer than ``CACHED_PATH`` is matched afresh, so
    hostile paths cost what they did and cannot fill memory. Each caller gets its own
    params."""

    def decorate(match):
        cached = functools.lru_cache(maxsize=4096)(match)

        @functools.wraps(match)
        def remembered(method: str, path: str):
            if not isinstance(method, str) or not isinstance(path, str):
                raise refused()
            route, params = (cached if len(path) <= CACHED_PATH else match)(method, path)
            return route, dict(params)

        remembered.cache_info = cached.cache_info
        return remembered

    return decorate
