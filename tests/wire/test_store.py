"""The SQLite store: what the relay committed is what a restart finds, a failed write
changes nothing anywhere, and the schema only ever grows (spec: Versioning rule 4)."""

import hashlib
import json
import sqlite3

import pytest

from simkit.protocol.b64 import b64url_encode
from simkit.protocol.canonical import canonical_json
from simkit.relay import Relay, Request
from simkit.wire.conform import CHECKS, IN_PROCESS_QUOTAS, conformance_directory, run
from simkit.wire.members import TokenHost
from simkit.wire.store import MIGRATIONS, STORE_VERSION, NewerStoreError, Store, StoreError
from simkit.wire.target import InProcessTarget, ManualClock

# A shipped migration is never edited: each one's SHA-256, pinned when it shipped.
SHIPPED = {1: "5e11cdf0fec0e943fb65a72275231ab15972338da6cf72842ef53fdc286efc09"}

DIRECTORY = conformance_directory()
HEADERS = {"authorization": "Bearer conform-alice-a1"}


def stored_relay(path, clock: ManualClock) -> tuple[Relay, Store]:
    store = Store(path)
    relay = Relay(
        TokenHost(DIRECTORY), clock, state=store.load(), on_commit=store.commit,
        **IN_PROCESS_QUOTAS,
    )  # fmt: skip
    return relay, store


def state_bytes(relay: Relay) -> bytes:
    return canonical_json(relay.snapshot())


def reloaded(path) -> bytes:
    store = Store(path)
    try:
        return canonical_json(store.load().to_data())
    finally:
        store.close()


class RestartingTarget(InProcessTarget):
    """Restarts the relay from its store after every request that committed a change,
    and checks that the restarted relay holds exactly what the running one held."""

    def __init__(self, path) -> None:
        clock = ManualClock()
        relay, self.store = stored_relay(path, clock)
        super().__init__(relay, clock)
        self.path, self.restarts = path, 0

    def send(self, request):
        commits = self.store.commits
        response = self.relay.handle(request)
        if self.store.commits != commits:
            expected = state_bytes(self.relay)
            self.store.close()
            self.relay, self.store = stored_relay(self.path, self.clock)
            assert state_bytes(self.relay) == expected, f"lost {request.method} {request.path}"
            self.restarts += 1
        return response


def test_store_restart_after_every_answered_write_finds_exactly_what_was_answered(tmp_path):
    """Every kind of change but the big record pushes (those are the next test's)."""
    target = RestartingTarget(tmp_path / "relay.db")
    checks = [c for c in CHECKS if c.area not in ("records", "limits")]
    results = run(target, DIRECTORY, checks=checks)
    assert all(r.outcome == "pass" for r in results), [r for r in results if r.outcome != "pass"]
    assert target.restarts >= 40  # devices, revocations, keys, grants, discards, blobs, acks


def test_store_holds_a_whole_conformance_run_and_what_the_sweeper_forgets(tmp_path):
    path, clock = tmp_path / "relay.db", ManualClock()
    relay, store = stored_relay(path, clock)
    results = run(InProcessTarget(relay, clock), DIRECTORY)
    assert all(r.outcome == "pass" for r in results), [r for r in results if r.outcome != "pass"]
    clock.advance(relay.settings.sweep_interval_ms)
    assert relay.sweep_if_due() > 0  # the run's transport and ephemeral blobs
    expected = state_bytes(relay)
    store.close()
    assert reloaded(path) == expected


def test_store_write_that_fails_is_answered_500_and_changes_nothing_in_memory_or_on_disk(
    tmp_path,
):
    path, clock = tmp_path / "relay.db", ManualClock()
    relay, store = stored_relay(path, clock)
    target = InProcessTarget(relay, clock)
    run(target, DIRECTORY)
    before = state_bytes(relay)
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count={pages}")  # the disk is full
    big = b'{"ops": [{"recordId": "big", "rev": 1, "n": "bm9uY2U", "c": "' + b"Q" * 500_000
    response = relay.handle(_request("POST", "/graphs/u/push", big + b'"}]}'))
    assert response.status == 500 and response.json()["error"] == "internal"
    assert state_bytes(relay) == before
    store._db.execute(f"PRAGMA max_page_count={2**30}")  # space again
    assert relay.handle(_request("POST", "/graphs/u/push", b'{"ops": []}')).status == 200
    store.close()
    assert reloaded(path) == state_bytes(relay)


def _request(method: str, path: str, body: bytes = b"") -> Request:
    return Request(method, path, headers=HEADERS, body=body)


def test_store_schema_version_table_records_every_migration_with_its_hash(tmp_path):
    store = Store(tmp_path / "relay.db")
    assert store.version() == STORE_VERSION == len(MIGRATIONS)
    rows = dict(store._db.execute("SELECT version, sha256 FROM migrations"))
    store.close()
    assert rows == SHIPPED


def test_store_shipped_migrations_are_never_edited():
    for version, sql in enumerate(MIGRATIONS, start=1):
        digest = hashlib.sha256(sql.encode()).hexdigest()
        assert SHIPPED.get(version) == digest, (
            f"migration {version} changed (or is new and not pinned here): a shipped "
            f"migration is never edited; add a new one instead. Its SHA-256 is {digest}"
        )


def test_store_refuses_a_database_written_by_a_newer_build(tmp_path):
    path = tmp_path / "relay.db"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO migrations VALUES (?, 'x', '9.9.9')", (STORE_VERSION + 1,))
    db.commit()
    db.close()
    with pytest.raises(NewerStoreError, match="refusing a store written by a newer build"):
        Store(path)


def test_store_refuses_a_database_whose_applied_migration_differs_from_this_builds(tmp_path):
    path = tmp_path / "relay.db"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE migrations SET sha256 = 'edited' WHERE version = 1")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="a shipped migration must never be edited"):
        Store(path)


@pytest.mark.parametrize(
    "content, rule",
    [(b"not a database at all, just text" * 100, "not an SQLite database"),
     (None, "not a simkit relay store")],
    ids=["text", "other-sqlite"],
)  # fmt: skip
def test_store_refuses_a_file_that_is_not_a_relay_store(tmp_path, content, rule):
    path = tmp_path / "relay.db"
    if content is None:
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE notes (x)")
        db.commit()
        db.close()
    else:
        path.write_bytes(content)
    with pytest.raises(StoreError, match=rule) as raised:
        Store(path)
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


def test_store_is_used_by_one_server_at_a_time(tmp_path):
    path = tmp_path / "relay.db"
    first = Store(path)
    first.load()
    with pytest.raises(StoreError, match="in use by another process"):
        Store(path).load()
    first.close()
    Store(path).close()


def test_versioning_3_a_relay_upgrade_opens_the_store_the_older_relay_wrote(tmp_path):
    """``simkit serve --store F --variant older-relay``, stopped, then ``simkit serve
    --store F``: the new relay reads every row the older one committed, and serves the
    log route over it."""
    from simkit.relay.older import OlderRelay

    path, clock = tmp_path / "relay.db", ManualClock()
    store = Store(path)
    older = OlderRelay(
        TokenHost(DIRECTORY), clock, state=store.load(), on_commit=store.commit,
        **IN_PROCESS_QUOTAS,
    )  # fmt: skip
    key = {
        "kty": "EC",
        "crv": "P-256",
        "x": b64url_encode(b"x" * 32),
        "y": b64url_encode(b"y" * 32),
    }
    register = json.dumps({"pubJwk": key, "sigJwk": key}).encode()
    assert older.handle(Request("PUT", "/devices/a1", {}, HEADERS, register)).status == 200
    push = Request("POST", "/graphs/u/push", {}, HEADERS, b'{"ops":[{"recordId":"r1",'
                   b'"rev":1,"n":"AAAA","c":"Y2lwaGVy","futureField":1}]}')  # fmt: skip
    assert older.handle(push).json()["accepted"] == 1
    written = state_bytes(older)
    store.close()
    relay, store = stored_relay(path, clock)
    try:
        assert state_bytes(relay) == written
        log = relay.handle(Request("GET", "/graphs/u/log", {}, HEADERS, b"")).json()
        assert [e["recordId"] for e in log["entries"]] == ["r1"]
    finally:
        store.close()
