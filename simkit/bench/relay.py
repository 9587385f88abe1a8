"""Relay throughput through ``handle()``: 200-op pushes and 500-op pulls.

Each timed operation includes the client-side JSON encoding of the request body
and the decoding of the answer, as a driver would do. It is measured over a
store of 1,000, 100,000 and 1,000,000 records (quick mode stops at 100,000) to
show that neither operation grows with the size of the store: a push touches
only its own rows and counters, a pull bisects the log.
"""

import gc
import json
import time

from simkit.bench import BenchRow
from simkit.relay import Relay, Request, StaticHost

SIZES = (1_000, 100_000, 1_000_000)
QUICK_SIZES = SIZES[:2]
PUSH_OPS, PULL_LIMIT = 200, 500
NOW = 1_700_000_000_000
HEADERS = {"x-member": "bench", "x-device": "d1"}
NONCE = "bm9uY2Vub25jZTEy"
CIPHERTEXT = "Q" * 256  # a small sealed record


def _ops(start: int) -> list[dict]:
    return [
        {"recordId": f"r{i}", "rev": 1, "n": NONCE, "c": CIPHERTEXT}
        for i in range(start, start + PUSH_OPS)
    ]


def _push(relay: Relay, ops: list[dict]) -> dict:
    body = json.dumps({"ops": ops}).encode()
    return json.loads(relay.handle(Request("POST", "/graphs/u/push", None, HEADERS, body)).body)


def _pull(relay: Relay, after: int) -> dict:
    query = {"after": str(after), "limit": str(PULL_LIMIT)}
    return json.loads(relay.handle(Request("GET", "/graphs/u/pull", query, HEADERS)).body)


def _filled(size: int, rounds: int) -> Relay:
    """A relay whose one graph holds ``size`` records, written through ``handle()``."""
    quota = size + rounds * PUSH_OPS
    relay = Relay(StaticHost(["bench"]), lambda: NOW, rate_limits={}, quota_records=quota)
    jwk = {"kty": "EC", "crv": "P-256", "x": "A" * 43, "y": "A" * 43}
    body = json.dumps({"pubJwk": jwk, "sigJwk": jwk}).encode()
    relay.handle(Request("PUT", "/devices/d1", None, HEADERS, body))
    for start in range(0, size, PUSH_OPS):
        _push(relay, _ops(start))
    gc.collect()
    gc.freeze()  # keep the fill out of the garbage collector's timed work
    return relay


def _per_second(rounds: int, work) -> float:
    """Calls of ``work(i)`` per second: a warm-up chunk, then the best of five chunks.

    The best chunk, as ``timeit`` reports its minimum, is the figure least
    disturbed by whatever else the machine is doing.
    """
    chunk = rounds // 6
    for i in range(chunk):
        work(i)
    best = 0.0
    for start in range(chunk, 6 * chunk, chunk):
        started = time.perf_counter()  # real-default: a benchmark measures wall time
        for i in range(start, start + chunk):
            work(i)
        best = max(best, chunk / (time.perf_counter() - started))  # real-default
    return best


def run(quick: bool = False) -> list[BenchRow]:
    """Pushes and pulls per second at each store size (figures, never assertions)."""
    rows = []
    rounds = 60 if quick else 240
    for size in QUICK_SIZES if quick else SIZES:
        relay = _filled(size, rounds)
        spread = size - PULL_LIMIT

        def pull(i: int, relay: Relay = relay, spread: int = spread) -> None:
            page = _pull(relay, spread * i // rounds)
            assert len(page["ops"]) == PULL_LIMIT

        pulls = _per_second(rounds, pull)
        batches = [_ops(size + i * PUSH_OPS) for i in range(rounds)]

        def push(i: int, relay: Relay = relay, batches: list = batches) -> None:
            assert _push(relay, batches[i])["accepted"] == PUSH_OPS

        pushes = _per_second(rounds, push)
        gc.unfreeze()
        label = f"{size:,} records"
        rows += [
            BenchRow("relay", f"push {PUSH_OPS} ops @ {label}", pushes, "push/s",
                     f"{pushes * PUSH_OPS:,.0f} ops/s"),
            BenchRow("relay", f"pull {PULL_LIMIT} ops @ {label}", pulls, "pull/s",
                     f"{pulls * PULL_LIMIT:,.0f} ops/s"),
        ]  # fmt: skip
    return rows
