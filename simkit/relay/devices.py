"""Device routes: set-once registration, the member's own list, revocation (spec: Devices)."""

import attrs

from simkit.protocol.http import Refused, Response, json_response
from simkit.relay.core import Call
from simkit.relay.events import DeviceRegister, DeviceRevoke
from simkit.relay.keys import KeyRoutes
from simkit.relay.schema import b64url, fields, public_jwk, safe_id, show, text
from simkit.relay.state import RegisteredDevice

_THUMBPRINT_MEMBERS = ("crv", "kty", "x", "y")  # RFC 7638: what makes two JWKs one key


def _same_key(a: dict, b: dict) -> bool:
    return all(a[name] == b[name] for name in _THUMBPRINT_MEMBERS)


def _caller_graph_id(key: str, member: str) -> str:
    """A storage key as ``member`` addresses it: ``u``, ``d:<other>`` or ``g:<group>``."""
    kind, _, rest = key.partition(":")
    if kind == "u":
        return "u"
    if kind == "d":
        a, b = rest.split(":")
        return f"d:{b if a == member else a}"
    return key


class DeviceRoutes(KeyRoutes):
    """Revocation changes key state, hence the dependency on ``KeyRoutes``."""

    def _register_device(self, call: Call) -> Response:
        """PUT /devices/:id: the one route open to an unregistered device; set-once keys."""
        device_id = call.params["deviceId"]
        if device_id != call.device:
            raise Refused(
                403, "device-mismatch", "a device registers itself: the path must name the "
                f"credential's device {call.device}, not {show(device_id)}",
            )  # fmt: skip
        body = fields(call.body, "body", ("pubJwk", "sigJwk"), ("selfSig", "label"))
        pub, sig = public_jwk(body["pubJwk"], "pubJwk"), public_jwk(body["sigJwk"], "sigJwk")
        self_sig = b64url(body["selfSig"], "selfSig", 512) if "selfSig" in body else None
        label = text(body["label"], "label", 256) if "label" in body else None
        stored = self.state.devices.get(device_id)
        if stored is None:
            device = RegisteredDevice(device_id, call.member, pub, sig, self_sig, label, call.now)
            self.state.add_device(call.tx, device)
            call.tx.emit(DeviceRegister(call.member, device_id))
        elif not (
            stored.member_id == call.member
            and _same_key(stored.pub_jwk, pub)
            and _same_key(stored.sig_jwk, sig)
        ):
            raise Refused(
                409, "device-key-conflict",
                f"device {device_id} is bound to other keys; register under a new device ID",
            )  # fmt: skip
        elif stored.revoked_at is not None:
            raise Refused(403, "device-revoked", f"device {device_id} is revoked for good")
        return json_response(200, {"ok": True, "deviceId": device_id, "fresh": stored is None})

    def _list_devices(self, call: Call) -> Response:
        """The caller's own member's devices, revoked ones included."""
        devices = [device.data() for device in self.state.devices_of(call.member)]
        return json_response(200, {"devices": devices})

    def _revoke_device(self, call: Call) -> Response:
        """Any active device of a member may revoke any device of that same member."""
        target_id = safe_id(call.params["deviceId"], "device ID")
        target = self.state.devices.get(target_id)
        if target is None or target.member_id != call.member:
            raise Refused(404, "unknown-device", f"{call.member} has no device {target_id}")
        if target.revoked_at is not None:
            return json_response(200, {"ok": True, "rotationOwedFor": []})
        call.tx.set(self.state.devices, target_id, attrs.evolve(target, revoked_at=call.now))
        owed = sorted(self._owe_rotation(call.tx, target_id))
        call.tx.emit(DeviceRevoke(call.member, target_id, call.device, tuple(owed)))
        graph_ids = sorted(_caller_graph_id(key, call.member) for key in owed)
        return json_response(200, {"ok": True, "rotationOwedFor": graph_ids})
