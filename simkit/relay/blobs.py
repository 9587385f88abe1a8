"""Blob routes and the sweeper: raw ciphertext under retention policies (spec: Blobs).

The relay is sans-I/O, so the "built-in sweeper" is a schedule, not a timer:
``next_sweep_at`` says when it is due and the driver calls ``sweep_if_due()``
(or ``sweep()`` from one external job when the interval is 0).
"""

import attrs

from simkit.protocol.http import Refused, Response, invalid, json_response
from simkit.relay.core import Call, RelayCore
from simkit.relay.events import BlobForgotten
from simkit.relay.schema import MAX_NONCE_CHARS, b64url, query_int, safe_id
from simkit.relay.state import Blob, Graph
from simkit.relay.txn import Transaction

POLICIES = ("retain", "transport", "ephemeral")


def _answer(blob: Blob, duplicate: bool) -> Response:
    return json_response(
        200,
        {
            "ok": True,
            "duplicate": duplicate,
            "size": len(blob.data),
            "policy": blob.policy,
            "expiresAt": blob.expires_at,
        },
    )


class BlobRoutes(RelayCore):
    def _upload_blob(self, call: Call) -> Response:
        """A new blob ID stores the body; an existing one is a retry, never an edit."""
        blob_id = safe_id(call.params["blobId"], "blob ID")
        query = call.request.query
        policy = query.get("policy", "retain")
        if policy not in POLICIES:
            raise invalid(f"query policy must be one of {', '.join(POLICIES)}")
        expires_at = None
        if policy == "ephemeral":
            if "ttl" not in query:
                raise invalid("an ephemeral blob needs ttl (milliseconds)")
            expires_at = call.now + query_int(query, "ttl", 0, 1, self.settings.max_blob_ttl_ms)
        elif "ttl" in query:
            raise invalid("ttl applies to ephemeral blobs only")
        nonce = call.request.headers.get("x-blob-nonce")
        nonce = b64url(nonce, "header x-blob-nonce", MAX_NONCE_CHARS)
        stored = call.graph.blobs.get(blob_id)
        if stored is not None:
            return _answer(stored, duplicate=True)
        data: bytes = call.body  # type: ignore[assignment]
        if call.graph.blob_bytes + len(data) > self.settings.quota_blob_bytes:
            raise Refused(
                413, "quota-blob-bytes", f"the graph's blobs would exceed "
                f"{self.settings.quota_blob_bytes} bytes",
            )  # fmt: skip
        blob = Blob(
            data, nonce, policy, expires_at, (call.member,) if policy == "transport" else ()
        )
        graph = self._store_graph(call)
        call.tx.set(graph.blobs, blob_id, blob)
        call.tx.assign(graph, "blob_bytes", graph.blob_bytes + len(data))
        call.tx.poke(graph.key)
        return _answer(blob, duplicate=False)

    def _find_blob(self, call: Call) -> tuple[str, Blob]:
        """The path's blob; a missing or expired one is ``404 not-found``."""
        blob_id = safe_id(call.params["blobId"], "blob ID")
        blob = call.graph.blobs.get(blob_id)
        if blob is None or blob.expired(call.now):
            raise Refused(404, "not-found", f"no blob {blob_id} in this graph")
        return blob_id, blob

    def _download_blob(self, call: Call) -> Response:
        _, blob = self._find_blob(call)
        headers = {"content-type": "application/octet-stream", "x-blob-nonce": blob.nonce}
        return Response(200, headers, blob.data)

    def _ack_blob(self, call: Call) -> Response:
        """Record the member's receipt of a transport blob; forget it once all have one."""
        blob_id, blob = self._find_blob(call)
        if blob.policy != "transport":
            return json_response(200, {"ok": True, "forgotten": False})
        graph = call.graph
        if call.member not in blob.receipts:
            blob = attrs.evolve(blob, receipts=(*blob.receipts, call.member))
            call.tx.set(graph.blobs, blob_id, blob)
            call.tx.poke(graph.key)
        forgotten = self._delivered(graph.key, blob)
        if forgotten:
            self._forget(call.tx, graph, blob_id, "acked")
        return json_response(200, {"ok": True, "forgotten": forgotten})

    def _delete_blob(self, call: Call) -> Response:
        blob_id, _ = self._find_blob(call)
        self._forget(call.tx, call.graph, blob_id, "deleted")
        return json_response(200, {"ok": True})

    def _delivered(self, key: str, blob: Blob) -> bool:
        """Every current member (asked now, not at upload) holds a receipt."""
        return set(self._current_members(key)) <= set(blob.receipts)

    def _forget(self, tx: Transaction, graph: Graph, blob_id: str, reason: str) -> None:
        blob = graph.blobs[blob_id]
        tx.delete(graph.blobs, blob_id)
        tx.assign(graph, "blob_bytes", graph.blob_bytes - len(blob.data))
        tx.emit(BlobForgotten(graph.key, blob_id, reason, blob.receipts))
        tx.poke(graph.key)

    def sweep(self) -> int:
        """Forget expired ephemeral blobs and fully acked transport blobs; return how many."""
        tx = Transaction(self.clock())
        forgotten = self._atomically(tx, lambda: self._sweep(tx))
        self._deliver(tx.events())
        if self.settings.sweep_interval_ms:
            self.next_sweep_at = tx.now + self.settings.sweep_interval_ms
        return forgotten

    def sweep_if_due(self) -> int | None:
        """Run the built-in sweeper if ``next_sweep_at`` has come; ``None`` when not due."""
        if self.next_sweep_at is None or self.clock() < self.next_sweep_at:
            return None
        return self.sweep()

    def _sweep(self, tx: Transaction) -> int:
        forgotten = 0
        for key in sorted(self.state.graphs):
            graph = self.state.graphs[key]
            for blob_id in sorted(graph.blobs):
                blob = graph.blobs[blob_id]
                if blob.expired(tx.now):
                    self._forget(tx, graph, blob_id, "expired")
                elif blob.policy == "transport" and self._delivered(key, blob):
                    self._forget(tx, graph, blob_id, "acked")
                else:
                    continue
                forgotten += 1
        return forgotten
