"""What a device tells its user (spec: Client status): each graph's log state,
whether it waits for a key, what it refused on purpose and its last error (a
``Device`` is made of these)."""

from simkit.client.events import GraphStatus
from simkit.client.logverify import OFF, UNVERIFIED, LogState


class Status:
    """The status a device shows."""

    def log_state(self, graph_id: str) -> LogState | None:
        return self.store.get("log", self.storage_key(graph_id))

    def graph_status(self, graph_id: str) -> GraphStatus:
        log = self.log_state(graph_id)
        if not self.unfiltered(graph_id) or not self.config.log_verification:
            state, anchor = OFF, None
        else:
            state, anchor = (log.state, log.anchored_from) if log else (UNVERIFIED, None)
        return GraphStatus(state, anchor, self.behind(graph_id), graph_id in self.readonly)

    @property
    def linking(self) -> str:
        """``waiting`` while a keyed graph this device follows has given it no key."""
        waiting = any(self.relay_epoch(g) > 0 and not self.keyring(g).keys for g in self.graphs())
        return "waiting" if waiting else "ok"

    def rejected(self) -> list[dict]:
        """Every record refused on purpose, with its reason (status.rejected)."""
        out = []
        for graph_id in self.graphs():
            rows = self.store.rows(f"refused:{self.storage_key(graph_id)}")
            out.extend(
                {"graph": graph_id, "recordId": rid, **row} for rid, row in sorted(rows.items())
            )
        return out

    @property
    def status(self) -> dict:
        return {
            "lastError": self.last_error,
            "rejected": self.rejected(),
            "linking": self.linking,
            "graphs": {g: self.graph_status(g).to_json() for g in self.graphs()},
        }
