import json

import pytest
import trio

from simkit.protocol.b64 import b64url_encode
from simkit.protocol.entropy import SeededEntropy
from simkit.sim import (
    DEFAULT_EPOCH_MS,
    RELAY,
    Latency,
    Network,
    NetworkProfile,
    Trace,
    relay_clock,
    relay_time_ms,
    run_virtual,
)

relay_module = pytest.importorskip("simkit.relay")
if not hasattr(relay_module, "Relay"):
    pytest.skip("simkit.relay has no Relay yet", allow_module_level=True)

ALICE = {"x-member": "alice", "x-device": "a1"}
JWK = {"kty": "EC", "crv": "P-256", "x": b64url_encode(b"x" * 32), "y": b64url_encode(b"y" * 32)}
OP = {"recordId": "r1", "rev": 1, "n": "bm9uY2Vub25jZTEy", "c": "Y2lwaGVy"}


def request(method: str, path: str, body: object = None):
    data = b"" if body is None else json.dumps(body).encode()
    return relay_module.Request(method, path, headers=ALICE, body=data)


def test_the_real_relay_behind_a_network_that_duplicates_everything():
    profile = NetworkProfile(
        up=Latency(10), down=Latency(10), duplicate_rate=1, duplicate_delay=Latency(50)
    )
    trace = Trace()
    trace.register_clock(RELAY, relay_time_ms)

    async def device():
        def on_event(event: object) -> None:
            if isinstance(event, relay_module.Poke):
                network.poke("a1", event, graph=event.graph)

        # Built inside the run: the relay reads its clock as it starts.
        relay = relay_module.Relay(
            relay_module.StaticHost(["alice"]), relay_clock(), on_event=on_event
        )
        network = Network(relay.handle, profile, SeededEntropy(11), trace)

        async with network.running():
            pokes = network.subscribe("a1")
            a1 = network.transport("a1")
            registered = await a1.send(
                request("PUT", "/devices/a1", {"pubJwk": JWK, "sigJwk": JWK})
            )
            pushed = await a1.send(request("POST", "/graphs/u/push", {"ops": [OP]}))
            poke = await pokes.receive()
            await trio.sleep(1)  # the duplicated push lands and is skipped by rev
            log = await a1.send(request("GET", "/graphs/u/log"))
            network.error_window(503, until=trio.current_time() + 1)
            refused = await a1.send(request("GET", "/graphs/u/pull"))
            return registered, pushed, poke, log, refused

    registered, pushed, poke, log, refused = run_virtual(device, seed=11)
    assert (registered.status, pushed.json()["accepted"]) == (200, 1)
    assert poke.graph == "u:alice"
    assert [e["recordId"] for e in log.json()["entries"]] == ["r1"]
    assert isinstance(refused, relay_module.Response) and refused.status == 503
    applied_pushes = [
        e.fields["duplicate"]
        for e in trace
        if e.kind == "delivery" and e.fields.get("xid") == 1 and e.fields["applied"]
    ]
    assert applied_pushes == [False, True]
    deliveries = [e for e in trace if e.kind == "delivery" and e.actor == RELAY]
    assert all(e.clock_ms == DEFAULT_EPOCH_MS + round(e.t * 1000) for e in deliveries)
