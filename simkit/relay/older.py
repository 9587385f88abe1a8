"""The relay as it was one release before this one, as Versioning rule 3 describes it.

An older relay answers push and pull without ``epoch`` (optional so that clients can
talk to one), does not know ``excluding`` and so drops it (a rotation that needed it is
then refused as incomplete) and has no log route. Worlds run it to fuzz a release:
``simkit fuzz --rollout`` (docs/releases.md).
"""

from urllib.parse import unquote

from simkit.protocol.http import Refused, Request, Response, json_response
from simkit.relay.core import Call
from simkit.relay.relay import Relay


def log_path(path: str) -> bool:
    """``/graphs/<gid>/log``: the route an older relay does not have."""
    parts = [unquote(part, errors="replace") for part in path.split("/")]
    return len(parts) == 4 and parts[1] == "graphs" and parts[3] == "log"


class OlderRelay(Relay):
    """The previous release's relay (Versioning rule 3)."""

    def handle(self, request: Request) -> Response:
        if log_path(request.path):  # no such route, whatever the method
            return Refused(404, "not-found", "no such route").response
        return super().handle(request)

    def _put_keys(self, call: Call) -> Response:
        if isinstance(call.body, dict):  # a member it does not know: dropped
            call.body = {name: v for name, v in call.body.items() if name != "excluding"}
        return super()._put_keys(call)

    def _push(self, call: Call) -> Response:
        return _without_epoch(super()._push(call))

    def _pull(self, call: Call) -> Response:
        return _without_epoch(super()._pull(call))


def _without_epoch(response: Response) -> Response:
    if response.status != 200:
        return response
    answer = response.json()
    answer.pop("epoch", None)
    return json_response(200, answer)
