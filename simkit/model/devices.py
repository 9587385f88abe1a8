"""Devices: set-once registration, the member's own list, revocation (spec: Devices)."""

from simkit.model import schema
from simkit.model.answer import Expected, Refuse, invalid, ok
from simkit.model.state import Call

THUMBPRINT = ("crv", "kty", "x", "y")  # RFC 7638: the members that make two JWKs one key


def register(model, call: Call) -> Expected:
    rule = "devices: PUT"
    if call.params["deviceId"] != call.device:
        raise Refuse(403, "device-mismatch", rule, "a device registers itself")
    if not schema.device_body(call.body):
        raise invalid((rule, "pipeline step 7"), "body schema")
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
        return ok((rule, "device states"), fresh(call.device, True), "unregistered -> registered")
    same_keys = all(
        stored[jwk][name] == body[jwk][name] for jwk in ("pubJwk", "sigJwk") for name in THUMBPRINT
    )
    if stored["memberId"] != call.member or not same_keys:
        raise Refuse(409, "device-key-conflict", (rule, "device states"), "keys are set-once")
    if stored["revokedAt"] is not None:
        raise Refuse(
            403, "device-revoked", (rule, "device states"), "a revoked device stays revoked"
        )
    return ok((rule, "device states"), fresh(call.device, False), "same keys (idempotent)")


def fresh(device: str, is_fresh: bool) -> dict:
    return {"ok": True, "deviceId": device, "fresh": is_fresh}


def list_devices(model, call: Call) -> Expected:
    devices = model.devices_of(call.member)
    return ok("devices: GET", {"devices": devices}, "the member's own")


def revoke(model, call: Call) -> Expected:
    """Drops the device's wraps, marks it revoked, flags every graph it held keys for."""
    rule = "devices: revoke"
    target = call.params["deviceId"]
    if not schema.safe_id(target):
        raise invalid(rule, "device ID")
    entry = model.devices.get(target)
    if entry is None or entry["memberId"] != call.member:
        raise Refuse(404, "unknown-device", rule, "not a device of the caller's member")
    if entry["revokedAt"] is not None:
        return ok(rule, {"ok": True, "rotationOwedFor": []}, "already revoked")
    entry["revokedAt"] = call.now
    owed = []
    for key, graph in model.graphs.items():
        held = [holders for holders in graph.wraps.values() if target in holders]
        for holders in held:
            del holders[target]
        if held:
            graph.rotation_required = True
            owed.append(as_addressed(key, call.member))
    answer = {"ok": True, "rotationOwedFor": sorted(owed)}
    return ok((rule, "device states", "epoch states"), answer, "registered -> revoked")


def as_addressed(key: str, member: str) -> str:
    """A storage key as ``member`` sends it: ``u``, ``d:<other>`` or ``g:<group>``."""
    kind, _, rest = key.partition(":")
    if kind == "u":
        return "u"
    if kind == "d":
        a, b = rest.split(":")
        return f"d:{b if a == member else a}"
    return key
