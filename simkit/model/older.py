"""The previous release's relay as the spec describes it (Versioning rule 3), to judge an
``OlderRelay`` by: written from the spec's words, not from ``simkit.relay.older``.

It answers push and pull without ``epoch``, drops ``excluding`` as a member it does not
know (so a rotation that needed it is refused as incomplete), and has no log route.
"""

from urllib.parse import unquote

import attrs

from simkit.model.answer import Expected, Refuse, ok
from simkit.model.relay import RelayModel
from simkit.model.routes import Route
from simkit.model.state import Call
from simkit.protocol.http import Request

RULE = "versioning rule 3"


class OlderRelayModel(RelayModel):
    def handle(self, request: Request, now: int) -> Expected:
        segments = [unquote(s, errors="replace") for s in request.path.split("/")]
        if len(segments) == 4 and segments[1] == "graphs" and segments[3] == "log":
            return Refuse(404, "not-found", RULE, "an older relay has no log route").expected
        expected = super().handle(request, now)
        if expected.status == 200 and segments[-1:] in (["push"], ["pull"]):
            body = expected.body
            if isinstance(body, dict) and "epoch" in body:
                del body["epoch"]
                note = "; ".join(filter(None, [expected.note, "no epoch"]))
                return attrs.evolve(
                    ok((*expected.rules, RULE), body, note), members=expected.members
                )
        return expected

    def _pipeline(self, route: Route, params: dict, request: Request, now: int) -> Call:
        call = super()._pipeline(route, params, request, now)
        if route.name == "put_keys" and isinstance(call.body, dict):
            call.body.pop("excluding", None)  # a member it does not know: dropped
        return call
