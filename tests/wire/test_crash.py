"""A crash: ``simkit serve --store`` under a push load, killed with SIGKILL, restarted on
the same store. Every write answered 200 is there, nothing else changed, and the log
chain verifies (docs/relay.md, "The store")."""

import json
import threading

from simkit.errors import TransportError
from simkit.protocol.logchain import CHECKPOINT_STRIDE, log_genesis, log_step
from simkit.relay import Request
from simkit.wire.target import HttpTarget

CLIENTS = 3
KILL_AFTER = 60  # answered pushes before the kill (the load is bounded at 400)
MAX_PUSHES = 400
NEW_PER_PUSH = 5
JWK = {"kty": "EC", "crv": "P-256", "x": "A" * 43, "y": "A" * 43}
ALICE = {"authorization": "Bearer conform-alice-a1"}


def ops(client: int, push: int) -> list[dict]:
    """Five new records, then an overwrite of the client's own hot record (rev = push + 1)."""
    new = [
        {
            "recordId": f"c{client}p{push}r{k}",
            "rev": 1,
            "n": "bm9uY2U",
            "c": f"Y{client}x{push}x{k}",
        }
        for k in range(NEW_PER_PUSH)
    ]
    return [*new, {"recordId": f"hot{client}", "rev": push + 1, "n": "bm9uY2U", "c": f"H{push}"}]


class Load:
    """Clients pushing one push at a time each; what was answered, and what was in flight."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.lock = threading.Lock()
        self.answered: dict[tuple[int, int], int] = {}  # (client, push) -> status
        self.in_flight: set[tuple[int, int]] = set()
        self.sent = 0

    def client(self, client: int) -> None:
        http = HttpTarget(self.url, timeout=10)
        for push in range(MAX_PUSHES):
            body = json.dumps({"ops": ops(client, push)}).encode()
            with self.lock:
                self.in_flight.add((client, push))
                self.sent += 1
            try:
                answer = http.send(Request("POST", "/graphs/u/push", headers=ALICE, body=body))
            except TransportError:
                return  # the server is gone; this push stays in flight
            with self.lock:
                self.in_flight.discard((client, push))
                self.answered[client, push] = answer.status

    def count(self) -> int:
        with self.lock:
            return len(self.answered)


def boundary_heads(entries: list[dict]) -> dict[int, str]:
    """The chain head at each multiple of 64 the entries reach (what checkpoints sign)."""
    heads, head = {}, log_genesis("u:alice")
    for entry in entries:
        boundary = entry["seq"] - entry["seq"] % CHECKPOINT_STRIDE
        if boundary and boundary not in heads and boundary < entry["seq"]:
            heads[boundary] = head
        head = log_step(head, entry["seq"], entry["recordId"], entry["rev"])
    return heads


def everything(http: HttpTarget, route: str, items: str) -> list[dict]:
    """Every page of the pull or the log of alice's personal graph."""
    out, after = [], 0
    while True:
        query = {"after": str(after)}
        page = json.loads(http.send(Request("GET", route, query, ALICE)).body)
        out += page[items]
        if not page["more"]:
            return out
        after = page["cursor"]


def test_serve_killed_mid_load_keeps_every_answered_write_and_nothing_else(serve, tmp_path):
    store = tmp_path / "relay.db"
    served = serve("--store", store)
    http = HttpTarget(served.url)
    body = json.dumps({"pubJwk": JWK, "sigJwk": JWK}).encode()
    assert http.send(Request("PUT", "/devices/a1", headers=ALICE, body=body)).status == 200
    load = Load(served.url)
    clients = [threading.Thread(target=load.client, args=(c,)) for c in range(CLIENTS)]
    for thread in clients:
        thread.start()
    while load.count() < KILL_AFTER:
        threading.Event().wait(0.01)
    log_before = everything(http, "/graphs/u/log", "entries")
    served.kill()
    for thread in clients:
        thread.join()
    http.close()

    restarted = serve("--store", store)
    http = HttpTarget(restarted.url)
    rows = {o["recordId"]: o for o in everything(http, "/graphs/u/pull", "ops")}
    log = everything(http, "/graphs/u/log", "entries")
    answered = {key for key, status in load.answered.items() if status == 200}
    assert len(answered) == len(load.answered) >= KILL_AFTER  # the load itself was healthy

    def landed(client: int, push: int) -> bool:
        present = [rows.get(o["recordId"], {}).get("c") == o["c"] for o in ops(client, push)[:-1]]
        assert all(present) or not any(present), f"push {client}/{push} landed in part"
        return all(present)

    for key in answered:
        assert landed(*key), f"push {key} was answered 200 but is gone after the crash"
    maybe = {key for key in load.in_flight if landed(*key)}  # committed, answer lost
    pushes = answered | maybe
    sent = {f"c{c}p{p}r{k}" for c, p in pushes for k in range(NEW_PER_PUSH)}
    assert {r for r in rows if not r.startswith("hot")} == sent, "records nobody sent or kept"
    for client in range(CLIENTS):
        last = max((p for c, p in pushes if c == client), default=None)
        hot = rows.get(f"hot{client}")
        assert (hot and hot["rev"]) == (None if last is None else last + 1)

    # The log: one entry per landed write, never rewritten, and its chain verifies.
    assert len(log) == len(pushes) * (NEW_PER_PUSH + 1)
    assert log[: len(log_before)] == log_before, "the crash rewrote the log served before it"
    seqs = [e["seq"] for e in log]
    assert seqs == sorted(set(seqs))
    for entry in log:
        assert rows[entry["recordId"]]["rev"] >= entry["rev"]  # log check (1)
    before, after = boundary_heads(log_before), boundary_heads(log)
    assert before and all(after[b] == head for b, head in before.items())  # log check (2)
    latest = {entry["recordId"]: entry for entry in log}
    assert all(rows[r]["seq"] == e["seq"] for r, e in latest.items())

    # The counter survived: the next write gets a seq above everything before the crash.
    again = json.dumps({"ops": [{"recordId": "after", "rev": 1, "n": "bm9uY2U", "c": "QQ"}]})
    assert (
        http.send(Request("POST", "/graphs/u/push", headers=ALICE, body=again.encode())).status
        == 200
    )
    tail = everything(http, "/graphs/u/log", "entries")[-1]
    assert tail["recordId"] == "after" and tail["seq"] > seqs[-1]
    http.close()
    print(
        f"crash: {load.sent} pushes sent, {len(answered)} answered 200, "
        f"{len(load.in_flight)} in flight at the kill ({len(maybe)} of them committed), "
        f"{len(rows)} records and {len(log)} log entries after the restart, "
        f"{len(before)} checkpoint heads agree"
    )
