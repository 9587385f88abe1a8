"""Blobs: raw ciphertext under retention policies, and the sweeper (spec: Blobs)."""

from simkit.model import schema
from simkit.model.answer import Expected, Refuse, invalid, ok
from simkit.model.state import Call, Graph

POLICIES = ("retain", "transport", "ephemeral")


def upload(model, call: Call) -> Expected:
    """A new blob ID stores the body; an existing one is a retry, never an edit."""
    rule = "blobs: upload"
    blob_id, query = call.params["blobId"], call.query
    policy = query.get("policy", "retain")
    if not schema.safe_id(blob_id) or policy not in POLICIES:
        raise invalid(rule, "blob ID and policy")
    expires_at = None
    if policy == "ephemeral":
        if not schema.decimal(query.get("ttl"), 1, model.settings.max_blob_ttl_ms):
            raise invalid((rule, "limit: ephemeral blob ttl"), "ephemeral ttl is 1 ms to 30 days")
        expires_at = call.now + int(query["ttl"])
    elif "ttl" in query:
        raise invalid(rule, "ttl applies to ephemeral blobs only")
    nonce = call.request.headers.get("x-blob-nonce")
    if not schema.canonical_b64(nonce, 64):
        raise invalid(rule, "x-blob-nonce is a base64url nonce")
    graph = model.graph(call.key)
    stored = graph.blobs.get(blob_id)
    if stored is not None:
        return ok(("blobs: duplicate", "blob states"), _answer(stored, True), "a retry")
    if graph.blob_bytes() + len(call.body) > model.settings.quota_blob_bytes:
        raise Refuse(413, "quota-blob-bytes", rule, "blob-byte quota")
    blob = {
        "data": call.body,
        "nonce": nonce,
        "policy": policy,
        "expiresAt": expires_at,
        "receipts": {call.member} if policy == "transport" else set(),  # uploader counts
    }
    model.written_graph(call.key).blobs[blob_id] = blob
    return ok((rule, "blob states"), _answer(blob, False), f"(new) -> {policy}")


def _answer(blob: dict, duplicate: bool) -> dict:
    return {
        "ok": True,
        "duplicate": duplicate,
        "size": len(blob["data"]),
        "policy": blob["policy"],
        "expiresAt": blob["expiresAt"],
    }


def _find(model, call: Call, rule) -> tuple[Graph, str, dict]:
    """The path's blob; missing or past its expiry (swept or not) is 404."""
    blob_id = call.params["blobId"]
    if not schema.safe_id(blob_id):
        raise invalid(rule, "blob ID")
    graph = model.graph(call.key)
    blob = graph.blobs.get(blob_id)
    if blob is None or _expired(blob, call.now):
        raise Refuse(404, "not-found", (rule, "blob states"), "no such blob (or expired)")
    return graph, blob_id, blob


def _expired(blob: dict, now: int) -> bool:
    return blob["expiresAt"] is not None and blob["expiresAt"] <= now


def download(model, call: Call) -> Expected:
    rule = "blobs: download"
    _, _, blob = _find(model, call, rule)
    headers = {"content-type": "application/octet-stream", "x-blob-nonce": blob["nonce"]}
    return Expected(200, rule, raw=blob["data"], headers=headers)


def ack(model, call: Call) -> Expected:
    """A member's receipt; a transport blob is forgotten once every current member acked."""
    rule = "blobs: ack"
    graph, blob_id, blob = _find(model, call, rule)
    if blob["policy"] != "transport":
        return ok(rule, {"ok": True, "forgotten": False}, "not a transport blob")
    if call.member not in blob["receipts"]:
        model.written_graph(call.key)
        blob["receipts"].add(call.member)
    forgotten = _delivered(model, graph, blob)
    if forgotten:
        del model.written_graph(call.key).blobs[blob_id]
        return ok((rule, "blob states"), {"ok": True, "forgotten": True},
                  "every current member acked -> forgotten")  # fmt: skip
    return ok(rule, {"ok": True, "forgotten": False})


def _delivered(model, graph: Graph, blob: dict) -> bool:
    return set(model.current_members(graph.key)) <= blob["receipts"]


def delete(model, call: Call) -> Expected:
    _, blob_id, _ = _find(model, call, "blobs: delete")
    del model.written_graph(call.key).blobs[blob_id]
    return ok(("blobs: delete", "blob states"), {"ok": True}, "-> deleted")


def sweep(model, now: int) -> int:
    """Forget ephemeral blobs past their ttl and transport blobs every current member acked."""
    forgotten = 0
    for graph in model.graphs.values():
        for blob_id, blob in list(graph.blobs.items()):
            if _expired(blob, now) or (
                blob["policy"] == "transport" and _delivered(model, graph, blob)
            ):
                del model.written_graph(graph.key).blobs[blob_id]
                forgotten += 1
    return forgotten
