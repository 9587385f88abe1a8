"""The relay's state in SQLite: every committed change durable before it is answered.

The relay stays sans-I/O and keeps its whole state in memory; this store is a
driver beside it. At start ``load()`` reads the tables into a ``RelayState``;
after that the relay calls ``commit(tx)`` (its ``on_commit`` hook) inside each
request's transaction, and the store writes exactly what ``tx.changed`` names as
one SQLite transaction (WAL, ``synchronous=FULL``). If the write fails, the relay
undoes the request and answers 500, so memory and disk never disagree
(docs/relay.md, "The store").

The schema grows only by appending to ``MIGRATIONS``; a shipped migration is never
edited (each one's SHA-256 is recorded when it is applied and compared on every
open) and a store written by a newer build is refused (spec: Versioning rule 4).
"""

import hashlib
import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from simkit import __version__
from simkit.errors import InputError
from simkit.protocol.b64 import b64url_encode
from simkit.relay import SCHEMA_VERSION, RelayState, RelayStateError
from simkit.relay.state import Blob, Graph
from simkit.relay.txn import Transaction

APPLICATION_ID = 0x534B5231  # "SKR1" in the SQLite header: this file is a simkit relay store

# Append-only. Index + 1 is the schema version the migration brings the store to.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE devices (
        device_id TEXT PRIMARY KEY, member_id TEXT NOT NULL, pub_jwk TEXT NOT NULL,
        sig_jwk TEXT NOT NULL, self_sig TEXT, label TEXT, registered_at INTEGER NOT NULL,
        revoked_at INTEGER);
    CREATE TABLE graphs (
        key TEXT PRIMARY KEY, seq INTEGER NOT NULL, latest_epoch INTEGER NOT NULL,
        rotation_required INTEGER NOT NULL);
    CREATE TABLE records (
        graph TEXT NOT NULL, record_id TEXT NOT NULL, rev INTEGER NOT NULL, n TEXT NOT NULL,
        c TEXT NOT NULL, e INTEGER, k TEXT, sh TEXT, seq INTEGER NOT NULL,
        PRIMARY KEY (graph, record_id));
    CREATE TABLE log (
        graph TEXT NOT NULL, position INTEGER NOT NULL, seq INTEGER NOT NULL,
        record_id TEXT NOT NULL, rev INTEGER NOT NULL, PRIMARY KEY (graph, position));
    CREATE TABLE pushers (
        graph TEXT NOT NULL, position INTEGER NOT NULL, member_id TEXT NOT NULL,
        PRIMARY KEY (graph, position));
    CREATE TABLE wraps (
        graph TEXT NOT NULL, epoch INTEGER NOT NULL, device_id TEXT NOT NULL,
        wrapped TEXT NOT NULL, PRIMARY KEY (graph, epoch, device_id));
    CREATE TABLE blobs (
        graph TEXT NOT NULL, blob_id TEXT NOT NULL, nonce TEXT NOT NULL, policy TEXT NOT NULL,
        expires_at INTEGER, receipts TEXT NOT NULL, PRIMARY KEY (graph, blob_id));
    CREATE TABLE blob_data (
        graph TEXT NOT NULL, blob_id TEXT NOT NULL, data BLOB NOT NULL,
        PRIMARY KEY (graph, blob_id));
    """,
)
STORE_VERSION = len(MIGRATIONS)


class StoreError(InputError):
    """The store file cannot be used: not a store, in use, damaged or too new."""


class NewerStoreError(StoreError):
    """The store was written by a newer build; running on it could corrupt it."""


def _sha256(sql: str) -> str:
    return hashlib.sha256(sql.encode()).hexdigest()


class Store:
    """One SQLite file holding one relay's state; open it with ``Store(path)``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.commits = 0  # transactions made durable since opening
        self._state: RelayState | None = None
        self._owners: dict[int, tuple[object, str, Graph, int | None]] = {}
        try:
            self._db = sqlite3.connect(
                self.path, timeout=0, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA locking_mode=EXCLUSIVE")  # one server per store
            if self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0] != "wal":
                raise self._error("cannot switch it to write-ahead logging")
            self._db.execute("PRAGMA synchronous=FULL")  # a commit survives power loss
            self._migrate()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc):
                raise self._error("in use by another process (one server per store)") from None
            raise self._error(f"cannot open it: {exc}") from None
        except sqlite3.DatabaseError as exc:
            raise self._error(f"not an SQLite database ({exc})") from None

    def _error(self, rule: str, kind: type[StoreError] = StoreError) -> StoreError:
        return kind(f"{self.path}: relay store: {rule}")

    def close(self) -> None:
        self._db.close()

    # --- schema ---------------------------------------------------------------------

    def _migrate(self) -> None:
        db = self._db
        application_id = db.execute("PRAGMA application_id").fetchone()[0]
        tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if application_id != APPLICATION_ID and (application_id or tables):
            raise self._error("not a simkit relay store (SQLite application_id differs)")
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            db.execute(
                "CREATE TABLE IF NOT EXISTS migrations ("
                "version INTEGER PRIMARY KEY, sha256 TEXT NOT NULL, simkit TEXT NOT NULL)"
            )
            applied = dict(db.execute("SELECT version, sha256 FROM migrations"))
            newest = max(applied, default=0)
            if newest > STORE_VERSION:
                raise self._error(
                    f"schema version {newest}, but this build knows {STORE_VERSION} at most; "
                    "refusing a store written by a newer build",
                    NewerStoreError,
                )
            for version, sql in enumerate(MIGRATIONS, start=1):
                if version in applied:
                    if applied[version] != _sha256(sql):
                        raise self._error(
                            f"migration {version} differs from the one this store applied "
                            "(a shipped migration must never be edited)"
                        )
                    continue
                for statement in sql.split(";"):
                    if statement.strip():
                        db.execute(statement)
                db.execute(
                    "INSERT INTO migrations VALUES (?, ?, ?)", (version, _sha256(sql), __version__)
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def version(self) -> int:
        return self._db.execute("SELECT max(version) FROM migrations").fetchone()[0]

    # --- reading ----------------------------------------------------------------------

    def load(self) -> RelayState:
        """The stored state; the store then follows this object's changes (``commit``)."""
        db = self._db
        graphs: dict[str, dict] = {}
        for key, seq, latest, rotation in db.execute("SELECT * FROM graphs ORDER BY key"):
            graphs[key] = {
                "key": key, "seq": seq, "latestEpoch": latest, "rotationRequired": bool(rotation),
                "pushers": [], "records": [], "log": [], "wraps": [], "blobs": [],
            }  # fmt: skip
        rows = db.execute("SELECT * FROM records ORDER BY graph, record_id")
        for graph, record_id, rev, n, c, e, k, sh, seq in rows:
            record = {"recordId": record_id, "rev": rev, "n": n, "c": c, "seq": seq}
            record |= {name: v for name, v in (("e", e), ("k", k), ("sh", sh)) if v is not None}
            graphs[graph]["records"].append(record)
        log = db.execute("SELECT * FROM log ORDER BY graph, position")
        for graph, _, seq, record_id, rev in log:
            graphs[graph]["log"].append({"seq": seq, "recordId": record_id, "rev": rev})
        for graph, _, member in db.execute("SELECT * FROM pushers ORDER BY graph, position"):
            graphs[graph]["pushers"].append(member)
        for graph, epoch, device, wrapped in db.execute("SELECT * FROM wraps"):
            graphs[graph]["wraps"].append([epoch, device, wrapped])
        blobs = db.execute(
            "SELECT b.graph, b.blob_id, nonce, policy, expires_at, receipts, data "
            "FROM blobs b JOIN blob_data USING (graph, blob_id)"
        )
        for graph, blob_id, nonce, policy, expires_at, receipts, data in blobs:
            graphs[graph]["blobs"].append({
                "blobId": blob_id, "nonce": nonce, "policy": policy, "expiresAt": expires_at,
                "receipts": json.loads(receipts), "data": b64url_encode(data),
            })  # fmt: skip
        devices = [
            {
                "deviceId": device_id, "memberId": member, "pubJwk": json.loads(pub),
                "sigJwk": json.loads(sig), "selfSig": self_sig, "label": label,
                "registeredAt": registered_at, "revokedAt": revoked_at,
            }
            for device_id, member, pub, sig, self_sig, label, registered_at, revoked_at
            in db.execute("SELECT * FROM devices ORDER BY device_id")
        ]  # fmt: skip
        data = {"schema": SCHEMA_VERSION, "devices": devices, "graphs": list(graphs.values())}
        try:
            state = RelayState.from_data(data)
        except RelayStateError as exc:
            raise self._error(f"damaged: {exc}") from None
        self._state = state  # from now on, commit() writes this object's changes
        self._index()
        return state

    def _index(self) -> None:
        """Which graph owns each container a transaction can change."""
        owners = self._owners
        owners.clear()
        for graph in self._state.graphs.values():
            for role in ("records", "log", "pushers", "blobs", "wraps"):
                container = getattr(graph, role)
                owners[id(container)] = (container, role, graph, None)
            for epoch, holders in graph.wraps.items():
                owners[id(holders)] = (holders, "holders", graph, epoch)

    def _owner(self, container: object) -> tuple[str, Graph, int | None]:
        for attempt in range(2):
            found = self._owners.get(id(container))
            if found is not None and found[0] is container:
                return found[1:]
            if attempt == 0:
                self._index()  # a graph or an epoch new in this transaction
        raise RuntimeError(f"relay store: a change to a container it does not know: {container!r}")

    # --- writing ----------------------------------------------------------------------

    def commit(self, tx: Transaction) -> None:
        """Write what ``tx`` changed as one SQLite transaction (the relay's ``on_commit``)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            self._write(tx.changed)
            db.execute("COMMIT")
            self.commits += 1
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _write(self, changed: Iterable[tuple[object, object]]) -> None:
        state = self._state
        devices: dict[str, None] = {}
        graphs: dict[str, Graph] = {}
        records: dict[tuple[str, str], Graph] = {}
        blobs: dict[tuple[str, str], Graph] = {}
        epochs: dict[tuple[str, int], Graph] = {}
        wraps: dict[tuple[str, int, str], dict] = {}
        appended: dict[int, tuple[Graph, str, int]] = {}  # id(list) -> graph, role, count
        for container, key in changed:
            if container is state.devices:
                devices[key] = None
            elif container is state.member_devices:
                continue  # derived from devices
            elif container is state.graphs:
                graphs[key] = state.graphs[key]
            elif isinstance(container, Graph):
                graphs[container.key] = container
            else:
                role, graph, epoch = self._owner(container)
                if role == "records":
                    records[graph.key, key] = graph
                elif role == "blobs":
                    blobs[graph.key, key] = graph
                elif role == "wraps":
                    epochs[graph.key, key] = graph
                elif role == "holders":
                    wraps[graph.key, epoch, key] = container
                else:  # log or pushers: lists only ever grow at the end
                    _, _, count = appended.get(id(container), (graph, role, 0))
                    appended[id(container)] = (graph, role, count + 1)
        self._devices(devices)
        self._graphs(graphs.values())
        self._records(records)
        self._lists(appended.values())
        self._wraps(epochs, wraps)
        self._blobs(blobs)

    def _devices(self, ids: Iterable[str]) -> None:
        rows = []
        for device_id in ids:
            d = self._state.devices[device_id]
            rows.append((
                d.device_id, d.member_id, json.dumps(d.pub_jwk), json.dumps(d.sig_jwk),
                d.self_sig, d.label, d.registered_at, d.revoked_at,
            ))  # fmt: skip
        self._db.executemany("INSERT OR REPLACE INTO devices VALUES (?,?,?,?,?,?,?,?)", rows)

    def _graphs(self, graphs: Iterable[Graph]) -> None:
        rows = [(g.key, g.seq, g.latest_epoch, int(g.rotation_required)) for g in graphs]
        self._db.executemany("INSERT OR REPLACE INTO graphs VALUES (?,?,?,?)", rows)

    def _records(self, records: dict[tuple[str, str], Graph]) -> None:
        upserts, deletes = [], []
        for (key, record_id), graph in records.items():
            r = graph.records.get(record_id)
            if r is None:
                deletes.append((key, record_id))
            else:
                upserts.append((key, r.record_id, r.rev, r.n, r.c, r.e, r.k, r.sh, r.seq))
        self._db.executemany("DELETE FROM records WHERE graph=? AND record_id=?", deletes)
        self._db.executemany("INSERT OR REPLACE INTO records VALUES (?,?,?,?,?,?,?,?,?)", upserts)

    def _lists(self, appended: Iterable[tuple[Graph, str, int]]) -> None:
        """The last ``count`` items of each grown list, at their positions."""
        for graph, role, count in appended:
            items = getattr(graph, role)
            first = len(items) - count
            if role == "log":
                rows = [(graph.key, first + i, e.seq, e.record_id, e.rev)
                        for i, e in enumerate(items[first:])]  # fmt: skip
                self._db.executemany("INSERT INTO log VALUES (?,?,?,?,?)", rows)
            else:
                rows = [(graph.key, first + i, m) for i, m in enumerate(items[first:])]
                self._db.executemany("INSERT INTO pushers VALUES (?,?,?)", rows)

    def _wraps(self, epochs: dict, wraps: dict) -> None:
        db = self._db
        for (key, epoch), graph in epochs.items():
            holders = graph.wraps.get(epoch, {})
            db.execute("DELETE FROM wraps WHERE graph=? AND epoch=?", (key, epoch))
            rows = [(key, epoch, device, wrapped) for device, wrapped in holders.items()]
            db.executemany("INSERT INTO wraps VALUES (?,?,?,?)", rows)
        for (key, epoch, device), holders in wraps.items():
            if device in holders:
                db.execute(
                    "INSERT OR REPLACE INTO wraps VALUES (?,?,?,?)",
                    (key, epoch, device, holders[device]),
                )
            else:
                db.execute(
                    "DELETE FROM wraps WHERE graph=? AND epoch=? AND device_id=?",
                    (key, epoch, device),
                )

    def _blobs(self, blobs: dict[tuple[str, str], Graph]) -> None:
        """A blob's bytes are written once (an ID is immutable); receipts change."""
        db = self._db
        for (key, blob_id), graph in blobs.items():
            blob: Blob | None = graph.blobs.get(blob_id)
            if blob is None:
                db.execute("DELETE FROM blobs WHERE graph=? AND blob_id=?", (key, blob_id))
                db.execute("DELETE FROM blob_data WHERE graph=? AND blob_id=?", (key, blob_id))
                continue
            db.execute(
                "INSERT OR REPLACE INTO blobs VALUES (?,?,?,?,?,?)",
                (key, blob_id, blob.nonce, blob.policy, blob.expires_at,
                 json.dumps(list(blob.receipts))),
            )  # fmt: skip
            db.execute("INSERT OR IGNORE INTO blob_data VALUES (?,?,?)", (key, blob_id, blob.data))
