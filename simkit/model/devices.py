"""Devices: set-once registration, the member's own list, revocation (spec: Devices)."""

from simkit.model import schema
from simkit.model.answer import Expected, Refuse, invalid, ok
from simkit.model.state import Call

THUMBPRINT = ("crv", "kty", "x", "y")  # RFC 7638: the members that make two JWKs one key


def register(model, call: Call) -> Expected:
    rule = "devices: PUT /devices/:deviceId"
    if call.params["deviceId"] != call.device:
        raise Refuse(403, "device-mismatch", f"{rule}: a device registers itself")
    if not schema.device_body(call.body):
        raise invalid(f"{rule}: body schema")
    body, stored = call.body, model.devices.get(call.device)
    if stored is None:
        model.devices[call.device] = {
            "deviceId": call.device,
            "memberId": call.member,
            "pubJwk": body["pubJwk"],
            "sigJwk": body["sigJwk"],
            "selfSig": body.get("selfSig"),
            "revokedAt": None,
            "label": body.get("label"),
            "registeredAt": call.now,
        }
        return ok(f"{rule}: unregistered -> registered", fresh(call.device, True))
    same_keys = all(
        stored[jwk][name] == body[jwk][name] for jwk in ("pubJwk", "sigJwk") for name in THUMBPRINT
    )
    if stored["memberId"] != call.member or not same_keys:
        raise Refuse(409, "device-key-conflict", f"{rule}: keys are set-once")
    if stored["revokedAt"] is not None:
        raise Refuse(403, "device-revoked", f"{rule}: a revoked device stays revoked")
    return ok(f"{rule}: registered, same keys (idempotent)", fresh(call.device, False))


def fresh(device: str, is_fresh: bool) -> dict:
    return {"ok": True, "deviceId": device, "fresh": is_fresh}


def list_devices(model, call: Call) -> Expected:
    return ok(
        "devices: GET /devices (the member's own)", {"devices": model.devices_of(call.member)}
    )


def revoke(model, call: Call) -> Expected:
    """Drops the device's wraps, marks it revoked, flags every graph it held keys for."""
    rule = "devices: revoke"
    target = call.params["deviceId"]
    if not schema.safe_id(target):
        raise invalid(f"{rule}: device ID")
    entry = model.devices.get(target)
    if entry is None or entry["memberId"] != call.member:
        raise Refuse(404, "unknown-device", f"{rule}: not a device of the caller's member")
    if entry["revokedAt"] is not None:
        return ok(f"{rule}: already revoked", {"ok": True, "rotationOwedFor": []})
    entry["revokedAt"] = call.now
    owed = []
    for key, graph in model.graphs.items():
        held = [holders for holders in graph.wraps.values() if target in holders]
        for holders in held:
            del holders[target]
        if held:
            graph.rotation_required = True
            owed.append(as_addressed(key, call.member))
    return ok(f"{rule}: registered -> revoked", {"ok": True, "rotationOwedFor": sorted(owed)})


def as_addressed(key: str, member: str) -> str:
    """A storage key as ``member`` sends it: ``u``, ``d:<other>`` or ``g:<group>``."""
    kind, _, rest = key.partition(":")
    if kind == "u":
        return "u"
    if kind == "d":
        a, b = rest.split(":")
        return f"d:{b if a == member else a}"
    return key
