"""Oracles that follow a world in lockstep: the spec's executable models, fed every
exchange as it happens, keeping what disagreed and where (the ``*-model`` invariants
read it).

``RelayOracle`` holds the honest relay against ``simkit.model``: every request the
world's relay answers, every sweep and restart.
"""

import json

import attrs

from simkit.model import ModelCheck
from simkit.relay import Relay, Request, Response


@attrs.frozen
class Disagreement:
    """What a model found: where in the trace, what differed, who asked and the records
    their request named."""

    trace_seq: int
    detail: str
    devices: tuple[str, ...] = ()
    records: tuple[str, ...] = ()


class RelayOracle:
    """The relay model following one relay, keeping every ``Disagreement``."""

    def __init__(self, relay: Relay, host, settings: dict, trace) -> None:
        self.check: ModelCheck | None = ModelCheck(host, relay.clock(), **settings)
        self.findings: list[Disagreement] = []
        self.retired: str | None = None  # why it stopped following the relay
        self._trace = trace

    def answer(self, relay: Relay, request: Request) -> Response:
        """The relay's answer to one request, checked against the model's."""
        if self.check is None:
            return relay.handle(request)
        now = relay.clock()
        response = relay.handle(request)
        self._found(self.check.observe(request, now, response), request)
        return response

    def swept(self, now: int, forgotten: int) -> None:
        """One external job swept at ``now`` and the relay forgot ``forgotten`` blobs."""
        if self.check is not None:
            self._found(self.check.sweep(now, forgotten))

    def swept_if_due(self, now: int, result: int | None) -> None:
        """The built-in sweeper woke at ``now`` and the relay answered ``result``."""
        if self.check is not None:
            self._found(self.check.sweep_if_due(now, result))

    def restarted(self, relay: Relay) -> None:
        if self.check is not None:
            self.check.restart(relay.clock())

    def store_findings(self, relay: Relay) -> list[str]:
        """The relay's whole store against the model's (none once retired)."""
        return [] if self.check is None else self.check.store(relay)

    def retire(self, why: str) -> bool:
        """The relay's state changed behind the model's back (a colluding relay serving
        a revoked device): stop checking it. Whether it was following until now."""
        if self.check is None:
            return False
        self.check, self.retired = None, why
        return True

    def _found(self, findings: list[str], request: Request | None = None) -> None:
        who, records = (), ()
        if request is not None and findings:
            who = tuple(filter(None, [request.headers.get("x-device")]))
            records = records_named(request)
        for finding in findings:
            if request is not None:
                finding = f"{request.method} {request.path} by {', '.join(who)}: {finding}"
            self.findings.append(Disagreement(len(self._trace), finding, who, records))


def records_named(request: Request) -> tuple[str, ...]:
    """The record IDs a push names (for a finding's evidence), else none."""
    try:
        ops = json.loads(request.body)["ops"] if request.path.endswith("/push") else []
        return tuple(dict.fromkeys(op["recordId"] for op in ops if isinstance(op, dict)))
    except (ValueError, KeyError, TypeError):
        return ()
