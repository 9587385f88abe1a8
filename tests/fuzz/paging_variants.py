"""Relays whose pages never end: each would keep a reader that pages "until ``more``
is false" asking for ever. The client, the relay's model tests and ``simkit fuzz``
must each stop promptly and name the rule (docs/client.md, "Paging").
``simkit fuzz --variant tests.fuzz.paging_variants:endless_more``.
"""

from simkit.protocol.http import json_response
from simkit.relay import Relay
from simkit.sim.variant import Variant


def _more(response):
    """The same answer, except that it says another page waits."""
    if response.status != 200:
        return response
    return json_response(response.status, {**response.json(), "more": True})


class EndlessLog(Relay):
    """Every log page says ``more``, the last (empty) one too; pull is honest."""

    def _log(self, call):
        return _more(super()._log(call))


class StuckLog(Relay):
    """Every log page comes back empty and says ``more``: a read never moves."""

    def _log(self, call):
        response = super()._log(call)
        if response.status != 200:
            return response
        return json_response(200, {**response.json(), "entries": [], "more": True})


class EndlessMore(EndlessLog):
    """Every pull and log page says ``more``, the last (empty) one too."""

    def _pull(self, call):
        return _more(super()._pull(call))


class CreepingCursor(Relay):
    """Every pull page says ``more`` and moves the cursor at least one past ``after``:
    each page advances, yet the pull never ends."""

    def _pull(self, call):
        response = super()._pull(call)
        if response.status != 200:
            return response
        after, _ = self._page(call)
        body = response.json()
        return json_response(200, {**body, "cursor": max(body["cursor"], after + 1), "more": True})


class StuckCursor(Relay):
    """A page that says ``more`` names the request's ``after`` as its cursor."""

    @staticmethod
    def _cursor(graph, after, page, more):
        return after if more else max(after, graph.seq)


class RereadsAfter(Relay):
    """Pull and log serve from ``seq >= after`` instead of ``seq > after``: the page
    repeats the op at the cursor (the one-line bug that once hung the model tests)."""

    def _page(self, call):
        after, limit = super()._page(call)
        return max(after - 1, 0), limit


endless_more = Variant(
    "endless-more", "every pull and log page says more, the last one too", relay=EndlessMore
)
stuck_cursor = Variant(
    "stuck-cursor", "a page that says more names the request's after as its cursor",
    relay=StuckCursor,
)  # fmt: skip
rereads_after = Variant(
    "rereads-after", "pull and log serve seq >= after instead of seq > after", relay=RereadsAfter
)

ALL = (endless_more, stuck_cursor, rereads_after)
