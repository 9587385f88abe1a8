"""A small world for client tests: the real relay in-process, devices on Trio's
virtual clock, and transports that record, fail or crash on purpose."""

import functools
import json

import trio
import trio.testing

from simkit.client import AppConfig, Device
from simkit.errors import TransportError
from simkit.protocol import SeededEntropy, b64url_encode, canonical_json, sign_record
from simkit.protocol.primitives import aes_gcm_seal
from simkit.protocol.records import record_aad
from simkit.relay import Relay, Request, Response, StaticHost

EPOCH_MS = 1_700_000_000_000


def app_config(**changes) -> AppConfig:
    """Client tests check keys and key gaps on every sync run (no 30 s recheck)."""
    return AppConfig(recheck_s=0, **changes)


def virtual(test):
    """Run an async test under Trio's MockClock (autojump: virtual time only)."""

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        trio.run(
            functools.partial(test, *args, **kwargs),
            clock=trio.testing.MockClock(autojump_threshold=0),
        )

    return wrapper


class VirtualClock:
    """Epoch ms from Trio's virtual time, plus an offset this device's clock is off by."""

    def __init__(self, offset_ms: int = 0) -> None:
        self.offset_ms = offset_ms

    def now_ms(self) -> int:
        return EPOCH_MS + int(trio.current_time() * 1000) + self.offset_ms

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


class RecordingTransport:
    """Passes requests to the relay and remembers them (method, path, status)."""

    def __init__(self, relay: Relay, fail=None) -> None:
        self.relay = relay
        self.sent: list[tuple[str, str, int]] = []
        self.requests: list = []
        self.fail = fail  # fail(request) -> Response | Exception | None

    async def send(self, request):
        await trio.sleep(0)
        self.requests.append(request)
        outcome = self.fail(request) if self.fail else None
        if isinstance(outcome, Exception):
            self.sent.append((request.method, request.path, -1))
            raise outcome
        response = outcome if outcome is not None else self.relay.handle(request)
        self.sent.append((request.method, request.path, response.status))
        return response

    def pushed_batches(self) -> list[int]:
        """The number of ops in each push request sent."""
        return [len(json.loads(r.body)["ops"]) for r in self.requests if r.path.endswith("/push")]

    def count(self, method: str, suffix: str) -> int:
        return sum(1 for m, p, _ in self.sent if m == method and p.endswith(suffix))


def unavailable(status: int = 503) -> Response:
    return Response(status, {"content-type": "application/json"}, b'{"error":"unavailable"}')


class World:
    """One relay, a StaticHost, and devices created on demand."""

    def __init__(
        self, members=("alice", "bob", "carol"), groups=None, capabilities=None, seed=1, **settings
    ):
        self.relay_clock = VirtualClock()
        self.host = StaticHost(
            list(members), groups=groups or {"team": list(members)}, capabilities=capabilities
        )
        self.relay = Relay(self.host, self.relay_clock.now_ms, **settings)
        self.entropy = SeededEntropy(seed)
        self.devices: dict[str, Device] = {}

    def device(
        self, member, device_id, *, offset_ms=0, config=None, transport=None, entropy_label=None
    ) -> Device:
        device = Device.create(
            member,
            device_id,
            transport or RecordingTransport(self.relay),
            VirtualClock(offset_ms),
            self.entropy.fork(entropy_label or device_id),
            config or app_config(),
        )
        self.devices[device_id] = device
        return device

    async def registered(self, member, device_id, **kwargs) -> Device:
        device = self.device(member, device_id, **kwargs)
        await device.register()
        return device

    async def sync_all(self, rounds: int = 3, graph_id: str | None = None) -> None:
        for _ in range(rounds):
            for _, device in sorted(self.devices.items()):
                await device.sync(graph_id)


def lost(request):
    return TransportError(f"{request.method} {request.path} lost")


async def team(world, *names, configs=None, transports=None) -> list:
    """Register (member, device) pairs, bootstrap g:team on the first, have the others
    follow it, and sync: everyone holds epoch 1. ``configs``/``transports`` by device."""
    configs, transports = configs or {}, transports or {}
    devices = [
        await world.registered(m, d, config=configs.get(d), transport=transports.get(d))
        for m, d in names
    ]
    assert await devices[0].bootstrap("g:team")
    for device in devices[1:]:
        device.subscribe("g:team")
    await world.sync_all()
    return devices


PAIR = (("alice", "a1"), ("bob", "b1"))


def forge(device, graph_id, record, *, slot=None, sign_with=None, d=None, key=None, rev=None):
    """Push a hand-made op with ``device``'s credentials: a signed, sealed record whose
    slot, signer, claimed device, key or rev may each be wrong on purpose."""
    sk = device.storage_key(graph_id)
    ring = device.keyring(graph_id)
    envelope = {
        "v": 1,
        "r": record,
        "d": d or device.device_id,
        "s": sign_record((sign_with or device.keys).sign_key, sk, record),
    }
    slot = slot or record["id"]
    nonce = device.entropy.token_bytes(12)
    sealed = aes_gcm_seal(
        key or ring.keys[ring.current], nonce, canonical_json(envelope), record_aad(sk, slot)
    )
    op = {
        "recordId": slot,
        "rev": rev or record["at"],
        "e": ring.current,
        "n": b64url_encode(nonce),
        "c": b64url_encode(sealed),
    }
    body = json.dumps({"ops": [op]}).encode()
    response = device.transport.relay.handle(
        Request("POST", f"/graphs/{graph_id}/push", headers=device.headers(), body=body)
    )
    assert response.status == 200, response.body
    return response.json()
