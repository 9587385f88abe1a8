"""``ModelCheck``: follow a relay that others talk to, one exchange at a time.

A world's honest devices, a rogue device and ``simkit diff`` all send requests to a
relay; whoever drives it hands every request, the relay clock it was answered at and
the response to ``observe`` in order, and gets back the mismatches. Sweeps and
restarts are told to the check as they happen, because neither is a request.
"""

from collections.abc import Collection

from simkit.model.answer import Expected, Mismatch, compare
from simkit.model.relay import RelayModel
from simkit.model.store import adopt, graph_findings, relay_counters, store_findings
from simkit.protocol.host import Host
from simkit.protocol.http import Request, Response


class ModelCheck:
    """``ModelCheck(host, now, **relay_settings)``: the relay's host and settings, and
    its clock when it started (the sweeper's schedule counts from it); ``model``: a
    variant's own model of the rules it changes (docs/variants.md)."""

    def __init__(
        self, host: Host, now: int = 0, model: type[RelayModel] = RelayModel, **settings: object
    ) -> None:
        self.model = model(host, now, **settings)
        self.expected: Expected | None = None  # the last exchange's predicted answer

    def observe(self, request: Request, now: int, response: Response) -> list[Mismatch]:
        """One exchange: the mismatches between ``response`` and the spec's answer."""
        self.model.written = set()  # here, not in ``handle``: a version's model may answer alone
        self.expected = self.model.handle(request, now)
        return compare(self.expected, response)

    def stored(self, graph: dict | None, snapshot: dict | None = None) -> list[Mismatch]:
        """What the last exchange left in the store against the model's: the graph it
        touched (``graph``: the relay's, in its snapshot form), or (a request naming no
        graph) the whole ``snapshot``; each difference named after the rule that
        decided that exchange, whose outcome it is."""
        key = self.model.touched
        if key is not None:
            found = graph_findings(self.model, key, graph)
        else:
            found = store_findings(self.model, snapshot)
        rules = self.expected.rules
        return [
            Mismatch(f"{self.expected.rule}: {finding}", (*rules, *finding.rules))
            for finding in found
        ]

    def pokes(self, poked: Collection[str]) -> list[Mismatch]:
        """Events rule 1, for the last exchange or sweep: every graph it changed was
        poked (``poked``: the graphs the relay emitted a poke for meanwhile). A poke
        for a graph nothing changed is tolerated (docs/model.md)."""
        return [
            Mismatch(
                f"events rule 1 (a poke per graph after writes): {key} was written and "
                "the relay emitted no poke for it",
                ("events rule 1",),
            )
            for key in sorted(self.model.written)
            if key not in poked
        ]

    def sweep(self, now: int, forgotten: int) -> list[Mismatch]:
        """The relay's ``sweep()`` ran at ``now`` and forgot ``forgotten`` blobs."""
        self.model.written = set()
        expected = self.model.sweep(now)
        if forgotten == expected:
            return []
        return [Mismatch(f"blobs: sweep: forgot {forgotten} blob(s), the blob policies forget "
                         f"{expected}", ("blobs: sweep", "blob states"))]  # fmt: skip

    def sweep_if_due(self, now: int, result: int | None) -> list[Mismatch]:
        """The relay's ``sweep_if_due()`` ran at ``now`` and returned ``result``."""
        self.model.written = set()
        expected = self.model.sweep_if_due(now)
        if result == expected:
            return []
        return [Mismatch(f"blobs: sweep (its schedule): the sweeper answered {result}, "
                         f"expected {expected}", ("blobs: sweep",))]  # fmt: skip

    def restart(self, now: int, model: type[RelayModel] | None = None) -> None:
        """The relay restarted from its store at ``now`` (rate-limit buckets refill);
        ``model``: it runs another version now, which that model judges from here on."""
        if model is not None and type(self.model) is not model:
            moved = model(self.model.host, now, **self.model.given)
            moved.restore(self.model.snapshot())
            self.model = moved
        self.model.restart(now)

    def follow(self, graph: dict | None, snapshot: dict | None = None) -> None:
        """The relay departed from the model in a rule a change declares: its outcome
        (as ``stored`` takes it) is the model's store from now on."""
        adopt(self.model, graph, snapshot)

    def store(self, relay: object) -> list[Mismatch]:
        """The relay's whole store against the model's (``relay`` has ``snapshot()``)."""
        return store_findings(self.model, relay.snapshot(), relay_counters(relay))
