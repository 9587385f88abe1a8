"""Relay throughput through ``handle()``: 200-op pushes and 500-op pulls; and
requests per second through ``simkit serve`` on loopback.

Each timed operation includes the client-side JSON encoding of the request body
and the decoding of the answer, as a driver would do. It is measured over a
store of 1,000, 100,000 and 1,000,000 records (quick mode stops at 100,000) to
show that neither operation grows with the size of the store: a push touches
only its own rows and counters, a pull bisects the log.

The HTTP rows run ``simkit serve`` in a subprocess (in memory, then with
``--store``) and send one request at a time over one kept-alive connection: a
1-op push (with ``--store``, one durable SQLite commit each) and a 50-op pull.
"""

import gc
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import simkit
from simkit.bench import BenchRow
from simkit.realtime import wall_clock
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
        started = wall_clock()  # a benchmark measures wall time
        for i in range(start, start + chunk):
            work(i)
        best = max(best, chunk / (wall_clock() - started))
    return best


def _serve(*args: str) -> tuple[subprocess.Popen, str]:
    """``simkit serve`` on a free loopback port, without rate limits: the process, its URL."""
    env = {**os.environ, "PYTHONPATH": str(Path(simkit.__file__).resolve().parent.parent)}
    command = [sys.executable, "-m", "simkit.cli", "serve", "--port", "0", "--no-rate-limits"]
    process = subprocess.Popen(
        [*command, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    line = process.stdout.readline().decode()
    if not line.startswith("listening on "):
        process.kill()
        raise RuntimeError(f"simkit serve did not start: {line!r}")
    return process, line.split()[2]


def http_rows(quick: bool = False) -> list[BenchRow]:
    """Requests per second through ``simkit serve``, in memory and with ``--store``."""
    from simkit.wire.target import HttpTarget

    rounds = 120 if quick else 1_200
    auth = {"authorization": "Bearer conform-alice-a1"}
    jwk = {"kty": "EC", "crv": "P-256", "x": "A" * 43, "y": "A" * 43}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for label, args in (("memory", ()), ("--store", ("--store", f"{folder}/relay.db"))):
            process, url = _serve(*args)
            http = HttpTarget(url)
            try:
                body = json.dumps({"pubJwk": jwk, "sigJwk": jwk}).encode()
                http.send(Request("PUT", "/devices/a1", None, auth, body))

                def push(i: int, http: HttpTarget = http) -> None:
                    ops = [{"recordId": f"r{i}", "rev": 1, "n": NONCE, "c": CIPHERTEXT}]
                    body = json.dumps({"ops": ops}).encode()
                    answer = http.send(Request("POST", "/graphs/u/push", None, auth, body))
                    assert json.loads(answer.body)["accepted"] == 1

                def pull(i: int, http: HttpTarget = http) -> None:
                    query = {"after": str(i % (rounds - 50)), "limit": "50"}
                    answer = http.send(Request("GET", "/graphs/u/pull", query, auth))
                    assert len(json.loads(answer.body)["ops"]) == 50

                pushes = _per_second(rounds, push)
                pulls = _per_second(rounds, pull)
            finally:
                http.close()
                process.terminate()
                process.wait()
            rows += [
                BenchRow("relay", f"HTTP push 1 op ({label})", pushes, "req/s", "serve, loopback"),
                BenchRow("relay", f"HTTP pull 50 ops ({label})", pulls, "req/s", "serve, loopback"),
            ]
    return rows


def run(quick: bool = False) -> list[BenchRow]:
    """Pushes and pulls per second at each store size, then through ``simkit serve``
    (figures, never assertions)."""
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
    return rows + http_rows(quick)
