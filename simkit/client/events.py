"""Client events, status and errors (spec: Events, client-side events; status fields).

Payloads beyond what the spec names are decided in docs/client.md.
"""

import attrs

from simkit.errors import SimkitError

EVENT_KINDS = (
    "record.rejected",
    "keys.behind",
    "keys.unopenable",
    "device.pending",
    "device.conflict",
    "linking.unenforced",
    "policy.readonly",
    "sync.done",
    # simkit's own additions (docs/client.md):
    "push.accepted",
    "push.rejected",
    "record.applied",
    "record.restamped",
    "log.alarm",
    "device.approved",
    # which branch of a client rule ran (docs/client.md, "Diagnostic events"): what
    # an app may log, and what simkit counts as behaviours reached
    "lww.kept-local",
    "lww.equal-rev",
    "pull.stopped",
    "roster.deferred",
    "push.batches",
    "echo.skipped",
    "retry",
    "checkpoint.published",
    "checkpoint.believed",
    "log.ok",
    "log.anchored",
    "rotation.honoured",
    "sync.stopped",
)


@attrs.frozen
class ClientEvent:
    kind: str = attrs.field(validator=attrs.validators.in_(EVENT_KINDS))
    graph: str | None = None
    fields: dict = attrs.Factory(dict)

    def to_json(self) -> dict:
        return {"kind": self.kind, "graph": self.graph, **self.fields}


@attrs.define
class GraphStatus:
    """Per graph: the log-verification state, its anchor, and whether writes are held."""

    log: str = "unverified"
    log_from: int | None = None
    behind: bool = False
    readonly: bool = False

    def to_json(self) -> dict:
        log: dict = {"state": self.log}
        if self.log_from is not None:
            log["from"] = self.log_from
        return {"log": log, "behind": self.behind, "readonly": self.readonly}


class DeviceError(SimkitError):
    """A device call that the application must handle (a refused ceremony, a bad write)."""
