"""Bounded paging: every loop that reads the relay's pages (pull, log) ends.

A reader asks for the page ``after`` its cursor and asks again while the answer says
``more``. A relay that says ``more`` without moving the cursor past ``after`` (an
empty page, a cursor that stays put) would keep it asking for ever, and one that
keeps moving it a little at a time nearly so. So a page that says ``more`` must
advance the cursor, or the read stops with ``PagingStalled``; and one read takes at
most ``MAX_PAGES`` pages, the rest waiting for the next sync run (docs/client.md,
"Paging").
"""

import attrs

from simkit.errors import SimkitError

MAX_PAGES = 1000  # 500,000 ops at the 500-op page: far above any honest backlog


class PagingStalled(SimkitError):
    """The relay returned a page that said ``more`` but did not advance the cursor."""

    def __init__(self, route: str, graph_id: str, after: int, cursor: int) -> None:
        self.route, self.graph_id, self.after, self.cursor = route, graph_id, after, cursor
        super().__init__(
            f"{route} {graph_id}: the relay returned a page that did not advance the cursor "
            f"(after={after} answered cursor {cursor} and more)"
        )


@attrs.define
class Pages:
    """Counts one read's pages and checks that each one moves the cursor forward."""

    route: str  # "pull" or "log"
    graph_id: str
    limit: int = MAX_PAGES
    read: int = 0
    cut_short: bool = False  # the read stopped at ``limit`` while pages were waiting
    yielded: bool = False  # the read stopped because its graph's share of the run was spent

    def another(self, after: int, cursor: int, more: bool, spent: bool = False) -> bool:
        """After the page asked ``after`` that ends at ``cursor``: read another one?
        ``spent``: the graph's share of this sync run has passed (``share_spent``)."""
        self.read += 1
        if not more:
            return False
        if cursor <= after:
            raise PagingStalled(self.route, self.graph_id, after, cursor)
        self.cut_short = self.read >= self.limit
        self.yielded = spent and not self.cut_short
        return not (self.cut_short or self.yielded)


def share_spent(device) -> bool:
    """Whether the graph being synced has had its share of this run (a wall clock that
    stepped back since the share began ends it too). Its push, pull and log read then
    stop between requests and the rest waits for the next run (``yield_run``), so that
    the other graphs' key checks and rotation turns are not held back (docs/findings.md,
    F30)."""
    if device.share is None:
        return False
    start, ms = device.share
    return not 0 <= device.clock.now_ms() - start < ms


def yield_run(device, graph_id: str, route: str) -> None:
    """A push or read stopped at its graph's share of the run: say so, and run again at
    once (not at the next poke or poll) to go on from where it stopped."""
    device.emit("sync.stopped", graph_id, route=route, reason="run-budget")
    device.wake()


def cut_short(device, pages: Pages) -> None:
    """A read that stopped at its page limit or its graph's share of the run says so;
    the next sync run goes on."""
    if pages.yielded:
        yield_run(device, pages.graph_id, pages.route)
    if pages.cut_short:
        device.last_error = (
            f"{pages.route} {pages.graph_id}: stopped after {pages.read} pages; "
            "the rest waits for the next sync run"
        )
        device.emit("sync.stopped", pages.graph_id, route=pages.route, reason="page-limit")
