import math
from collections import Counter

import pytest
import trio

from simkit.errors import TransportError
from simkit.sim import Latency, Network, NetworkError, NetworkProfile, Trace, run_virtual
from tests.sim.helpers import Req, network_for

FIXED = {"up": Latency(10), "down": Latency(10), "timeout_ms": 1_000}


def run(body, profile: NetworkProfile, seed: int = 0, **options):
    """Run ``body(network, relay, trace)`` inside a running network under virtual time."""
    network, relay, trace = network_for(profile, seed, **options)

    async def world():
        async with network.running():
            return await body(network, relay, trace)

    return run_virtual(world, seed=seed), relay, trace


def faults(trace: Trace) -> list[str]:
    return [e.fields["fault"] for e in trace if e.kind == "fault"]


async def send_or_fail(network: Network, device: str, path: str) -> int | str:
    try:
        return (await network.transport(device).send(Req("POST", path))).status
    except TransportError:
        return "transport-error"


def test_a_lost_request_never_reaches_the_relay_and_times_out():
    async def body(network, relay, trace):
        with pytest.raises(TransportError, match="no response to request 0 within 1000 ms"):
            await network.transport("a").send(Req("POST", "/x"))
        return trio.current_time()

    elapsed, relay, trace = run(body, NetworkProfile(request_loss=1, **FIXED))
    assert elapsed == 1.0
    assert relay.applied == []
    assert faults(trace) == ["request-lost", "timeout"]


def test_a_lost_response_leaves_the_request_applied():
    async def body(network, relay, trace):
        return await send_or_fail(network, "a", "/x"), trio.current_time()

    (outcome, elapsed), relay, trace = run(body, NetworkProfile(response_loss=1, **FIXED))
    assert (outcome, elapsed) == ("transport-error", 1.0)
    assert relay.applied == ["/x"]
    assert [e.fields["applied"] for e in trace if e.kind == "delivery"] == [True]


def test_a_direct_request_reaches_the_relay_at_the_instant_it_is_sent_whatever_the_profile():
    """The rogue's raw requests (simkit.sim.foreign): drawn against the relay at this
    instant, they arrive at it; only a down relay or an error window stops one."""
    profile = NetworkProfile(
        request_loss=1,
        response_loss=1,
        up=Latency(500),
        **{k: v for k, v in FIXED.items() if k != "up"},
    )

    async def body(network, relay, trace):
        await trio.sleep(0.25)
        response = network.transport("rogue").send_direct(Req("POST", "/x"))
        return response.status, trio.current_time()

    (status, elapsed), relay, trace = run(body, profile)
    assert (status, elapsed) == (200, 0.25)
    assert relay.applied == ["/x"]
    assert [(e.kind, e.t) for e in trace] == [
        ("request", 0.25), ("delivery", 0.25), ("response", 0.25)
    ]  # fmt: skip


def test_latency_and_a_slow_relay_show_in_virtual_time():
    profile = NetworkProfile(up=Latency(30), down=Latency(70), relay_delay=Latency(100))

    async def body(network, relay, trace):
        response = await network.transport("a").send(Req("GET", "/x"))
        return response.status, trio.current_time()

    (status, elapsed), _, trace = run(body, profile)
    assert (status, elapsed) == (200, 0.2)
    assert [(e.kind, e.t) for e in trace] == [("request", 0), ("delivery", 0.13), ("response", 0.2)]


def test_a_request_slower_than_the_timeout_is_still_applied_later():
    async def body(network, relay, trace):
        outcome = await send_or_fail(network, "a", "/x")
        at_timeout = list(relay.applied)
        await trio.sleep(5)
        return outcome, at_timeout

    (outcome, at_timeout), relay, _ = run(body, NetworkProfile(up=Latency(3_000), timeout_ms=1_000))
    assert (outcome, at_timeout, relay.applied) == ("transport-error", [], ["/x"])


def test_a_request_on_the_wire_arrives_even_if_its_sender_is_cancelled():
    async def body(network, relay, trace):
        with trio.move_on_after(0.01):
            await network.transport("a").send(Req("POST", "/x"))
        await trio.sleep(1)

    _, relay, trace = run(body, NetworkProfile(up=Latency(50)))
    assert relay.applied == ["/x"]
    assert [e.t for e in trace if e.kind == "delivery"] == [0.05]


def test_duplicates_apply_twice_and_can_arrive_after_the_next_request():
    profile = NetworkProfile(duplicate_rate=1, duplicate_delay=Latency(500), **FIXED)

    async def body(network, relay, trace):
        for path in ("/first", "/second"):
            await network.transport("a").send(Req("POST", path))
        await trio.sleep(1)

    _, relay, trace = run(body, profile)
    assert relay.applied == ["/first", "/second", "/first", "/second"]
    assert [e.fields["duplicate"] for e in trace if e.kind == "delivery"] == [
        False,
        False,
        True,
        True,
    ]


def test_reordering_lets_later_requests_overtake():
    profile = NetworkProfile(reorder_rate=0.5, reorder_delay=Latency(0, 100), **FIXED)

    async def body(network, relay, trace):
        async with trio.open_nursery() as nursery:
            for i in range(10):
                nursery.start_soon(send_or_fail, network, "a", f"/{i}")
                await trio.sleep(0.002)

    _, relay, trace = run(body, profile)
    assert sorted(relay.applied) == [f"/{i}" for i in range(10)] != relay.applied
    assert "reordered" in faults(trace)


def test_a_partition_blocks_its_devices_until_the_scheduled_heal():
    async def body(network, relay, trace):
        network.transport("b")
        network.partition(["a"], until=5)
        assert not network.links.has_edge("relay", "a")
        during = [await send_or_fail(network, d, f"/{d}/1") for d in ("a", "b")]
        await trio.sleep_until(5.001)  # at exactly 5, heal and send race (seeded order)
        after = [await send_or_fail(network, d, f"/{d}/2") for d in ("a", "b")]
        return during, after

    (during, after), relay, trace = run(body, NetworkProfile(**FIXED))
    assert (during, after) == (["transport-error", 200], [200, 200])
    assert relay.applied == ["/b/1", "/a/2", "/b/2"]
    heal = next(e for e in trace if e.fields.get("fault") == "heal")
    assert (heal.t, heal.fields["devices"]) == (5, ["a"])


def test_overlapping_partitions_hold_until_the_latest_deadline():
    async def body(network, relay, trace):
        network.partition(["a"], until=2)
        network.partition(["b", "a"], until=4)
        await trio.sleep(3)
        at_3 = network.connected("a"), network.connected("b")
        await trio.sleep(2)
        return at_3, (network.connected("a"), network.connected("b"))

    (at_3, at_5), _, trace = run(body, NetworkProfile())
    assert (at_3, at_5) == ((False, False), (True, True))
    assert [e.fields["devices"] for e in trace if e.fields.get("fault") == "heal"] == [["a", "b"]]


def test_a_partition_that_starts_mid_flight_loses_the_request():
    async def body(network, relay, trace):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_or_fail, network, "a", "/x")
            await trio.sleep(0.05)
            network.partition(["a"])
        await trio.sleep(0.1)
        network.heal()
        return await send_or_fail(network, "a", "/y")

    outcome, relay, trace = run(body, NetworkProfile(up=Latency(100), down=Latency(10)))
    assert (outcome, relay.applied) == (200, ["/y"])
    assert faults(trace) == ["partition", "partitioned", "timeout", "heal"]


def test_an_error_window_answers_without_applying():
    async def body(network, relay, trace):
        network.error_window(503, until=1)
        during = await network.transport("a").send(Req("POST", "/x"))
        await trio.sleep_until(1)
        return during, await network.transport("a").send(Req("POST", "/y"))

    (during, after), relay, trace = run(body, NetworkProfile(**FIXED))
    assert (during.status, after.status, relay.applied) == (503, 200, ["/y"])
    assert b'"error":"unavailable"' in during.body
    assert faults(trace) == ["error-window", "relay-error"]


def test_a_partial_outage_fails_only_its_route():
    async def body(network, relay, trace):
        network.error_window(503, until=1, route="GET /graphs/:gid/devices")
        a = network.transport("a")
        roster = await a.send(Req("GET", "/graphs/g:team/devices"))
        pull = await a.send(Req("GET", "/graphs/g:team/pull"))
        other = await a.send(Req("GET", "/graphs/g:team/devices/extra"))
        return roster, pull, other

    (roster, pull, other), relay, _ = run(body, NetworkProfile(**FIXED))
    assert (roster.status, pull.status, other.status) == (503, 200, 200)
    assert relay.applied == ["/graphs/g:team/pull", "/graphs/g:team/devices/extra"]


def test_429_rate_answers_rate_limited():
    async def body(network, relay, trace):
        return await network.transport("a").send(Req("POST", "/x"))

    response, relay, _ = run(body, NetworkProfile(error_429_rate=1))
    assert (response.status, relay.applied) == (429, [])
    assert b'"error":"rate-limited"' in response.body


def test_a_crashed_relay_times_out_and_restarts_on_schedule_or_with_a_new_handler():
    async def body(network, relay, trace):
        network.crash_relay(until=2)
        down = await send_or_fail(network, "a", "/x")
        await trio.sleep_until(2)
        up = await send_or_fail(network, "a", "/y")
        network.crash_relay()
        network.restart_relay(lambda request: type(relay(request))(201, {}, b""))
        return down, up, await send_or_fail(network, "a", "/z")

    outcomes, relay, trace = run(body, NetworkProfile(**FIXED))
    assert outcomes == ("transport-error", 200, 201)
    assert relay.applied == ["/y", "/z"]
    crashes = [(e.t, e.fields["what"]) for e in trace if e.kind == "crash"]
    assert crashes == [(0, "crash"), (2, "restart"), (2.02, "crash"), (2.02, "restart")]


def test_observed_fault_rates_are_close_to_the_configured_rates():
    profile = NetworkProfile(
        request_loss=0.2, response_loss=0.1, duplicate_rate=0.05, error_5xx_rate=0.1, **FIXED
    )
    n = 3_000

    async def body(network, relay, trace):
        return Counter([await send_or_fail(network, "a", f"/{i}") for i in range(n)])

    outcomes, _, trace = run(body, profile, seed=42)
    seen = Counter(faults(trace))
    arrived = n - seen["request-lost"]
    assert seen["request-lost"] / n == pytest.approx(0.2, abs=3 * math.sqrt(0.2 * 0.8 / n))
    assert seen["response-lost"] / arrived == pytest.approx(0.1, abs=3 * math.sqrt(0.09 / arrived))
    assert seen["duplicated"] / arrived == pytest.approx(0.05, abs=3 * math.sqrt(0.0475 / arrived))
    assert outcomes[503] / arrived == pytest.approx(0.9 * 0.1, abs=0.02)
    assert outcomes["transport-error"] == seen["timeout"]


def test_adding_a_device_leaves_another_links_draws_alone():
    profile = NetworkProfile(request_loss=0.3)

    def timeline(devices):
        async def body(network, relay, trace):
            for i in range(20):
                for device in devices:
                    await send_or_fail(network, device, f"/{device}/{i}")
            return [
                (e.kind, e.fields.get("fault"))
                for e in trace
                if "a" in (e.actor, e.fields.get("device"))
            ]

        return run(body, profile, seed=3)[0]

    alone = timeline(["a"])
    assert timeline(["a", "b"]) == alone
    assert ("fault", "request-lost") in alone


def test_pokes_travel_with_latency_partitions_and_subscriptions():
    async def body(network, relay, trace):
        first = network.subscribe("a")
        network.poke("a", "p1", graph="g")
        with trio.fail_after(1):
            got = (await first.receive(), trio.current_time())
        network.partition(["a"])
        network.poke("a", "p2", graph="g")
        network.heal()
        second = network.subscribe("a")  # closes the first channel
        network.poke("a", "p3", graph="g")
        network.poke("b", "p4", graph="g")  # b never subscribed
        await trio.sleep(1)
        return got, [p async for p in first], second.receive_nowait()

    (got, stale, latest), _, trace = run(body, NetworkProfile(**FIXED))
    assert (got, stale, latest) == (("p1", 0.01), [], "p3")
    assert faults(trace) == ["partition", "poke-partitioned", "heal", "poke-unheard"]
    delivered = [(e.actor, e.fields) for e in trace if e.kind == "delivery"]
    assert delivered == [("a", {"poke": True, "graph": "g"})] * 2


@pytest.mark.parametrize("bodies", [False, True])
def test_bodies_are_traced_only_when_asked(bodies):
    async def body(network, relay, trace):
        await network.transport("a").send(Req("POST", "/x", b"hi"), record="r1")

    _, _, trace = run(body, NetworkProfile(), trace_bodies=bodies)
    request, response = trace[0].fields, trace[2].fields
    assert request == {"xid": 0, "method": "POST", "path": "/x", "size": 2, "record": "r1"} | (
        {"body": "aGk"} if bodies else {}
    )
    assert response.get("body") == ("MQ" if bodies else None)  # the counting relay's b"1"


@pytest.mark.parametrize(
    "kwargs, rule",
    [
        ({"request_loss": 1.5}, "request_loss is a probability"),
        ({"timeout_ms": 0}, "timeout_ms must be > 0"),
        ({"up": 20}, "up must be a Latency"),
        ({"duplicate_rate": float("nan")}, "finite"),
    ],
)
def test_bad_profiles_name_the_rule(kwargs, rule):
    with pytest.raises(NetworkError, match=rule):
        NetworkProfile(**kwargs)
    with pytest.raises(NetworkError, match="shape"):
        Latency(1, 2, "normal")


def test_misuse_names_the_rule():
    network, _, _ = network_for(NetworkProfile())
    with pytest.raises(NetworkError, match="not running"):
        network.poke("a", "p")
    with pytest.raises(NetworkError, match="other than relay"):
        network.transport("relay")
    with pytest.raises(NetworkError, match="429 or 5xx"):
        network.error_window(404, until=1)


def test_an_error_in_a_timer_surfaces_from_the_running_network():
    network, _, _ = network_for(NetworkProfile())

    def broken() -> None:
        raise KeyError("a bug in a scheduled action")

    async def world() -> None:
        async with network.running():
            network.call_at(1.0, broken)
            await trio.sleep(5.0)

    with pytest.raises(KeyError, match="a bug in a scheduled action"):
        run_virtual(world, seed=0)


def test_a_timer_never_outlives_the_run_that_scheduled_it():
    network, _, _ = network_for(NetworkProfile())
    fired = []

    async def world() -> None:
        async with network.running():
            network.call_at(5.0, fired.append, "first run")
            await trio.sleep(1.0)
        async with network.running():  # a fresh run, e.g. after a restart
            await trio.sleep(10.0)

    run_virtual(world, seed=0)
    assert fired == []
