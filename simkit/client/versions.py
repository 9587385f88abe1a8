"""Clients of the releases before and after this one, as Versioning rule 3 describes
them, so that a world can run a mixed fleet (docs/releases.md)."""

from simkit.client.device import Device

NEWER_MEMBER = "x-since"
"""The record member the next release adds: optional, unknown to this release."""


class OlderClient(Device):
    """The previous release: registers without ``selfSig`` (optional on registration,
    absent on devices registered before it existed), so holders never approve it by
    possession."""

    def registration(self, label: str | None = None, self_sig: bool = True) -> dict:
        return super().registration(label, self_sig=False)


class NewerClient(Device):
    """The next release: every record it writes carries an optional member this
    release does not know (signed, then ignored by every receiver; it stores the parsed
    record like everyone), and every JSON request body an optional field too (a relay
    drops what it does not know, as an older relay drops ``excluding``)."""

    def as_sealed(self, record: dict) -> dict:
        return {**record, NEWER_MEMBER: {"version": "0.2.0"}}

    async def request(self, method, path, body=None, query=None, raw=None, headers=None):
        if isinstance(body, dict):
            body = {**body, "clientVersion": "0.2.0"}
        return await super().request(method, path, body, query, raw, headers)
