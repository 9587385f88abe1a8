"""Key routes: wrapped graph keys per device and epoch, the roster, key gaps (spec: Keys).

The relay never sees a graph key; it only checks that a new epoch reaches every
eligible device (or names it in ``excluding``) and that grants never overwrite.
"""

from simkit.protocol.http import Refused, Response, invalid, json_list_response, json_response
from simkit.relay.core import Call, RelayCore
from simkit.relay.events import GraphRotate, KeysDiscard, KeysGrant
from simkit.relay.schema import (
    MAX_SAFE_INTEGER,
    array,
    decimal,
    distinct,
    fields,
    integer,
    safe_id,
    text,
)
from simkit.relay.state import Graph
from simkit.relay.txn import Transaction

MAX_WRAPS = 10_000  # devices named in one key put; the body limit bounds it anyway
MAX_WRAPPED_CHARS = 4_096


class KeyRoutes(RelayCore):
    def _get_keys(self, call: Call) -> Response:
        graph = call.graph
        wraps = [
            {"epoch": epoch, "wrapped": holders[call.device]}
            for epoch, holders in sorted(graph.wraps.items())
            if call.device in holders
        ]
        return json_response(
            200,
            {
                "latestEpoch": graph.latest_epoch,
                "rotationRequired": graph.rotation_required,
                "wraps": wraps,
            },
        )

    def _roster(self, call: Call) -> Response:
        """Devices of current members and of everyone who ever pushed, revoked included."""
        members = sorted({*self._current_members(call.graph.key), *call.graph.pushers})
        devices = [d.wire_text() for m in members for d in self.state.devices_of(m)]
        return json_list_response(200, "devices", devices, {})

    def _keygaps(self, call: Call) -> Response:
        """Eligible devices lacking some epoch, with keys from the roster, not the asker."""
        graph = call.graph
        gaps = []
        for device in self.eligible(graph.key):
            epochs = [
                epoch
                for epoch in range(1, graph.latest_epoch + 1)
                if device.device_id not in graph.wraps.get(epoch, {})
            ]
            if epochs:
                entry = device.wire()
                del entry["revokedAt"]
                gaps.append({**entry, "epochs": epochs})
        return json_response(200, {"latestEpoch": graph.latest_epoch, "gaps": gaps})

    def _put_keys(self, call: Call) -> Response:
        body = fields(call.body, "body", ("epoch", "wraps"), ("excluding",))
        epoch = integer(body["epoch"], "epoch", lo=1)
        wraps: dict[str, str] = {}
        for i, item in enumerate(array(body["wraps"], "wraps", MAX_WRAPS)):
            wrap = fields(item, f"wraps[{i}]", ("deviceId", "wrapped"))
            device_id = safe_id(wrap["deviceId"], f"wraps[{i}].deviceId")
            if device_id in wraps:
                raise invalid(f"wraps names device {device_id} more than once")
            wraps[device_id] = text(wrap["wrapped"], f"wraps[{i}].wrapped", MAX_WRAPPED_CHARS)
        excluding = [
            safe_id(device_id, f"excluding[{i}]")
            for i, device_id in enumerate(array(body.get("excluding", []), "excluding", MAX_WRAPS))
        ]
        distinct(excluding, "excluding")
        if epoch > call.graph.latest_epoch:
            self._rotate(call, epoch, wraps, excluding)
        else:
            self._grant(call, epoch, wraps)
        return json_response(200, {"ok": True, "latestEpoch": call.graph.latest_epoch})

    def _rotate(self, call: Call, epoch: int, wraps: dict[str, str], excluding: list[str]) -> None:
        """Mint epoch latest+1, checking the spec's rotation rules 1-4 and 6 in order."""
        graph = call.graph
        if epoch != graph.latest_epoch + 1:
            raise Refused(
                409, "epoch-gap", f"epoch {epoch} is not latest + 1 ({graph.latest_epoch + 1})",
                latestEpoch=graph.latest_epoch,
            )  # fmt: skip
        self._require_capability(call, "rotate")
        eligible = [device.device_id for device in self.eligible(graph.key)]
        eligible_set, excluded = set(eligible), set(excluding)
        missing = [d for d in eligible if d not in wraps and d not in excluded]
        if missing:
            raise Refused(
                400, "incomplete-rotation",
                f"the new epoch reaches neither wraps nor excluding for {len(missing)} device(s)",
                missing=missing,
            )  # fmt: skip
        bad = [d for d in excluding if d in wraps or d not in eligible_set]
        if bad:
            raise Refused(
                400, "invalid-exclusion", "an excluded device is also wrapped or is not eligible",
                devices=bad,
            )  # fmt: skip
        self._require_member_devices(wraps, eligible_set)
        graph = self._store_graph(call)
        call.tx.set(graph.wraps, epoch, dict(wraps))
        call.tx.assign(graph, "latest_epoch", epoch)
        call.tx.assign(graph, "rotation_required", False)
        call.tx.emit(GraphRotate(graph.key, epoch, call.member, call.device, tuple(excluding)))
        call.tx.poke(graph.key)

    def _grant(self, call: Call, epoch: int, wraps: dict[str, str]) -> None:
        """Fill gaps in an existing epoch; needs no ``rotate`` and never overwrites."""
        graph = call.graph
        self._require_member_devices(wraps, {d.device_id for d in self.eligible(graph.key)})
        granted = [
            device_id
            for device_id, wrapped in wraps.items()
            if self._grant_wrap(call.tx, graph, epoch, device_id, wrapped)
        ]
        if granted:
            call.tx.emit(KeysGrant(graph.key, epoch, call.member, call.device, tuple(granted)))
            call.tx.poke(graph.key)

    def _grant_wrap(
        self, tx: Transaction, graph: Graph, epoch: int, device_id: str, wrapped: str
    ) -> bool:
        """Store one granted wrap unless the device already holds one (variant point)."""
        holders = graph.wraps.get(epoch)
        if holders is None:
            holders = {}
            tx.set(graph.wraps, epoch, holders)
        if device_id in holders:
            return False
        tx.set(holders, device_id, wrapped)
        return True

    @staticmethod
    def _require_member_devices(wraps: dict[str, str], eligible: set[str]) -> None:
        """Rotation rule 6: every wrap addresses an active device of a current member."""
        strangers = [d for d in wraps if d not in eligible]
        if strangers:
            raise Refused(
                400, "not-a-member-device",
                "a wrap addresses a revoked device or a device of a non-member",
                devices=strangers,
            )  # fmt: skip

    def _discard_wrap(self, call: Call) -> Response:
        """DELETE keys/:epoch removes the caller's own wrap and nobody else's."""
        epoch = decimal(call.params["epoch"], "epoch in the path", 1, MAX_SAFE_INTEGER)
        holders = call.graph.wraps.get(epoch, {})
        discarded = call.device in holders
        if discarded:
            call.tx.delete(holders, call.device)
            call.tx.emit(KeysDiscard(call.graph.key, epoch, call.device))
            call.tx.poke(call.graph.key)
        return json_response(200, {"ok": True, "discarded": discarded})

    def _owe_rotation(self, tx: Transaction, device_id: str) -> list[str]:
        """Drop a revoked device's wraps everywhere; flag and return the graphs it held."""
        owed = []
        for graph in self.state.graphs.values():
            held = [holders for holders in graph.wraps.values() if device_id in holders]
            for holders in held:
                tx.delete(holders, device_id)
            if held:
                tx.assign(graph, "rotation_required", True)
                tx.poke(graph.key)
                owed.append(graph.key)
        return owed
