"""The model's store against the relay's: the state change the spec requires, or none.

The model renders itself in the relay's snapshot schema (simkit/relay/state.py,
``RelayState.to_data``) and the two are compared part by part, each difference
named after the rule that decides that part.
"""

import copy
import json

from simkit.model.answer import Mismatch, first_difference
from simkit.model.relay import RelayModel
from simkit.model.state import Graph
from simkit.protocol.b64 import b64url_decode, b64url_encode

# A graph's parts in the snapshot: the rules that decide each, and what they say of it.
PARTS = {
    "seq": (("push: counter",), "the per-graph counter (whole range reserved up front)"),
    "records": (
        ("push rule 2", "push rule 4", "push: metadata"),
        "the stored row is the last-write-wins winner, stored as given",
    ),
    "log": (("log: same transaction",), "one entry per accepted write, never rewritten"),
    "pushers": (("keys: roster",), "members who ever pushed"),
    "latestEpoch": (("epoch states",), "graph key epoch"),
    "rotationRequired": (
        ("epoch states", "devices: revoke"),
        "rotationRequired (set by revoke, cleared by a new epoch)",
    ),
    "wraps": (
        ("epoch states", "keys: grant", "devices: revoke", "keys: discard"),
        "wraps (granted never overwritten, revoked dropped, discarded removed)",
    ),
    "blobs": (("blob states",), "blob states (upload, ack, delete, sweep)"),
}
DEVICES = (("device states", "device record"), "devices (set-once keys, revokedAt)")
CREATED = (("push rule 4", "endpoints: one transaction"), "a graph is created by a write")
QUOTAS = (("push: quotas kept incrementally",), "quotas are kept incrementally")


def _found(part: tuple[tuple[str, ...], str], text: str) -> Mismatch:
    rules, what = part
    return Mismatch(f"store: {', '.join(rules)} ({what}): {text}", rules)


def store_data(model: RelayModel) -> dict:
    """The model's store as ``Relay.snapshot()`` writes the relay's (schema 1)."""
    return {
        "schema": 1,
        "devices": [model.devices[d] for d in sorted(model.devices)],
        "graphs": [_graph_data(model.graphs[key]) for key in sorted(model.graphs)],
    }


def _graph_data(graph: Graph) -> dict:
    return {
        "key": graph.key,
        "seq": graph.counter,
        "latestEpoch": graph.latest_epoch,
        "rotationRequired": graph.rotation_required,
        "pushers": sorted(graph.pushers),
        "records": [graph.rows[r] for r in sorted(graph.rows)],
        "log": graph.log,
        "wraps": [
            [epoch, device, holders[device]]
            for epoch, holders in sorted(graph.wraps.items())
            for device in sorted(holders)
        ],
        "blobs": [
            {
                "blobId": blob_id,
                "policy": blob["policy"],
                "expiresAt": blob["expiresAt"],
                "nonce": blob["nonce"],
                "receipts": sorted(blob["receipts"]),
                "data": b64url_encode(blob["data"]),
            }
            for blob_id, blob in sorted(graph.blobs.items())
        ],
    }


def adopt(model: RelayModel, graph: dict | None, snapshot: dict | None) -> None:
    """Take the relay's store as the model's: the graph the last request touched
    (``graph``: the relay's, in its snapshot form; None: it has none), or, for a
    request that named none, the whole ``snapshot``, devices included. How a model
    follows a change it was told of (docs/variants.md): the changed relay's outcome
    becomes the history later answers are judged against. Raises ``KeyError``,
    ``TypeError`` or ``ValueError`` on a store it cannot read."""
    key = model.touched
    if key is None:
        model.devices = {d["deviceId"]: copy.deepcopy(d) for d in snapshot["devices"]}
        model.graphs = {g["key"]: _graph_of(g) for g in snapshot["graphs"]}
    elif graph is None:
        model.graphs.pop(key, None)
    else:
        model.graphs[key] = _graph_of(graph)


def _graph_of(data: dict) -> Graph:
    """The inverse of ``_graph_data``."""
    data = copy.deepcopy(data)
    wraps: dict[int, dict[str, str]] = {}
    for epoch, device, wrapped in data["wraps"]:
        wraps.setdefault(epoch, {})[device] = wrapped
    blobs = {
        b["blobId"]: {
            "policy": b["policy"], "expiresAt": b["expiresAt"], "nonce": b["nonce"],
            "receipts": set(b["receipts"]), "data": b64url_decode(b["data"]),
        }
        for b in data["blobs"]
    }  # fmt: skip
    return Graph(
        data["key"], int(data["seq"]), int(data["latestEpoch"]), bool(data["rotationRequired"]),
        {row["recordId"]: row for row in data["records"]}, list(data["log"]), wraps,
        set(data["pushers"]), blobs,
    )  # fmt: skip


def store_findings(
    model: RelayModel, snapshot: dict, counters: dict | None = None
) -> list[Mismatch]:
    """Where the relay's snapshot differs from the model's store.

    ``counters``: the relay's incremental quota counters, ``{key: (record_bytes,
    blob_bytes)}`` (``relay_counters``), checked against a recount when given.
    """
    want = store_data(model)
    same_text = _text(want) == _text(snapshot)  # the usual case, decided fast
    findings = [] if same_text else _differences(want, snapshot)
    for key, counted in sorted((counters or {}).items()):
        graph = model.graphs.get(key)
        recount = (graph.row_bytes(), graph.blob_bytes()) if graph else (0, 0)
        if counted != recount:
            findings.append(_found(QUOTAS,
                f"graph {key} counts {counted[0]} record and {counted[1]} blob bytes, a "
                f"recount gives {recount[0]} and {recount[1]}"
            ))  # fmt: skip
    return findings


def _differences(want: dict, snapshot: dict) -> list[Mismatch]:
    """Each part of the store that differs, named after the rule that decides it."""
    findings = []
    wanted_devices = {d["deviceId"]: d for d in want["devices"]}
    got_devices = {d.get("deviceId"): d for d in snapshot.get("devices", [])}
    for device in sorted(wanted_devices.keys() | got_devices.keys(), key=str):
        found = first_difference(
            f"device {device}", wanted_devices.get(device), got_devices.get(device)
        )
        if found:
            findings.append(_found(DEVICES, found))
    wanted = {g["key"]: g for g in want["graphs"]}
    got = {g.get("key"): g for g in snapshot.get("graphs", [])}
    for key in sorted(wanted.keys() | got.keys(), key=str):
        findings += _graph_differences(key, wanted.get(key), got.get(key))
    return findings


def graph_findings(model: RelayModel, key: str, data: dict | None) -> list[Mismatch]:
    """One graph of the model's store against the relay's (``data``: that graph as
    the relay's snapshot writes it; None when the relay has no such graph)."""
    graph = model.graphs.get(key)
    want = None if graph is None else _graph_data(graph)
    if want is not None and data is not None and _text(want) == _text(data):
        return []
    return _graph_differences(key, want, data)


def _graph_differences(key: str, want: dict | None, got: dict | None) -> list[Mismatch]:
    if want is None and got is None:
        return []
    if want is None or got is None:
        state = "missing from" if got is None else "unexpected in"
        return [_found(CREATED, f"graph {key} {state} the relay's store")]
    findings = []
    for part, decided in PARTS.items():
        found = first_difference(f"graph {key} {part}", want[part], got.get(part))
        if found:
            findings.append(_found(decided, found))
    return findings


def _text(data: object) -> str:
    """Equal texts mean equal stores (``true`` is not ``1`` here, as in JSON)."""
    return json.dumps(data, sort_keys=True)


def relay_counters(relay: object) -> dict:
    """``{key: (record_bytes, blob_bytes)}`` of a ``simkit.relay.Relay`` (read, not imported)."""
    graphs = getattr(getattr(relay, "state", None), "graphs", {})
    return {key: (g.record_bytes, g.blob_bytes) for key, g in graphs.items()}
