"""Reading the wire as the device model needs it: a request's route and graph, an
answer's JSON and error code, and the small checks on numbers it relies on."""

import functools
import json
from urllib.parse import unquote

from simkit.errors import SimkitError
from simkit.model.answer import Refuse
from simkit.model.routes import match
from simkit.protocol.records import verify_record


def route_of(request) -> tuple[str | None, dict]:
    """A request's route name and path parameters (read-only: they are shared)."""
    return _route(request.method, request.path)


@functools.lru_cache(maxsize=4096)
def _route(method: str, path: str) -> tuple[str | None, dict]:
    """A path is matched once: a device asks the same few paths all day."""
    try:
        route, params = match(method, path)
    except Refuse:
        return None, {}
    return route.name, params


def gid(path: str) -> str:
    return unquote(path.split("/")[2])


def parsed(body: bytes) -> object:
    try:
        return json.loads(body)
    except ValueError:
        return None


def error_code(response) -> str | None:
    body = parsed(response.body)
    return body.get("error") if isinstance(body, dict) else None


def is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def as_int(text: object, default: int) -> int:
    return int(text) if isinstance(text, str) and text.isdecimal() else default


def signature_of(request) -> tuple:
    return (request.method, request.path, tuple(sorted(request.query.items())), request.body)


def at_text(record: dict | None) -> str:
    return "nothing" if record is None else f"rev {record.get('at')}"


def verifies(sig_jwk: dict, sk: str, record: dict, signature: str) -> bool:
    try:
        return verify_record(sig_jwk, sk, record, signature)
    except (SimkitError, ValueError, TypeError):
        return False
