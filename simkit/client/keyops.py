"""Keys on the device: fetching and unwrapping, minting epochs (bootstrap, rotate),
granting gaps (linking), revoking. Every wrap to another device goes through the
approval gate (client rule 14).
"""

from simkit.client.approval import APPROVE, CONFLICTED, decide, fingerprint_of
from simkit.client.transport import RelayUnavailable
from simkit.errors import CryptoError
from simkit.protocol.wrap import unwrap_graph_key, wrap_graph_key

MINT_ATTEMPTS = 4  # a roster can change between reading it and posting a new epoch


async def refresh_keys(device, graph_id: str) -> dict | None:
    """GET keys, unwrap what is new, discard what does not open (client rule 12).

    Returns the answer, or None when the relay refused (the caller carries on).
    """
    response = await device.request("GET", f"/graphs/{graph_id}/keys")
    if response.status != 200:
        device.last_error = f"GET keys {graph_id}: {response.status}"
        return None
    answer = response.json()
    ring = device.keyring(graph_id)
    for wrap in answer["wraps"]:
        epoch = wrap["epoch"]
        if epoch in ring.keys:
            continue
        try:
            key = unwrap_graph_key(wrap["wrapped"], device.keys.wrap_key)
        except CryptoError as exc:
            await device.request("DELETE", f"/graphs/{graph_id}/keys/{epoch}")
            device.emit(
                "keys.unopenable", graph_id, epoch=epoch, latest=answer["latestEpoch"],
                detail=str(exc),
            )  # fmt: skip
            continue
        device.adopt_key(graph_id, epoch, key)
        ring = device.keyring(graph_id)
    device.note_epoch(graph_id, answer["latestEpoch"])
    meta = device.store.get("graphs", graph_id)
    if answer.get("rotationRequired") and "rotate" not in meta:
        device.store.put("graphs", graph_id, {**meta, "rotate": device.clock.now_ms()})
    elif not answer.get("rotationRequired") and "rotate" in meta:
        kept = {k: v for k, v in meta.items() if k not in ("rotate", "refused")}
        device.store.put("graphs", graph_id, kept)
    device.store.commit()
    return answer


async def honour_rotation(device, graph_id: str) -> bool:
    """Rotate a graph flagged ``rotationRequired`` when it is this device's turn
    (docs/client.md, "Who rotates"): the flag has stood ``rotate_after_s`` times one
    plus this device's rank among the roster's active devices since it first saw it.
    In ``approve`` mode only a device that approved every current holder of the
    latest key takes a turn: any other would strand a holder (docs/findings.md, F5),
    until every device's turn has passed (F9).
    Returns whether this device rotated."""
    after = device.config.rotate_after_s
    meta = device.store.get("graphs", graph_id) or {}
    flagged = meta.get("rotate")
    if after is None or flagged is None or device.rotation_refused(graph_id):
        return False
    now = device.clock.now_ms()
    if now < flagged:  # the wall clock stepped back: the wait starts again from now
        device.store.put("graphs", graph_id, {**meta, "rotate": now})
        flagged = now
    current = device.roster(graph_id) or await roster(device, graph_id)
    if current is None:
        return False
    active = sorted(d for d, e in current.items() if e["revokedAt"] is None)
    rank = active.index(device.device_id) if device.device_id in active else len(active)
    waited_ms = now - flagged
    if not 0 <= after * 1000 * (1 + rank) <= waited_ms:
        return False
    behind, approve = device.behind(graph_id), device.config.approval_mode == APPROVE
    if behind or approve:
        lacking = await _lacking_latest(device, graph_id)
        if lacking is None:
            return False
        if behind and not set(active) <= lacking:
            return False  # a holder of the latest key will grant it first
        # Last resort, once every device's turn has passed: rotate, excluding the holders
        # this device never approved (their approvers grant them). The roster keeps a
        # departed member's devices, which keygaps never names, so they look like holders
        # nobody approved and would block every turn (docs/findings.md, F9).
        last_resort = waited_ms >= after * 1000 * (1 + len(active))
        if approve and not last_resort and not _approved_every_holder(device, current, lacking):
            return False
    rotated = await device.rotate(graph_id)
    if rotated:
        device.emit("rotation.honoured", graph_id, waited_ms=waited_ms)
    return rotated


async def _lacking_latest(device, graph_id: str) -> set[str] | None:
    """The devices keygaps names as lacking the graph's latest key; None when it cannot
    be read. A device behind rotates only when every active device lacks it (its
    holders were all revoked: no grant will ever come, docs/client.md "Who rotates")."""
    response = await device.request("GET", f"/graphs/{graph_id}/keygaps")
    if response.status != 200:
        return None
    answer = response.json()
    return {g["deviceId"] for g in answer["gaps"] if answer["latestEpoch"] in g["epochs"]}


def _approved_every_holder(device, current: dict[str, dict], lacking: set[str]) -> bool:
    """Whether the gate lets through every active device holding the latest epoch."""
    return all(
        device_id == device.device_id
        or decide(device.pin(device_id), entry, device.config.approval_mode).wrap
        for device_id, entry in sorted(current.items())
        if entry["revokedAt"] is None and device_id not in lacking
    )


def gate(device, graph_id: str, entry: dict) -> bool:
    """The approval gate: should this device's key triple receive a wrap? Never when
    its keys are malformed (``decide``), the device's own entry included: it is named in
    ``excluding`` instead (F43)."""
    if entry["deviceId"] == device.device_id:
        return fingerprint_of(entry) is not None
    device.remember(entry)
    pin = device.pin(entry["deviceId"])
    decision = decide(pin, entry, device.config.approval_mode)
    if decision.pin == CONFLICTED and pin.state != CONFLICTED:
        device.set_pin(entry["deviceId"], CONFLICTED, pin.via, pin.fingerprint)
    if decision.event:
        device.emit(decision.event, graph_id, device=entry["deviceId"], member=entry["memberId"])
    return decision.wrap


async def roster(device, graph_id: str) -> dict[str, dict] | None:
    """GET devices as {deviceId: entry}; None when it cannot be fetched."""
    response = await device.request("GET", f"/graphs/{graph_id}/devices")
    if response.status != 200:
        device.last_error = f"GET devices {graph_id}: {response.status}"
        return None
    entries = {entry["deviceId"]: entry for entry in response.json()["devices"]}
    device.cache_roster(graph_id, entries)
    return entries


async def roster_or_defer(device, graph_id: str, cursor: int) -> dict[str, dict] | None:
    """Read the roster for a batch; when it cannot be fetched (refused, or out of
    attempts, which also ends the run) the batch waits with the cursor kept, and the
    device says so either way (client rule 6)."""
    try:
        fetched = await roster(device, graph_id)
    except RelayUnavailable:
        device.emit("roster.deferred", graph_id, cursor=cursor)
        raise
    if fetched is None:
        device.emit("roster.deferred", graph_id, cursor=cursor)
    return fetched


async def mint_epoch(device, graph_id: str, epoch: int) -> bool:
    """POST a new epoch wrapped to every active device the gate lets through, the rest
    named in ``excluding``; then read the keys back and adopt what the relay holds
    (client rule 13). Returns whether this device now holds ``epoch``."""
    current = await roster(device, graph_id)
    if current is None:
        return False
    active = [e for _, e in sorted(current.items()) if e["revokedAt"] is None]
    key = device.entropy.token_bytes(32)
    wraps = {}
    excluding = []
    for entry in active:
        if gate(device, graph_id, entry):
            wraps[entry["deviceId"]] = wrap_graph_key(key, entry["pubJwk"], entropy=device.entropy)
        else:
            excluding.append(entry["deviceId"])
    for _ in range(MINT_ATTEMPTS):
        body = {
            "epoch": epoch,
            "wraps": [{"deviceId": d, "wrapped": w} for d, w in wraps.items()],
            "excluding": excluding,
        }
        response = await device.request("POST", f"/graphs/{graph_id}/keys", body)
        if response.status == 200:
            break
        refusal = device.refusal(response)
        code = refusal.get("error")
        if code in ("not-a-member-device", "invalid-exclusion"):
            strangers = set(refusal.get("devices", []))  # departed members' devices
            wraps = {d: w for d, w in wraps.items() if d not in strangers}
            excluding = [d for d in excluding if d not in strangers]
        elif code == "incomplete-rotation" and set(refusal.get("missing", [])) <= set(excluding):
            # every device it names was in ``excluding``: the relay dropped it, as an
            # older relay does (Versioning rule 3); asking again now would change nothing
            device.last_error = f"POST keys {graph_id} epoch {epoch}: the relay ignores excluding"
            meta = device.store.get("graphs", graph_id)
            device.store.put("graphs", graph_id, {**meta, "refused": device.clock.now_ms()})
            device.store.commit()
            return False
        elif code == "incomplete-rotation":
            fresh = await roster(device, graph_id)
            for device_id in refusal.get("missing", []):
                entry = (fresh or {}).get(device_id)
                if entry and gate(device, graph_id, entry):
                    wraps[device_id] = wrap_graph_key(key, entry["pubJwk"], entropy=device.entropy)
                else:
                    excluding.append(device_id)
        else:
            if code == "not-permitted":
                device.emit("policy.readonly", graph_id, need=refusal.get("need"))
            device.last_error = f"POST keys {graph_id} epoch {epoch}: {response.status} {code}"
            await refresh_keys(device, graph_id)
            return False
    else:
        device.last_error = f"POST keys {graph_id} epoch {epoch}: gave up after {MINT_ATTEMPTS}"
        return False
    await refresh_keys(device, graph_id)  # adopt what the relay holds, not what was sent
    meta = device.store.get("graphs", graph_id)
    kept = {k: v for k, v in meta.items() if k not in ("rotate", "refused")}
    device.store.put("graphs", graph_id, kept)
    device.store.commit()
    return epoch in device.keyring(graph_id).keys


async def grant_gaps(device, graph_id: str) -> int:
    """Linking, holder side: wrap each missing epoch this device holds to every gap
    device the gate lets through. Returns the number of wraps posted."""
    response = await device.request("GET", f"/graphs/{graph_id}/keygaps")
    if response.status != 200:
        return 0
    ring = device.keyring(graph_id)
    gaps = sorted(response.json()["gaps"], key=lambda g: g["deviceId"])
    allowed = {g["deviceId"]: gate(device, graph_id, g) for g in gaps}
    posted = 0
    for epoch, key in sorted(ring.keys.items()):
        wraps = [
            {
                "deviceId": g["deviceId"],
                "wrapped": wrap_graph_key(key, g["pubJwk"], entropy=device.entropy),
            }
            for g in gaps
            if epoch in g["epochs"] and allowed[g["deviceId"]]
        ]
        refused = [
            g["deviceId"] for g in gaps if epoch in g["epochs"] and not allowed[g["deviceId"]]
        ]
        if not wraps:
            continue
        body = {"epoch": epoch, "wraps": wraps, "excluding": refused}
        answer = await device.request("POST", f"/graphs/{graph_id}/keys", body)
        if answer.status == 200:
            posted += len(wraps)
    return posted


async def revoke(device, device_id: str) -> list[str]:
    """POST revoke; then rotate each owed graph this device follows (when permitted)."""
    response = await device.request("POST", f"/devices/{device_id}/revoke")
    if response.status != 200:
        refusal = device.refusal(response)
        device.last_error = f"revoke {device_id}: {response.status} {refusal.get('error')}"
        return []
    owed = response.json()["rotationOwedFor"]  # graph IDs as this member sends them
    for graph_id in sorted(owed):
        if device.store.get("graphs", graph_id) is not None:
            await device.rotate(graph_id)
    return owed
