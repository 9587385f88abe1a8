"""Planted breaks for the invariants no other test made fire (issue 39): each a client
a real slip could produce, caught by the invariant named in test_planted_breaks.py."""

import trio

from simkit.client import Device
from simkit.sim.variant import Variant


class AsksFortyOne(Device):
    async def request(self, method, path, *args, **kwargs):  # a retry loop gone wrong
        if method == "GET":
            async with trio.open_nursery() as nursery:
                for _ in range(40):
                    nursery.start_soon(lambda: super(AsksFortyOne, self).request(method, path))
        return await super().request(method, path, *args, **kwargs)


class SilentAlarm(Device):
    def emit(self, kind, graph_id, **fields):  # the alarm is raised but nobody hears it
        if kind != "log.alarm":
            super().emit(kind, graph_id, **fields)


asks_forty_one = Variant("asks-forty-one", "every GET sent 41 times", device=AsksFortyOne)
silent_alarm = Variant("silent-alarm", "log.alarm never emitted", device=SilentAlarm)


class SpuriousAlarm(Device):
    def emit(self, kind, graph_id, **fields):  # cries wolf after every sync run
        super().emit(kind, graph_id, **fields)
        if kind == "sync.done" and graph_id is not None:
            super().emit("log.alarm", graph_id, reason="spurious")


class DropsItsQueue(Device):
    def write_record(self, graph_id, record_id, body):  # written, never queued
        record = super().write_record(graph_id, record_id, body)
        self.store.delete(f"queue:{self.storage_key(graph_id)}", record_id)
        return record


class SealsAnotherText(Device):
    def as_sealed(self, record):  # the others get another text than the writer keeps
        if record.get("deleted") or "text" not in record.get("data", {}):
            return record
        return {**record, "data": {**record["data"], "text": "another text"}}


spurious_alarm = Variant("spurious-alarm", "alarms after every sync", device=SpuriousAlarm)
drops_its_queue = Variant("drops-its-queue", "writes never queued", device=DropsItsQueue)
seals_another_text = Variant("seals-another-text", "seals a text it does not keep",
                             device=SealsAnotherText)  # fmt: skip


class ApprovesOnSight(Device):
    def remember(self, entry):  # takes a device it sees for one a human approved
        super().remember(entry)
        if entry["deviceId"] != self.device_id and self.pin(entry["deviceId"]) is None:
            self.approve(entry["deviceId"])


approves_on_sight = Variant("approves-on-sight", "approves every device it sees",
                            device=ApprovesOnSight)  # fmt: skip


class AnyBundleVersion(Device):
    async def import_bundle(self, bundle, passphrase):  # reads every bundle as version 1
        await super().import_bundle({**bundle, "v": 1}, passphrase)


any_bundle_version = Variant("any-bundle-version", "imports a bundle of any v",
                             device=AnyBundleVersion)  # fmt: skip


class AnyInviteBoxVersion(Device):
    """Reads an invite's box of any ``v`` as version 1 (an absent optional check)."""

    def accept_invite(self, invite: str, box: dict) -> str:
        return super().accept_invite(invite, {**box, "v": 1} if isinstance(box, dict) else box)


any_invite_box_version = Variant("any-invite-box-version", "opens an invite box of any v",
                                 device=AnyInviteBoxVersion)  # fmt: skip
